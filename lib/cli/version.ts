import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { VERSION_UNKNOWN } from './cli.messages';

/**
 * The package's version, read at run time from the `package.json` two levels above this
 * file (`dist/cli/` in the package, `lib/cli/` in the repository).
 */
export function packageVersion(directory: string = __dirname): string {
  try {
    const manifest: unknown = JSON.parse(readFileSync(join(directory, '..', '..', 'package.json'), 'utf8'));
    const version = typeof manifest === 'object' && manifest !== null ? (manifest as { version?: unknown }).version : undefined;
    return typeof version === 'string' ? version : VERSION_UNKNOWN();
  } catch {
    return VERSION_UNKNOWN();
  }
}

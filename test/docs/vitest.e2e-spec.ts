/**
 * The testing page's vitest spec runs under vitest itself (`vitest.config.mts`), as it would in a
 * Nest app tested with vitest; Jest runs the page's Jest spec (`app/invoices.service.spec.ts`).
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';

describe('the testing page with vitest', () => {
  it('runs its spec under vitest: both tests pass', () => {
    const testPath = expect.getState().testPath;
    if (!testPath) throw new Error('expect.getState().testPath is not set');
    const root = path.resolve(path.dirname(testPath), '..', '..');
    const run = spawnSync(
      process.execPath,
      [path.join(root, 'node_modules', 'vitest', 'vitest.mjs'), 'run', '--config', path.join(root, 'test', 'docs', 'vitest.config.mts')],
      { cwd: root, encoding: 'utf8', env: { ...process.env, NO_COLOR: '1', CI: '1' }, timeout: 120_000 },
    );
    const output = `${run.stdout}\n${run.stderr}`;
    expect({ status: run.status, output }).toMatchObject({ status: 0 });
    expect(output).toMatch(/Test Files\s+1 passed \(1\)/);
    expect(output).toMatch(/Tests\s+2 passed \(2\)/);
  }, 150_000);
});

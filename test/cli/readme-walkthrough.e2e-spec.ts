/**
 * The `dynamo-lock` walkthrough of docs/cli.md, run verbatim: its shell block is taken from the page
 * and run by bash, with `npx dynamo-lock` resolving to the built CLI and the scripts it names as
 * small stubs. The SDK's own `AWS_ENDPOINT_URL_DYNAMODB` points it at the test server, as the
 * README tells users of DynamoDB Local; nothing else is changed.
 */
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { LockManager } from '../../lib';
import { MemoryLogger } from '../support/lock-fixture';
import { createTestClient, deleteTable, describeEachServer } from '../support/servers';
import { killOnExit } from '../../tools/exit-guard.mjs';
import { builtCli, repoRoot } from './support/cli-process';

/** The first shell block of the command-line page (docs/cli.md). */
function walkthrough(): string {
  const readme = readFileSync(path.join(repoRoot(), 'docs', 'cli.md'), 'utf8');
  const section = readme.slice(readme.indexOf('# Command line: `dynamo-lock`'));
  const block = /```sh\n([\s\S]*?)```/.exec(section);
  if (!block) throw new Error('docs/cli.md: no ```sh block');
  return block[1];
}

describeEachServer('README walkthrough of dynamo-lock', (server) => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'dynamo-lock-walkthrough-'));
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    if (server.name === 'external') return;
    const client = createTestClient(server);
    await deleteTable(client, 'locks').catch(() => undefined);
    client.destroy();
  });

  // The walkthrough creates a table named "locks": never in a real AWS account.
  const runIt = server.name === 'external' ? it.skip : it;
  runIt(
    'runs every command as written, against the table the first one created',
    async () => {
      const bin = path.join(dir, 'bin');
      mkdirSync(bin);
      const script = (file: string, body: string) => {
        writeFileSync(file, `#!/bin/sh\n${body}\n`);
        chmodSync(file, 0o755);
      };
      script(path.join(bin, 'npx'), `[ "$1" = dynamo-lock ] || exit 99\nshift\nexec "${process.execPath}" "${builtCli()}" "$@"`);
      for (const step of ['deploy.sh', 'step-1.sh', 'step-2.sh']) script(path.join(dir, step), `echo "ran ${step} $*"`);

      const env: NodeJS.ProcessEnv = { ...process.env };
      for (const name of Object.keys(env)) if (/^(AWS_|DYNAMO_LOCK_|DYNAMODB_)/.test(name)) delete env[name];
      Object.assign(env, {
        PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}`,
        AWS_ENDPOINT_URL_DYNAMODB: server.endpoint,
        AWS_ACCESS_KEY_ID: 'local',
        AWS_SECRET_ACCESS_KEY: 'local',
      });
      // Its own process group, killed with everything it started if the test dies first.
      const child = spawn('bash', ['-c', `set -euo pipefail\n${walkthrough()}`], {
        cwd: dir,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
      const forget = killOnExit(() => {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const [code] = (await once(child, 'exit')) as [number | null];
      forget();
      if (code !== 0) throw new Error(`walkthrough exited ${code}\nstdout: ${stdout}\nstderr: ${stderr}`);

      expect(stdout).toContain('ran deploy.sh production');
      expect(stdout).toContain('ran step-1.sh');
      expect(stdout).toContain('ran step-2.sh');
      // `inspect deploy` ran while the script held the lease; `list --json` printed it as JSON.
      expect(stdout).toMatch(/deploy/);
      const json = stdout.slice(stdout.indexOf('['));
      expect(JSON.parse(json.slice(0, json.lastIndexOf(']') + 1))).toEqual([expect.objectContaining({ key: 'deploy' })]);
      // The trap released it at the end; the library sees the same table through the same variable.
      const previous = process.env.AWS_ENDPOINT_URL_DYNAMODB;
      process.env.AWS_ENDPOINT_URL_DYNAMODB = server.endpoint;
      const locks = new LockManager({
        tableName: 'locks',
        clientConfig: { region: 'eu-west-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } },
        logger: new MemoryLogger(),
      });
      try {
        expect(await locks.inspect('deploy')).toBeNull();
      } finally {
        await locks.close();
        if (previous === undefined) delete process.env.AWS_ENDPOINT_URL_DYNAMODB;
        else process.env.AWS_ENDPOINT_URL_DYNAMODB = previous;
      }
    },
    60_000,
  );
});

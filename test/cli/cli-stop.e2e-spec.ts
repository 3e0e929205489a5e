/**
 * The command line, when a waiting command is interrupted (issue 28, section 1): `dynamo-lock exec`
 * waiting behind a holder and stopped with Ctrl+C leaves the line before it exits, so once the
 * holder releases, `dynamo-lock acquire --no-wait` gets the lock at once (before, it failed "held
 * by another owner" for the abandoned ticket's claim lease, about 6 s). The BUILT CLI
 * (`dist/cli/main.js`; `npm run build` first) runs as a child process against the real servers.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { DynamoMutexStore } from '../../lib/store/mutex/mutex.dynamo-store';
import type { LockRecord } from '../../lib/store/mutex/mutex.record';
import { createLockTable, createTestClient, deleteTable, describeEachServer, uniqueTableName } from '../support/servers';
import { Cli, type CliResult } from './support/cli-process';

/** `expect` with the whole result in the failure message. */
function expectExit(result: CliResult, code: number): void {
  if (result.code !== code) {
    throw new Error(`expected exit ${code}, got ${result.code ?? result.signal}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`);
  }
}

describeEachServer('dynamo-lock CLI: an interrupted wait', (server) => {
  const tableName = uniqueTableName('cli-stop');
  const client = createTestClient(server);
  const store = new DynamoMutexStore(client, { tableName, ttlDays: 0 });
  const cli = new Cli(server, ['--table', tableName]);
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'dynamo-lock-cli-stop-'));
    await createLockTable(client, tableName);
  }, 30_000);

  afterAll(async () => {
    await deleteTable(client, tableName).catch(() => undefined);
    client.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Polls the item until `check` holds (10 s at most); returns the record that passed. */
  async function itemUntil(key: string, check: (record: LockRecord | undefined) => boolean, what: string): Promise<LockRecord> {
    const deadline = performance.now() + 10_000;
    for (;;) {
      const record = await store.read(key);
      if (check(record)) return record!;
      if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(record)}`);
      await sleep(25);
    }
  }

  it('exec waiting behind a holder, interrupted with SIGINT, leaves the line: after the release, acquire --no-wait gets the lock at once', async () => {
    const key = 'stop-exec';
    const held = await cli.run(['acquire', key, '--owner', 'holder']);
    expectExit(held, 0);
    const lease = held.stdout.trim();

    const marker = path.join(dir, 'exec.ran');
    const command = [process.execPath, '-e', `require('node:fs').writeFileSync(${JSON.stringify(marker)}, 'ran')`];
    const waiting = cli.start(['exec', key, '--wait', '60s', '--', ...command]);
    // Its ticket is in the item, behind the holder's: the wait has begun (its signal handlers too).
    const queued = await itemUntil(key, (r) => r?.head !== undefined && r.tail !== undefined && r.tail - r.head >= 2, 'a ticket');
    const ticket = queued.tail! - 1;
    waiting.process.kill('SIGINT');
    const interrupted = await waiting.result;
    expectExit(interrupted, 130);
    expect(interrupted.stderr).toContain(`dynamo-lock: interrupted by SIGINT while waiting for lock "${key}".`);
    expect(existsSync(marker)).toBe(false);
    // Before it exited, it marked its ticket as left.
    const afterExit = await store.read(key);

    expectExit(await cli.run(['release', key, lease]), 0);
    // One attempt: the release passed the ticket that left, so the lock is free now.
    const next = await cli.run(['acquire', key, '--no-wait', '--owner', 'next']);
    expectExit(next, 0);
    expect((await store.read(key))?.owner).toBe('next');
    expect(afterExit?.left).toEqual([ticket]);
    expectExit(await cli.run(['release', key, next.stdout.trim()]), 0);
  }, 60_000);
});

/**
 * The proof of fenced writes: holder A, in its own process, takes the lock (1 s lease), checks its
 * signal and is frozen (SIGSTOP) before its write reaches DynamoDB, past its lease; B takes over and
 * writes the item; A is resumed (SIGCONT) and its write goes out. With `transact` (DynamoDB Local)
 * and `fencedWrite` (every server) A's write never lands and A gets the named error. A plain
 * PutItem, the signal checked just the same, lands over B's write: why fencing exists.
 * Runs against `dist/` (`npm run build` first).
 */
import { type ChildProcess, fork } from 'node:child_process';
import path from 'node:path';
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { killOnExit } from '../../tools/exit-guard.mjs';
import { LockFixture } from '../support/lock-fixture';
import { describeEachServer } from '../support/servers';
import { createDataTable, newKey, readData } from './data-table';

interface Report {
  type: string;
  [field: string]: unknown;
}

/** Worker A and the reports it sent. */
function startWorker(config: Record<string, unknown>) {
  const script = path.join(path.dirname(expect.getState().testPath ?? ''), 'fence-worker.mjs');
  const child: ChildProcess = fork(script, [JSON.stringify(config)], { stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
  const unregister = killOnExit(() => child.kill('SIGKILL'));
  child.once('exit', unregister);
  const reports: Report[] = [];
  const waiters: (() => void)[] = [];
  let output = '';
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.on('message', (message) => {
    reports.push(message as Report);
    for (const wake of waiters.splice(0)) wake();
  });
  const next = (type: string, timeoutMs = 15_000): Promise<Report> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no '${type}' from A within ${timeoutMs} ms: ${output}`)), timeoutMs);
      const check = () => {
        const found = reports.find((report) => report.type === type);
        if (found) {
          clearTimeout(timer);
          resolve(found);
        } else waiters.push(check);
      };
      check();
    });
  return { child, next };
}

describeEachServer('a holder frozen past its lease', (server) => {
  const fixture = new LockFixture(server);
  let data: string;
  beforeAll(async () => {
    await fixture.setup();
    data = await createDataTable(fixture.client);
  });
  afterAll(() => fixture.close());

  const modes = server.name === 'dynalite' ? (['fencedWrite', 'plain'] as const) : (['transact', 'fencedWrite', 'plain'] as const);
  for (const mode of modes) {
    it(`${mode}: ${mode === 'plain' ? "A's stale write lands over B's (no fence)" : "A's write never lands, and A gets the named error"}`, async () => {
      const key = newKey(`frozen-${mode}`);
      const id = newKey('item');
      const a = startWorker({ mode, key, id, leaseMs: 1_000, endpoint: server.endpoint, table: fixture.tableName, dataTable: data });
      const token = Number((await a.next('acquired')).token);
      a.child.send({ cmd: 'write' });
      await a.next('about-to-write');
      a.child.kill('SIGSTOP');
      // B waits for A's lease to pass unrenewed, takes over and writes the item.
      const b = await fixture.manager({ ownerName: 'B' }).acquire(key, { wait: '15s', leaseDuration: '20s' });
      expect(b.fencingToken).toBeGreaterThan(token);
      const byB = { id: { S: id }, value: { S: 'by B' } };
      if (mode === 'transact') await b.transact([{ Put: { TableName: data, Item: byB } }]);
      else if (mode === 'fencedWrite') await b.fencedWrite({ Put: { TableName: data, Item: byB } });
      else await fixture.client.send(new PutItemCommand({ TableName: data, Item: byB }));
      a.child.kill('SIGCONT');
      a.child.send({ cmd: 'go' });
      const result = await a.next('result');
      const item = await readData(fixture.client, data, id);
      if (mode === 'plain') {
        expect(result).toMatchObject({ ok: true });
        expect(item?.value).toEqual({ S: 'by A' });
      } else {
        expect(item?.value).toEqual({ S: 'by B' });
        if (mode === 'transact') {
          expect(result).toMatchObject({ ok: false, name: 'LockLostError' });
          expect(['expired', 'taken']).toContain(result.reason);
        } else expect(result).toMatchObject({ ok: false, name: 'LockFencedError', newerToken: b.fencingToken });
      }
      await b.release();
      await new Promise((resolve) => (a.child.exitCode === null ? a.child.once('exit', resolve) : resolve(undefined)));
    }, 30_000);
  }
});

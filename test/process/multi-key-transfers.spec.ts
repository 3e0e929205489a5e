/**
 * Multi-key locks across OS processes, against the real servers: 4 processes (`transfer-worker.mjs`,
 * on the built `dist/`) move money between 4 accounts kept in files, each transfer locking two or
 * three accounts given in a random order, for `DURATION_MS`. Proof of the promise: no
 * acquire ever times out (no deadlock: every process finishes), the total is conserved, no two
 * processes are ever inside one account at once, and each account sees its fencing tokens rise.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, expect, it } from '@jest/globals';
import { killOnExit } from '../../tools/exit-guard.mjs';
import { LockFixture } from '../support/lock-fixture';
import { describeEachServer, type TestServer } from '../support/servers';

const ACCOUNTS = 4;
const PROCESSES = 4;
// The issue asks for 30 s: MULTI_KEY_TRANSFER_MS=30000 runs it (measured: 32-33 s per server, 66 s
// for this file on both servers, against about 46 s at 20 s). The default stays 20 s because the
// 30 s run adds about 20 s to CI (10 s per server, run one after the other), over the ~15 s allowed.
const DURATION_MS = Number(process.env.MULTI_KEY_TRANSFER_MS ?? 20_000);
const OPENING = 1_000;

interface Report {
  type: string;
  owner: string;
  message?: string;
  transfers?: number;
  overlaps?: number;
  staleTokens?: number;
}

/** One worker process and its reports. */
class Worker {
  readonly reports: Report[] = [];
  readonly exited: Promise<number | null>;

  constructor(readonly child: ChildProcess) {
    const unregister = killOnExit(() => child.kill('SIGKILL'));
    child.on('message', (message) => this.reports.push(message as Report));
    this.exited = new Promise((resolve) =>
      child.once('close', (code) => {
        unregister();
        resolve(code);
      }),
    );
  }

  /** The first report of `type`; rejects on an `error` report, an exit without it, or after `timeoutMs`. */
  async next(type: string, timeoutMs: number): Promise<Report> {
    const until = performance.now() + timeoutMs;
    for (;;) {
      const found = this.reports.find((r) => r.type === type);
      if (found) return found;
      const failed = this.reports.find((r) => r.type === 'error');
      if (failed) throw new Error(`${failed.owner}: ${failed.message}`);
      if (performance.now() > until) throw new Error(`no '${type}' within ${timeoutMs} ms: ${JSON.stringify(this.reports)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

const workers = new Set<Worker>();

function start(server: TestServer, table: string, config: Record<string, unknown>): Worker {
  const script = path.join(path.dirname(expect.getState().testPath!), 'transfer-worker.mjs');
  const child = fork(script, [JSON.stringify({ ...config, endpoint: server.endpoint, table })], {
    env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
  });
  const worker = new Worker(child);
  workers.add(worker);
  return worker;
}

afterEach(async () => {
  for (const worker of workers) worker.child.kill('SIGKILL');
  await Promise.all([...workers].map((w) => w.exited));
  workers.clear();
});

describeEachServer('multi-key transfers across processes', (server) => {
  let fixture: LockFixture;
  let dataDir: string;
  beforeAll(async () => {
    fixture = await new LockFixture(server).setup();
    dataDir = mkdtempSync(path.join(tmpdir(), 'transfers-'));
  });
  afterAll(async () => {
    await fixture.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it(
    `${PROCESSES} processes transfer between ${ACCOUNTS} accounts in random key orders: no deadlock, balances conserved, no overlap per account`,
    async () => {
      for (let i = 0; i < ACCOUNTS; i++)
        writeFileSync(path.join(dataDir, `account-${i}.json`), JSON.stringify({ balance: OPENING, token: 0 }));
      const config = { accounts: ACCOUNTS, durationMs: DURATION_MS, dataDir, leaseMs: 10_000, waitForGo: true };
      const all = Array.from({ length: PROCESSES }, (_, i) => start(server, fixture.tableName, { ...config, owner: `p${i}` }));
      await Promise.all(all.map((w) => w.next('ready', 60_000)));
      for (const worker of all) worker.child.send('go');
      // A deadlock would stop every worker until its 60 s wait ran out (an `error` report).
      const done = await Promise.all(all.map((w) => w.next('done', DURATION_MS + 75_000)));
      const balances = Array.from(
        { length: ACCOUNTS },
        (_, i) => JSON.parse(readFileSync(path.join(dataDir, `account-${i}.json`), 'utf8')).balance as number,
      );
      expect(balances.reduce((a, b) => a + b, 0)).toBe(ACCOUNTS * OPENING);
      expect(done.map((d) => d.overlaps)).toEqual(Array(PROCESSES).fill(0));
      expect(done.map((d) => d.staleTokens)).toEqual(Array(PROCESSES).fill(0));
      // Every process made progress (not one process doing all the work while others starve).
      for (const d of done) expect(d.transfers).toBeGreaterThan(5);
    },
    DURATION_MS + 150_000,
  );
});

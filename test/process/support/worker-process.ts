/**
 * A worker process of the multi-process specs (a script on the built `dist/`, forked with one JSON
 * argument), and what it reports over IPC: `{ type, owner, ... }`, an `error` report ending its
 * wait. Every worker started is SIGKILLed after each test, and when the test process exits.
 */
import { type ChildProcess, fork } from 'node:child_process';
import path from 'node:path';
import { afterEach, expect } from '@jest/globals';
import { killOnExit } from '../../../tools/exit-guard.mjs';
import type { TestServer } from '../../support/servers';

/** What every report carries; `receivedAt` is this process's monotonic time on receipt. */
export interface WorkerReport {
  type: string;
  owner: string;
  message?: string;
  receivedAt: number;
}

/** Shifts a worker's wall clock (`Date.now()`, `new Date()`) by `CLOCK_SKEW_MS`; monotonic clocks are untouched. */
const SKEW_PRELOAD = path.resolve('test/support/clock-skew.cjs');

/** One worker process and what it reported. */
export class WorkerProcess<R extends WorkerReport> {
  readonly reports: R[] = [];
  readonly exited: Promise<number | null>;
  private readonly waiting = new Set<() => void>();

  constructor(readonly child: ChildProcess) {
    const unregister = killOnExit(() => child.kill('SIGKILL'));
    child.on('message', (message) => {
      this.reports.push({ ...(message as R), receivedAt: performance.now() });
      for (const wake of [...this.waiting]) wake();
    });
    this.exited = new Promise((resolve) =>
      child.once('close', (code) => {
        unregister();
        for (const wake of [...this.waiting]) wake();
        resolve(code);
      }),
    );
  }

  /** The first report of `type`, now or later; rejects on an `error` report or after `timeoutMs`. */
  next(type: string, timeoutMs: number): Promise<R> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => done(() => reject(new Error(`no '${type}' within ${timeoutMs} ms: ${JSON.stringify(this.reports)}`))),
        timeoutMs,
      );
      const done = (outcome: () => void) => {
        clearTimeout(timer);
        this.waiting.delete(check);
        outcome();
      };
      const check = () => {
        const found = this.reports.find((r) => r.type === type);
        const failed = this.reports.find((r) => r.type === 'error');
        if (found) done(() => resolve(found));
        else if (failed) done(() => reject(new Error(`${failed.owner}: ${failed.message}`)));
      };
      this.waiting.add(check);
      check();
    });
  }
}

/**
 * The workers of one spec file, running `script` (next to the spec): `start()` forks one against
 * a server's table, with its wall clock shifted by `skewMs`; each test's workers are killed after it.
 */
export function workerPool<R extends WorkerReport>(script: string) {
  const workers = new Set<WorkerProcess<R>>();
  afterEach(async () => {
    for (const worker of workers) worker.child.kill('SIGKILL');
    await Promise.all([...workers].map((w) => w.exited));
    workers.clear();
  });
  return {
    start(server: TestServer, table: string, config: Record<string, unknown>, skewMs = 0): WorkerProcess<R> {
      const file = path.join(path.dirname(expect.getState().testPath!), script);
      const child = fork(file, [JSON.stringify({ ...config, endpoint: server.endpoint, table })], {
        env: { ...process.env, CLOCK_SKEW_MS: String(skewMs), AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
        execArgv: ['--require', SKEW_PRELOAD],
        stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
      });
      const worker = new WorkerProcess<R>(child);
      workers.add(worker);
      return worker;
    },
  };
}

/**
 * App instances as OS processes, each running test/nest/fixtures/cron-fires-app.mjs (scheduled jobs
 * guarded by `@Cron` + `@WithLock(..., { onBusy: 'skip' })`), perhaps with a skewed wall clock:
 * what they run, the `fire` events they emit and what they log, as one test sees it.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { once } from 'node:events';
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** A job of the fixture app. */
export interface CronJob {
  name: string;
  cron: string;
  timeZone?: string;
  catchUp?: 'none' | 'last';
  /** How long each run takes, in ms. */
  workMs?: number;
}

/** One run of a job, by the wall clock of the instance that ran it (skewed or not). */
export interface JobRun {
  instance: string;
  job: string;
  at: number;
}

/** A `fire` lock event, its scheduled time in epoch ms. */
export interface FireEvent {
  instance: string;
  fire: { key: string; scheduledAt: number; outcome: string; reason?: string; by?: string; count?: number; result?: string };
}

/** One instance process. */
export interface CronInstance {
  readonly name: string;
  readonly child: ChildProcessWithoutNullStreams;
  /** Resolves once the app is up (its jobs scheduled). */
  readonly ready: Promise<void>;
}

/** Every instance of one test, and what they printed. */
export class CronInstances {
  readonly runs: JobRun[] = [];
  readonly fires: FireEvent[] = [];
  /** Log lines of the library (any level) and anything else on stderr. */
  readonly logs: { instance: string; level: string; m: string }[] = [];
  private readonly instances = new Map<string, CronInstance>();

  constructor(
    private readonly endpoint: string,
    private readonly table: string,
  ) {}

  /** Starts an instance whose wall clock is `skewMs` off (ahead when positive). */
  start(name: string, jobs: CronJob[], options: { skewMs?: number; leaseMs?: number } = {}): CronInstance {
    const script = resolve('test/nest/fixtures/cron-fires-app.mjs');
    const preload = resolve('test/support/clock-skew.cjs');
    const child = spawn(process.execPath, ['--require', preload, script], {
      env: {
        ...process.env,
        INSTANCE: name,
        ENDPOINT: this.endpoint,
        TABLE: this.table,
        JOBS: JSON.stringify(jobs),
        CLOCK_SKEW_MS: String(options.skewMs ?? 0),
        ...(options.leaseMs === undefined ? {} : { LEASE: String(options.leaseMs) }),
      },
    });
    let up: () => void = () => undefined;
    const ready = new Promise<void>((r) => (up = r));
    let buffered = '';
    child.stdout.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) {
        const event = JSON.parse(line) as Partial<JobRun & FireEvent & { ready: boolean }>;
        if (event.ready) up();
        else if (event.fire) this.fires.push(event as FireEvent);
        else if (event.job !== undefined) this.runs.push(event as JobRun);
      }
    });
    child.stderr.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n').filter(Boolean)) {
        try {
          this.logs.push({ instance: name, ...(JSON.parse(line) as { level: string; m: string }) });
        } catch {
          this.logs.push({ instance: name, level: 'stderr', m: line });
        }
      }
    });
    const instance = { name, child, ready };
    this.instances.set(name, instance);
    return instance;
  }

  /** Waits until every instance started so far is up (at most `timeoutMs`: a loaded machine starts Nest slowly). */
  async allReady(timeoutMs = 30_000): Promise<void> {
    const all = Promise.all([...this.instances.values()].map((i) => i.ready));
    const timedOut = sleep(timeoutMs, 'timeout' as const, { ref: false });
    if ((await Promise.race([all.then(() => 'up' as const), timedOut])) === 'timeout') throw new Error('instances did not start in time');
  }

  /** Waits until `predicate` holds on what was printed, or `timeoutMs` passes; returns whether it held. */
  async until(predicate: () => boolean, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (predicate()) return true;
      await sleep(50);
    }
    return predicate();
  }

  /** Stops an instance with `signal` and waits for its exit. */
  async stop(name: string, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const instance = this.instances.get(name);
    if (!instance) return;
    const { child } = instance;
    if (child.exitCode === null && child.signalCode === null) {
      const exited = once(child, 'exit');
      child.kill(signal);
      await exited;
    }
  }

  /** Stops every instance (SIGKILL: the test is over). */
  async stopAll(): Promise<void> {
    await Promise.all([...this.instances.keys()].map((name) => this.stop(name, 'SIGKILL')));
  }

  /** Lines of the library at warn or error level, less the `cron` package's own late-timer warning. */
  problems(): string[] {
    return this.logs
      .filter((l) => l.level === 'warn' || l.level === 'error' || l.level === 'stderr')
      .filter((l) => !l.m.includes('[Cron] Missed execution deadline'))
      .map((l) => `${l.instance}: ${l.m}`);
  }
}

/** The scheduled fire a run belongs to: the multiple of `periodMs` nearest the clock of the instance that ran it. */
export function fireOf(run: JobRun, periodMs: number): number {
  return Math.round(run.at / periodMs) * periodMs;
}

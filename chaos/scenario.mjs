// @ts-check
/**
 * One chaos run against one DynamoDB-compatible server: `runChaos(options)` → report.
 *
 * Phases:
 * 1. set-up: a fresh table, the fault proxy (child process), worker processes (`worker.mjs`,
 *    using `dist/`), some with their wall clock shifted ±10 minutes;
 * 2. chaos: faults on; the harness SIGKILLs workers (and respawns them) and SIGSTOPs others for
 *    longer than the lease, preferring ones inside their critical section;
 * 3. wind-down: pauses end, faults stop, the workers run fault-free for a while, then quiesce;
 *    every lock item naming a live worker that no longer holds it is checked for renewals;
 * 4. liveness: every key is taken by a worker that is then SIGKILLed or SIGSTOPped; a fresh
 *    client must acquire every key within one lease (+ poll); the stopped holders resume and
 *    must find their signal aborted;
 * 5. shutdown: workers close; no lock may be left held.
 *
 * Everything the report calls a violation is a check that can fail; see `VIOLATIONS`.
 *
 * The parts: `protocol.mjs` (the messages between harness, workers and fault proxy),
 * `supervisor.mjs` (the child processes), `checks.mjs`, `self-deadlock-checks.mjs` and
 * `final-checks.mjs` (the invariants), `phases.mjs` (the steps above), `report.mjs` (the counts
 * and the report). This file holds the options and one run's shared state.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Referee } from './checks.mjs';
import { runPhases } from './phases.mjs';
import { buildReport, Tally } from './report.mjs';
import { seededRandom } from './support/fault-proxy.mjs';
import { DataLog } from './support/data-resource.mjs';
import { deleteTable, directClient } from './support/direct-table.mjs';
import { Supervisor } from './supervisor.mjs';

export { KNOWN_DEFECTS, VIOLATIONS } from './checks.mjs';

const TEN_MINUTES = 10 * 60_000;

/** Presets: `default` (a few minutes with both servers) and `short` (CI). */
export const PRESETS = {
  default: {
    durationMs: 90_000,
    workers: 6,
    tasks: 2,
    keys: 3,
    leaseMs: 2_000,
    killEveryMs: 6_000,
    pauseEveryMs: 4_500,
    maxStopped: 2,
  },
  short: {
    durationMs: 30_000,
    workers: 5,
    tasks: 2,
    keys: 3,
    leaseMs: 2_000,
    killEveryMs: 4_000,
    pauseEveryMs: 3_500,
    maxStopped: 1,
  },
};

/** Fault rates per request (fractions); `latency` is drawn independently of the rest. */
export const DEFAULT_RATES = {
  latency: 0.2,
  delayed: 0.01,
  dropped: 0.03,
  reset: 0.02,
  provisionedThroughput: 0.015,
  throttling: 0.015,
  http500: 0.02,
  http503: 0.015,
};

/**
 * What `runChaos` takes: a preset and overrides, the server, and where progress lines go.
 * @typedef {object} ChaosInput
 * @property {string} endpoint the server under test
 * @property {string} [serverName]
 * @property {'default' | 'short'} [preset]
 * @property {number} [durationMs]
 * @property {number} [workers]
 * @property {number} [keys]
 * @property {number} [leaseMs]
 * @property {number} [seed]
 * @property {boolean} [strict] known defects fail the run too
 * @property {import('./protocol.mjs').FaultRates} [rates]
 * @property {number[]} [skews] clock skew per worker slot (ms)
 * @property {number} [pollSlackMs]
 * @property {(line: string) => void} [log]
 */

/**
 * The options of a run: the preset, the input's overrides, and what follows from them.
 * @typedef {typeof PRESETS.default & Omit<ChaosInput, 'preset'> & {
 *   seed: number, rates: import('./protocol.mjs').FaultRates, heartbeatMs: number, marginMs: number, waitMs: number,
 *   pollSlackMs: number, skews: number[], serverName: string }} ChaosOptions
 */

/**
 * @param {ChaosInput} input
 * @returns {ChaosOptions}
 */
function resolveOptions(input) {
  const preset = PRESETS[input.preset ?? 'default'];
  if (!preset) throw new Error(`unknown preset ${input.preset}`);
  /** @type {any} */
  const o = { ...preset, ...Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)) };
  o.seed ??= Math.floor(Math.random() * 2 ** 31);
  o.rates = { ...DEFAULT_RATES, ...(input.rates ?? {}) };
  o.heartbeatMs = Math.floor(o.leaseMs / 3);
  o.marginMs = Math.min(1_000, Math.ceil(o.leaseMs * 0.1));
  o.waitMs = 3 * o.leaseMs;
  o.pollSlackMs ??= 750;
  o.skews ??= o.workers >= 4 ? [TEN_MINUTES, -TEN_MINUTES] : [TEN_MINUTES];
  o.serverName ??= 'server';
  return o;
}

/**
 * Runs the chaos scenario once against `input.endpoint`; resolves with its report.
 * @param {ChaosInput} input
 */
export async function runChaos(input) {
  const run = new ChaosRun(resolveOptions(input));
  try {
    await runPhases(run);
    return await buildReport(run);
  } finally {
    await run.cleanup();
  }
}

/** One run's shared state: its options and table, the collaborators, and what the phases found. */
export class ChaosRun {
  /** @param {ChaosOptions} o */
  constructor(o) {
    this.o = o;
    this.log = o.log ?? (() => undefined);
    this.random = seededRandom(o.seed);
    this.t0 = performance.now();
    this.keys = Array.from({ length: o.keys }, (_, i) => `chaos-key-${i}`);
    this.table = `chaos-${Date.now().toString(36)}-${Math.floor(Math.random() * 1e9).toString(36)}`;
    /** The table of the fenced data items (`support/data-resource.mjs`). */
    this.dataTable = `${this.table}-data`;
    /** The workers' data writes through the fence, as they reported them. */
    this.data = new DataLog(this);
    /** @type {Awaited<ReturnType<typeof import('./support/data-resource.mjs').checkDataItems>> | undefined} what the data items showed */
    this.dataItems = undefined;
    /** Where the workers' marker files are. */
    this.dir = mkdtempSync(path.join(tmpdir(), 'dynamo-lock-chaos-'));
    /** A client of the server itself, past the fault proxy. */
    this.direct = directClient(o.endpoint);
    /** @type {'setup' | 'chaos' | 'wind-down' | 'quiesce' | 'liveness' | 'shutdown'} */
    this.phase = 'setup';
    /** @type {Record<string, number>} */
    this.timings = {};
    this.tally = new Tally(this.t0);
    this.supervisor = new Supervisor(this, {
      onMessage: (w, m) => this.referee.onMessage(w, m),
      onExit: (w) => this.referee.onWorkerExit(w),
    });
    this.referee = new Referee(this);
    /** @type {import('../dist/index.js').LockManager} the harness's own view of the locks (`list()`), set up first */
    this.inspector = /** @type {any} */ (undefined);
    /** @type {{ stop(): Promise<void> } | undefined} */
    this.monitor = undefined;
    /** @type {ReturnType<typeof import('./liveness-trail.mjs').startLivenessTrail> | undefined} the liveness phase's record of each key */
    this.livenessTrail = undefined;
    /** @type {import('./protocol.mjs').ProxyStats | undefined} */
    this.proxyStats = undefined;
    /** @type {Record<string, unknown> | undefined} the slowest recognition of an own lock */
    this.maxRecognition = undefined;
    /** @type {{ boundMs: number, perKeyMs: Record<string, number | null>, maxMs?: number, staleWritesRejected?: number, staleWritesExpected?: number } | undefined} */
    this.liveness = undefined;
    /** @type {{ killed: number, stopped: number } | undefined} */
    this.livenessCrashes = undefined;
  }

  /** Kills what is left, deletes the table and the marker directory. */
  async cleanup() {
    this.supervisor.killWorkers();
    await this.monitor?.stop().catch(() => undefined);
    await this.livenessTrail?.stop().catch(() => undefined);
    await this.supervisor.stopProxy();
    await deleteTable(this.direct, this.table).catch(() => undefined);
    await deleteTable(this.direct, this.dataTable).catch(() => undefined);
    this.direct.destroy();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

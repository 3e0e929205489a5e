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
 */
import { fork } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { GetItemCommand, ScanCommand } from '@aws-sdk/client-dynamodb';
import { LockManager } from '../dist/index.js';
import { ATTR } from '../dist/store/lock-record.js';
import { FAULT_KINDS, noFaults, seededRandom } from './support/fault-proxy.mjs';
import { FencedResource, OverlapRecorder } from './support/resource.mjs';
import { createTable, deleteTable, directClient, guard } from './support/servers.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const WORKER = path.join(here, 'worker.mjs');
const PROXY = path.join(here, 'support', 'fault-proxy.mjs');
const SKEW_PRELOAD = path.join(here, '..', 'test', 'support', 'clock-skew.cjs');

const TEN_MINUTES = 10 * 60_000;
/** A check-to-send gap above this (ms, on the worker's monotonic clock) means a pause fell in between. */
const GAP_MS = 100;
/** After an answer showed a worker its own lock, its acquisition must resolve within this (IPC and event-loop slack). */
const RECOGNITION_MS = 1_000;

/** Every violation the run can report; each must be zero. */
export const VIOLATIONS = {
  outOfOrderWrites: 'writes accepted out of token order',
  duplicateTokens: 'one fencing token used by two holders',
  overlapsBetweenValidHolders: 'overlaps between holders whose lock was valid',
  falseSuccesses: 'false successes (held lock not the holder at the server/resource)',
  writesAfterPause: 'checked writes after a pause longer than the lease',
  writesAfterAbort: 'checked writes after the signal aborted',
  signalNotAbortedAfterPause: 'signal still valid after a pause longer than the lease',
  selfDeadlocks: 'self-deadlocks (own lock not recognised, or kept alive unheld)',
  ownLockWaits:
    "self-deadlocks on the process's own orphaned lock: an abandoned waiter promoted, or a failed release (gave up waiting on it)",
  ownExpiredLockWaits: "self-deadlocks on the process's own lease that ran out locally (gave up waiting on it)",
  livenessExceeded: 'keys not acquirable within one lease (+ poll) after faults stopped',
  earlyTakeovers: 'locks of killed/stopped holders taken over sooner than one lease',
  staleWritesAccepted: 'stale writes of a resumed holder accepted after a newer holder wrote',
  locksLeftHeld: 'locks left held after everyone closed',
  leakedLeases: 'leases a manager kept after all its tasks ended',
  unexpectedErrors: 'unexpected errors (neither lock errors nor transient AWS errors)',
  workerCrashes: 'worker crashes',
  skewNotApplied: 'clock skew not in force in a skewed worker',
  skewStarved: 'skewed workers starved (acquired far less than others)',
  harnessErrors: 'harness errors',
};

/**
 * Violations the engine is known to have, each reproduced deterministically by a spec in
 * `test/chaos/`: counted and printed, but they fail a run only with `strict`. Remove an entry once
 * its reproduction spec fails (the defect is fixed).
 */
export const KNOWN_DEFECTS = {};

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

function resolveOptions(input) {
  const preset = PRESETS[input.preset ?? 'default'];
  if (!preset) throw new Error(`unknown preset ${input.preset}`);
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

export async function runChaos(input) {
  const run = new ChaosRun(resolveOptions(input));
  try {
    return await run.run();
  } finally {
    await run.cleanup();
  }
}

class ChaosRun {
  constructor(o) {
    this.o = o;
    this.log = o.log ?? (() => undefined);
    this.random = seededRandom(o.seed);
    this.t0 = performance.now();
    this.keys = Array.from({ length: o.keys }, (_, i) => `chaos-key-${i}`);
    this.table = `chaos-${Date.now().toString(36)}-${Math.floor(Math.random() * 1e9).toString(36)}`;
    this.dir = mkdtempSync(path.join(tmpdir(), 'dynamo-lock-chaos-'));
    this.direct = directClient(o.endpoint);
    this.workers = new Map();
    this.slots = [];
    this.leases = new Map();
    this.attempts = new Map();
    this.occupancy = new Map(this.keys.map((key) => [key, new Set()]));
    this.resource = new FencedResource();
    this.overlaps = new OverlapRecorder({
      gapMs: GAP_MS,
      pausedDuring: (owner, from, to) => this.pausedDuring(owner, from, to) !== undefined,
      isDead: (owner) => this.workers.get(owner)?.alive === false,
    });
    this.violations = Object.fromEntries(Object.keys(VIOLATIONS).map((name) => [name, 0]));
    this.examples = {};
    this.notes = {};
    this.counts = {
      acquireAttempts: 0,
      acquisitions: 0,
      outcomes: {},
      kills: 0,
      respawns: 0,
      pauses: 0,
      pausesOfHolders: 0,
      pauseChecks: 0,
      pauseChecksAborted: 0,
      fencingRejections: 0,
      fencingRejectionsUnchecked: 0,
      fencingRejectionsAfterPause: 0,
      groundTruthChecks: 0,
      groundTruthInconclusive: 0,
      groundTruthExcused: 0,
      lostBeforeEnter: 0,
      locksLost: {},
      releases: 0,
      releasesNotHeld: 0,
      releaseErrors: 0,
      gaveUpHolding: 0,
      gaveUpCleaned: 0,
      gaveUpOrphaned: 0,
      staleOwnLeftovers: 0,
      maxRecognitionMs: 0,
      monitorReads: 0,
      longestVacantWaitMs: 0,
      bySlot: {},
    };
    this.attemptTokens = new Map();
    this.ownTokenCases = [];
    /** Leases whose release() returned (true or false), by leaseId. */
    this.released = new Set();
    this.releasedAt = new Map();
    /** Leases whose signal had aborted before their section began, with when the harness heard. */
    this.lostBeforeEnter = new Map();
    this.orphanSeenAt = new Map();
    /** Attempts seen holding the lock after they had given up (orphans). */
    this.orphans = new Set();
    this.keyState = new Map(this.keys.map((key) => [key, { vacatedAt: 0 }]));
    this.timers = new Set();
    this.pauseTimers = new Set();
    this.respawns = new Set();
    this.phase = 'setup';
    this.timings = {};
  }

  now() {
    return performance.now();
  }

  /** A waiter that had given up (or whose process died) seen holding the lock: promoted after it left. */
  noteOrphan(attemptId, how) {
    if (this.orphans.has(attemptId)) return;
    this.orphans.add(attemptId);
    this.orphanSeenAt.set(attemptId, this.now());
    const attempt = this.attempts.get(attemptId);
    this.note('orphanPromotions', {
      attemptId,
      how,
      outcome: attempt?.outcome,
      endedMsAgo: attempt?.endAt === undefined ? null : Math.round(this.now() - attempt.endAt),
    });
  }

  /** Something worth knowing that is not a violation, with up to five examples. */
  note(name, detail) {
    const note = (this.notes[name] ??= { count: 0, examples: [] });
    note.count++;
    if (note.examples.length < 5) note.examples.push({ at: Math.round(this.now() - this.t0), ...detail });
  }

  /** Counts a violation; keeps up to five examples (the object itself, so it can be completed later). */
  violation(name, detail) {
    this.violations[name]++;
    const list = (this.examples[name] ??= []);
    const example = Object.assign(detail, { at: detail.at ?? Math.round(this.now() - this.t0) });
    if (list.length < 5) list.push(example);
    return example;
  }

  // ---- the run ----

  async run() {
    const o = this.o;
    this.log(
      `[chaos] ${o.serverName}: table ${this.table}, ${o.workers} workers × ${o.tasks} tasks on ${o.keys} keys, lease ${o.leaseMs} ms, ${Math.round(o.durationMs / 1000)} s of faults, seed ${o.seed}`,
    );
    await createTable(this.direct, this.table);
    this.inspector = new LockManager({
      tableName: this.table,
      client: this.direct,
      verifyTable: false,
      ownerName: 'chaos-inspector',
      logger: silentLogger(),
    });
    await this.startProxy();
    for (let slot = 0; slot < o.workers; slot++) this.slots.push({ slot, gen: 0, skewMs: o.skews[slot] ?? 0, sdk: sdkVariant(slot) });
    const started = this.slots.map((slot) => this.spawn(slot, false));
    await Promise.all(started.map((w) => w.ready));
    this.timings.setupMs = this.now() - this.t0;

    // ---- chaos ----
    this.phase = 'chaos';
    await this.proxyCall({ cmd: 'set', rates: o.rates, timing: { delayMinMs: 1.2 * o.leaseMs, delayMaxMs: 1.8 * o.leaseMs } });
    this.monitor = this.startMonitor();
    for (const w of started) w.child.send({ cmd: 'go' });
    const chaosStart = this.now();
    await this.chaosPhase(chaosStart + o.durationMs);
    this.timings.chaosMs = this.now() - chaosStart;

    // ---- wind-down ----
    this.phase = 'wind-down';
    const windStart = this.now();
    await Promise.all([...this.pauseTimers].map((t) => t.done));
    await this.proxyCall({ cmd: 'set', rates: noFaults() });
    this.faultsStoppedAt = this.now();
    await Promise.all([...this.respawns]);
    await sleep(2 * o.leaseMs);
    this.phase = 'quiesce';
    await this.quiesceAll();
    await this.inspectLeftovers();
    this.timings.windDownMs = this.now() - windStart;

    // ---- liveness ----
    this.phase = 'liveness';
    const liveStart = this.now();
    await this.livenessPhase();
    this.timings.livenessMs = this.now() - liveStart;

    // ---- shutdown ----
    this.phase = 'shutdown';
    await this.closeAll();
    await this.monitor.stop();
    await this.finalChecks();
    this.timings.totalMs = this.now() - this.t0;
    return this.report();
  }

  async chaosPhase(end) {
    const o = this.o;
    const jittered = (ms) => ms * (0.6 + 0.8 * this.random());
    let nextKill = this.now() + jittered(o.killEveryMs);
    let nextPause = this.now() + jittered(o.pauseEveryMs) / 2;
    while (this.now() < end) {
      await sleep(25);
      if (this.now() >= nextKill) {
        this.killOne();
        nextKill = this.now() + jittered(o.killEveryMs);
      }
      if (this.now() >= nextPause) {
        if (this.pauseOne()) nextPause = this.now() + jittered(o.pauseEveryMs);
        else nextPause = this.now() + 200;
      }
    }
  }

  // ---- workers ----

  spawn(slot, autoGo) {
    const o = this.o;
    const owner = `w${slot.slot}g${slot.gen}`;
    const config = {
      owner,
      endpoint: this.proxyEndpoint,
      table: this.table,
      keys: this.keys,
      leaseMs: o.leaseMs,
      waitMs: o.waitMs,
      tasks: o.tasks,
      holdMinMs: 100,
      holdMaxMs: 500,
      maxWrites: 3,
      uncheckedRate: 0.3,
      idleMaxMs: 150,
      markerDir: this.dir,
      sdk: slot.sdk,
      autoGo,
    };
    const execArgv = slot.skewMs === 0 ? [] : ['--require', SKEW_PRELOAD];
    const child = fork(WORKER, [JSON.stringify(config)], {
      execArgv,
      env: { ...process.env, CLOCK_SKEW_MS: String(slot.skewMs), AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    // SIGKILL also ends a stopped process, which would not notice its parent is gone.
    const forget = guard(() => child.kill('SIGKILL'));
    child.once('exit', forget);
    const w = {
      owner,
      slot: slot.slot,
      skewMs: slot.skewMs,
      child,
      alive: true,
      stopped: false,
      stops: [],
      output: '',
      closed: false,
      killedByHarness: false,
    };
    let readyResolve;
    w.ready = new Promise((resolve) => (readyResolve = resolve));
    w.readyResolve = readyResolve;
    w.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    const collect = (chunk) => (w.output = (w.output + chunk).slice(-4_000));
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    child.on('message', (message) => this.onMessage(w, message));
    child.once('exit', (code, signal) => this.onExit(w, code, signal));
    child.on('error', () => undefined);
    this.workers.set(owner, w);
    (this.counts.bySlot[slot.slot] ??= { skewMs: slot.skewMs, acquisitions: 0, incarnations: 0 }).incarnations++;
    return w;
  }

  liveWorkers() {
    return [...this.workers.values()].filter((w) => w.alive && !w.killedByHarness && !w.pseudo);
  }

  holdingLeases(w) {
    return [...this.leases.values()].filter((lease) => lease.owner === w.owner && lease.state === 'in');
  }

  pick(list) {
    return list[Math.floor(this.random() * list.length)];
  }

  killOne() {
    const candidates = this.liveWorkers().filter((w) => !w.stopped && w.isReady);
    if (candidates.length === 0) return;
    const holders = candidates.filter((w) => this.holdingLeases(w).length > 0);
    const w = holders.length > 0 && this.random() < 0.6 ? this.pick(holders) : this.pick(candidates);
    this.kill(w);
    this.counts.kills++;
    const slot = this.slots[w.slot];
    const respawn = (async () => {
      await sleep(200 + 600 * this.random());
      if (this.phase !== 'chaos' && this.phase !== 'wind-down') return;
      slot.gen++;
      this.counts.respawns++;
      const next = this.spawn(slot, true);
      await Promise.race([next.ready, next.exited]);
    })();
    this.respawns.add(respawn);
    void respawn.finally(() => this.respawns.delete(respawn));
  }

  kill(w) {
    w.killedByHarness = true;
    try {
      w.child.kill('SIGKILL');
    } catch {
      // gone already
    }
  }

  pauseOne() {
    const o = this.o;
    const stopped = this.liveWorkers().filter((w) => w.stopped).length;
    if (stopped >= o.maxStopped) return false;
    const candidates = this.liveWorkers().filter((w) => !w.stopped && w.isReady);
    if (candidates.length <= 1) return false;
    const holders = candidates.filter((w) => this.holdingLeases(w).length > 0);
    if (holders.length === 0 && this.random() < 0.8) return false; // try again soon, to catch a holder
    const w = holders.length > 0 ? this.pick(holders) : this.pick(candidates);
    const ms = o.leaseMs * (1.3 + 0.5 * this.random());
    this.pause(w, ms, holders.includes(w));
    return true;
  }

  /** SIGSTOP for `ms`, then SIGCONT. */
  pause(w, ms, holding) {
    const stop = { stopAt: this.now(), contAt: undefined, ms, holding };
    try {
      w.child.kill('SIGSTOP');
    } catch {
      return undefined;
    }
    w.stopped = true;
    w.stops.push(stop);
    this.counts.pauses++;
    if (holding) this.counts.pausesOfHolders++;
    let done;
    const timer = { done: new Promise((resolve) => (done = resolve)) };
    timer.resume = () => {
      clearTimeout(timer.handle);
      this.pauseTimers.delete(timer);
      if (w.alive) {
        try {
          w.child.kill('SIGCONT');
        } catch {
          // gone
        }
      }
      stop.contAt = this.now();
      w.stopped = false;
      done();
    };
    if (Number.isFinite(ms)) timer.handle = setTimeout(timer.resume, ms);
    this.pauseTimers.add(timer);
    return timer;
  }

  /** The stop of `owner` whose interval meets [from, to], if any. */
  pausedDuring(owner, from, to) {
    const w = this.workers.get(owner);
    return w?.stops.find((stop) => stop.stopAt <= to && (stop.contAt ?? Number.POSITIVE_INFINITY) >= from);
  }

  onExit(w, code, signal) {
    w.alive = false;
    w.exitedAt = this.now();
    w.exit = { code, signal };
    w.readyResolve?.();
    for (const lease of this.leases.values()) {
      if (lease.owner !== w.owner || lease.state !== 'in') continue;
      lease.state = 'dead';
      this.vacate(lease);
      this.overlaps.onOccupantStep(lease.leaseId, 'dead');
    }
    for (const attempt of this.attempts.values()) {
      if (attempt.owner !== w.owner || attempt.outcome) continue;
      attempt.outcome = 'died';
      attempt.endAt = w.exitedAt;
    }
    // Its marker files: nobody else removes them.
    for (let i = 0; i < this.keys.length; i++) {
      const marker = path.join(this.dir, `${i}.inside`);
      try {
        if (readFileSync(marker, 'utf8').split(' ')[0] === w.owner) unlinkSync(marker);
      } catch {
        // none
      }
    }
    if (!w.killedByHarness && !w.closed) {
      this.violation('workerCrashes', { owner: w.owner, code, signal, output: w.output.slice(-1_500), crash: w.crash });
    }
  }

  reply(w, id, fields) {
    if (!w.alive) return;
    try {
      w.child.send({ re: id, ...fields });
    } catch {
      // it died
    }
  }

  onMessage(w, m) {
    switch (m?.type) {
      case 'ready': {
        w.isReady = true;
        const diff = m.dateNow - Date.now() - w.skewMs;
        if (Math.abs(diff) > 5_000 || (m.skewMs ?? 0) !== w.skewMs) {
          this.violation('skewNotApplied', { owner: w.owner, expected: w.skewMs, reported: m.skewMs, diff });
        }
        w.readyResolve();
        return;
      }
      case 'attempt':
        this.counts.acquireAttempts++;
        this.attempts.set(m.attemptId, { attemptId: m.attemptId, owner: w.owner, key: m.key, startAt: this.now() });
        return;
      case 'attempt-end':
        return this.onAttemptEnd(w, m);
      case 'enter':
        return void this.onWrite(w, m, 'enter');
      case 'write':
        return void this.onWrite(w, m, m.unchecked ? 'unchecked' : 'write');
      case 'exit':
        this.onLeave(w, m, 'exit');
        return this.reply(w, m.id, { ok: true });
      case 'abandon':
        this.counts.locksLost[m.reason ?? 'unknown'] = (this.counts.locksLost[m.reason ?? 'unknown'] ?? 0) + 1;
        if (m.beforeEnter) {
          this.counts.lostBeforeEnter++;
          this.lostBeforeEnter.set(m.leaseId, this.now());
        } else this.onLeave(w, m, 'abandon');
        return;
      case 'pause-check':
        this.counts.pauseChecks++;
        if (m.aborted) this.counts.pauseChecksAborted++;
        else {
          this.violation('signalNotAbortedAfterPause', {
            owner: w.owner,
            key: m.key,
            leaseId: m.leaseId,
            frozenMs: m.frozenMs,
            where: m.where,
            heldForMs: m.heldForMs,
            freezes: m.freezes,
            events: m.events,
            stops: w.stops.map((stop) => ({
              at: Math.round(stop.stopAt - this.t0),
              ms: Math.round((stop.contAt ?? this.now()) - stop.stopAt),
            })),
          });
        }
        return;
      case 'released':
        this.released.add(m.leaseId);
        this.releasedAt.set(m.leaseId, this.now());
        this.counts.releases++;
        if (!m.released) this.counts.releasesNotHeld++;
        return;
      case 'release-error':
        this.released.add(m.leaseId);
        this.releasedAt.set(m.leaseId, this.now());
        this.counts.releaseErrors++;
        if (m.outcome === 'unexpected') this.violation('unexpectedErrors', { owner: w.owner, where: 'release', errorName: m.errorName });
        return;
      case 'holding':
        w.holding = m;
        w.holdingResolve?.(m);
        return;
      case 'idle':
        w.idle = m;
        w.idleResolve?.(m);
        return;
      case 'closed':
        w.closed = true;
        return;
      case 'crash':
        w.crash = m.stack;
        return;
      case 'note':
        return;
      default:
        this.violation('harnessErrors', { what: 'unknown message', message: JSON.stringify(m).slice(0, 300) });
    }
  }

  onAttemptEnd(w, m) {
    const attempt = this.attempts.get(m.attemptId) ?? { attemptId: m.attemptId, owner: w.owner, key: m.key, startAt: this.now() };
    this.attempts.set(m.attemptId, attempt);
    Object.assign(attempt, {
      outcome: m.outcome,
      endAt: this.now(),
      leaseId: m.leaseId,
      token: m.token,
      errorName: m.errorName,
      events: m.events,
      workerStartMs: m.startedAtMs,
    });
    this.counts.outcomes[m.outcome] = (this.counts.outcomes[m.outcome] ?? 0) + 1;
    // How long the item had shown this attempt's own token before the attempt ended.
    // How long the item showed this attempt's own token before the attempt ended; judged at the
    // end, when the proxy can say whether a response to this worker was held back meanwhile.
    const seen = this.attemptTokens.get(m.attemptId);
    if (seen && seen.firstAt < attempt.endAt) this.ownTokenCases.push({ attempt, firstAt: seen.firstAt, lastAt: seen.lastAt });
    if (m.outcome === 'acquired') {
      this.counts.acquisitions++;
      this.counts.bySlot[w.slot].acquisitions++;
      return;
    }
    if (m.outcome === 'busy' && m.holderOwner === w.owner) void this.checkBusyOnItself(w, m, attempt);
    if (m.outcome === 'unexpected' || m.outcome === 'lock-error') {
      this.violation('unexpectedErrors', { owner: w.owner, attemptId: m.attemptId, errorName: m.errorName, message: m.message });
    }
    if (m.outcome === 'busy' || m.outcome === 'transient') void this.checkGiveUp(attempt);
  }

  /**
   * An acquisition gave up naming its own process as the holder. If the item still shows a token
   * of this process that no task of it holds — a waiter that gave up but was promoted later (its
   * leave failed), or a lease whose release failed or that was lost locally — the process waited
   * on its own lock: a self-deadlock. Otherwise (a sibling task holds it, or the library had just
   * passed such a lock on) it is only noted.
   */
  async checkBusyOnItself(w, m, attempt) {
    const item = await this.readItem(m.key).catch(() => undefined);
    const stale = item?.token && item.owner === w.owner ? this.attempts.get(item.attemptId) : undefined;
    const lease = stale?.leaseId ? this.leases.get(stale.leaseId) : undefined;
    const heldNow =
      stale?.outcome === 'acquired' && !this.released.has(stale.leaseId) && lease?.state !== 'abandoned' && lease?.state !== 'dead';
    if (!item?.token || item.owner !== w.owner || heldNow) {
      this.note('busyNamingItself', { attemptId: m.attemptId, itemShows: item?.attemptId ?? null });
      return;
    }
    // A lease this process lost locally (its signal aborted: a pause, failed heartbeats) vs. one
    // whose release failed, or a waiter that gave up and was promoted later.
    const expired = stale?.outcome === 'acquired' && (lease?.state === 'abandoned' || this.lostBeforeEnter.has(stale.leaseId));
    const kind =
      stale?.outcome !== 'acquired'
        ? 'own orphaned waiter (gave up, promoted later)'
        : expired
          ? 'own lease that ran out locally'
          : 'own lease whose release failed';
    // Since when this process could have known the lock was its own, nobody's: the stale lease's
    // release (or loss), or the orphan's promotion as first seen. A wait only just begun is a race.
    const ends = stale?.leaseId
      ? [this.releasedAt.get(stale.leaseId), this.leases.get(stale.leaseId)?.stateAt, this.lostBeforeEnter.get(stale.leaseId)].filter(
          (t) => t !== undefined,
        )
      : [];
    const lostAt = ends.length > 0 ? Math.min(...ends) : undefined;
    const since = Math.max(attempt.startAt, lostAt ?? this.orphanSeenAt.get(item.attemptId) ?? stale?.endAt ?? attempt.startAt);
    const selfWaitMs = attempt.endAt - since;
    if (selfWaitMs < Math.min(1_000, this.o.leaseMs / 2)) {
      this.note('busyOnOwnStaleLockBriefly', { attemptId: m.attemptId, itemShows: item.attemptId, selfWaitMs: Math.round(selfWaitMs) });
      return;
    }
    this.violation(expired ? 'ownExpiredLockWaits' : 'ownLockWaits', {
      selfWaitMs: Math.round(selfWaitMs),
      kind: `gave up waiting on its ${kind}`,
      owner: w.owner,
      attemptId: m.attemptId,
      key: m.key,
      waitedMs: m.waitedMs,
      itemShows: item.attemptId,
      itemAttemptOutcome: stale?.outcome ?? null,
      window: [attempt.startAt, attempt.endAt],
      events: m.events,
      warnings: m.warnings,
    });
  }

  /**
   * An acquisition gave up. If the item carries its own token now (its write was applied but it
   * never learnt so), the library must give it back, or at least never renew it.
   */
  async checkGiveUp(attempt) {
    const item = await this.readItem(attempt.key).catch(() => undefined);
    if (!item?.token || item.attemptId !== attempt.attemptId) return;
    this.counts.gaveUpHolding++;
    await sleep(2 * this.o.heartbeatMs + 300);
    const later = await this.readItem(attempt.key).catch(() => undefined);
    if (later?.token !== item.token) {
      this.counts.gaveUpCleaned++;
      return;
    }
    if (later.rvn !== item.rvn) {
      this.violation('selfDeadlocks', {
        kind: 'gave up, yet its lease is renewed',
        attemptId: attempt.attemptId,
        key: attempt.key,
        outcome: attempt.outcome,
      });
    } else {
      this.counts.gaveUpOrphaned++;
      const seen = this.attemptTokens.get(attempt.attemptId);
      this.note('gaveUpLeftHolding', {
        attemptId: attempt.attemptId,
        outcome: attempt.outcome,
        errorName: attempt.errorName,
        waitedMs: Math.round(attempt.endAt - attempt.startAt),
        ownTokenFirstSeenBeforeEndMs: seen ? Math.round(attempt.endAt - seen.firstAt) : null,
      });
    }
  }

  /** enter / checked write / unchecked write: fencing, occupancy, and the after-pause rules. */
  async onWrite(w, m, kind) {
    const at = this.now();
    let lease = this.leases.get(m.leaseId);
    if (kind === 'enter') {
      const attempt = this.attempts.get(m.attemptId);
      lease = {
        leaseId: m.leaseId,
        key: m.key,
        token: m.token,
        owner: w.owner,
        attemptId: m.attemptId,
        acquiredAt: attempt?.endAt ?? at,
        enterAt: at,
        enterGapMs: m.gapMs ?? 0,
        state: 'in',
      };
      this.leases.set(m.leaseId, lease);
      const occupants = this.occupancy.get(m.key);
      if (occupants.size === 0) this.noteVacantWait(m.key, at);
      for (const id of occupants) {
        const occupant = this.leases.get(id);
        if (occupant?.state === 'in') this.overlaps.onEnter(lease, occupant, at);
      }
      occupants.add(m.leaseId);
    } else if (!lease) {
      this.violation('harnessErrors', { what: 'write for an unknown lease', owner: w.owner, leaseId: m.leaseId });
      return this.reply(w, m.id, { accepted: false });
    }
    if (m.marker?.status === 'taken' && m.marker.leaseId !== m.leaseId) this.overlaps.onMarker(lease, m.marker, at, m.gapMs ?? 0);

    const checked = kind !== 'unchecked';
    const decidedBeforePause = checked && (m.gapMs ?? 0) > GAP_MS;
    // A stop that began after the harness heard of the acquisition, lasted a lease and is over:
    // the lock cannot have survived it, so no write may be decided after it. (A stop that may have
    // begun before the acquisition resolved is only an excuse, below.)
    const pause = w.stops?.find(
      (stop) =>
        stop.stopAt >= lease.acquiredAt && stop.contAt !== undefined && stop.contAt <= at && stop.contAt - stop.stopAt >= this.o.leaseMs,
    );
    const pausedPastLease = pause !== undefined;
    const pausedAround = pausedPastLease || this.pausedDuring(w.owner, lease.acquiredAt - 100, at) !== undefined;
    if (kind === 'write' && !decidedBeforePause) this.overlaps.onOccupantStep(lease.leaseId, 'write');

    const result = this.resource.write(m.key, m.token, m.leaseId, kind);
    if (kind === 'unchecked') lease.staleWriteSeen = true;
    if (!result.accepted) {
      this.counts.fencingRejections++;
      if (!checked) this.counts.fencingRejectionsUnchecked++;
      else if (decidedBeforePause || pausedAround) this.counts.fencingRejectionsAfterPause++;
      if (result.duplicate) this.violation('duplicateTokens', { key: m.key, token: m.token, leaseId: m.leaseId, owner: w.owner });
      else if (checked && !decidedBeforePause && !pausedAround && lease.state !== 'abandoned') {
        this.violation('falseSuccesses', {
          via: 'fencing',
          kind,
          key: m.key,
          token: m.token,
          highest: result.highest,
          owner: w.owner,
          gapMs: m.gapMs,
        });
      }
    }
    if (checked && !decidedBeforePause) {
      if (lease.state === 'abandoned') this.violation('writesAfterAbort', { kind, key: m.key, owner: w.owner, leaseId: m.leaseId });
      if (pausedPastLease) {
        this.violation('writesAfterPause', {
          kind,
          key: m.key,
          owner: w.owner,
          pauseMs: Math.round(pause.contAt - pause.stopAt),
          gapMs: m.gapMs,
        });
      }
    }
    if (kind === 'enter') await this.groundTruth(w, m, at, decidedBeforePause || pausedAround);
    this.reply(w, m.id, { accepted: result.accepted });
  }

  /** Right after an enter (before answering it): the server must show this holder's token. */
  async groundTruth(w, m, at, excused) {
    this.counts.groundTruthChecks++;
    let item;
    try {
      item = await this.readItem(m.key);
    } catch {
      this.counts.groundTruthInconclusive++;
      return;
    }
    if (item?.token === m.leaseId) return;
    const readMs = this.now() - at;
    if (excused || this.pausedDuring(w.owner, at - 100, this.now())) this.counts.groundTruthExcused++;
    else if (readMs > this.o.marginMs - 50) this.counts.groundTruthInconclusive++;
    else {
      this.violation('falseSuccesses', {
        via: 'server',
        key: m.key,
        owner: w.owner,
        token: m.token,
        itemOwner: item?.owner,
        itemFence: item?.fence,
        itemAttempt: item?.attemptId,
        readMs: Math.round(readMs),
      });
    }
  }

  onLeave(w, m, how) {
    const lease = this.leases.get(m.leaseId);
    if (!lease) return;
    if (how === 'abandon') lease.stateAt = this.now();
    if (lease.state === 'in') {
      lease.state = how === 'exit' ? 'exited' : 'abandoned';
      this.vacate(lease);
    }
    if (how === 'exit') {
      lease.exitAborted = m.aborted;
      if (lease.state === 'abandoned') lease.exitAborted = true;
    }
    this.overlaps.onOccupantStep(lease.leaseId, how, how === 'exit' ? m.aborted : true);
  }

  vacate(lease) {
    const occupants = this.occupancy.get(lease.key);
    occupants.delete(lease.leaseId);
    if (occupants.size === 0) this.keyState.get(lease.key).vacatedAt = this.now();
  }

  /** Chaos-phase statistic: how long a vacated key stayed without a holder while someone waited for it. */
  noteVacantWait(key, at) {
    if (this.phase !== 'chaos') return;
    const { vacatedAt } = this.keyState.get(key);
    if (!vacatedAt) return;
    let waitingSince = Number.POSITIVE_INFINITY;
    for (const attempt of this.attempts.values()) {
      if (attempt.key === key && (attempt.endAt === undefined || attempt.endAt >= vacatedAt) && attempt.startAt < waitingSince)
        waitingSince = attempt.startAt;
    }
    const from = Math.max(vacatedAt, waitingSince);
    if (Number.isFinite(from)) this.counts.longestVacantWaitMs = Math.max(this.counts.longestVacantWaitMs, at - from);
  }

  // ---- reading the table directly (no faults) ----

  async readItem(key) {
    const output = await this.direct.send(
      new GetItemCommand({ TableName: this.table, Key: { [ATTR.key]: { S: key } }, ConsistentRead: true }),
    );
    return parseItem(output.Item);
  }

  startMonitor() {
    let stopped = false;
    const loop = (async () => {
      while (!stopped) {
        await Promise.all(
          this.keys.map(async (key) => {
            const item = await this.readItem(key).catch(() => undefined);
            this.counts.monitorReads++;
            if (item?.token && item.attemptId) {
              const ended = this.attempts.get(item.attemptId);
              // (Within a second of giving up, the library may be passing on a lock it found handed to it.)
              if (ended?.endAt !== undefined && ended.outcome !== 'acquired' && this.now() > ended.endAt + 1_000)
                this.noteOrphan(item.attemptId, 'seen by the monitor');
              const at = this.now();
              const seen = this.attemptTokens.get(item.attemptId) ?? { tokens: new Set(), firstAt: at, lastAt: at };
              seen.tokens.add(item.token);
              seen.lastAt = at;
              this.attemptTokens.set(item.attemptId, seen);
            }
          }),
        );
        await sleep(100);
      }
    })();
    return {
      stop: async () => {
        stopped = true;
        await loop;
      },
    };
  }

  // ---- wind-down ----

  async quiesceAll() {
    const live = this.liveWorkers();
    await Promise.all(
      live.map(async (w) => {
        const idle = new Promise((resolve) => (w.idleResolve = resolve));
        w.child.send({ cmd: 'quiesce' });
        const outcome = await Promise.race([idle, w.exited.then(() => 'exited'), sleep(this.o.waitMs + 10_000).then(() => 'timeout')]);
        if (outcome === 'timeout') this.violation('harnessErrors', { what: 'worker did not quiesce', owner: w.owner });
        else if (outcome !== 'exited' && outcome.heldCount > 0) {
          this.violation('leakedLeases', { owner: w.owner, heldCount: outcome.heldCount });
        }
      }),
    );
  }

  /** Items naming a live (idle) worker that holds nothing: leftovers are fine, renewals are not. */
  async inspectLeftovers() {
    const live = new Set(this.liveWorkers().map((w) => w.owner));
    const before = await Promise.all(this.keys.map((key) => this.readItem(key).catch(() => undefined)));
    const suspects = before.filter((item) => item?.token && live.has(item.owner));
    if (suspects.length === 0) return;
    await sleep(2 * this.o.heartbeatMs + 300);
    for (const item of suspects) {
      const later = await this.readItem(item.key).catch(() => undefined);
      if (later?.token === item.token && later.rvn !== item.rvn) {
        this.violation('selfDeadlocks', {
          kind: 'lease of an idle worker renewed',
          key: item.key,
          owner: item.owner,
          attemptId: item.attemptId,
        });
      } else this.counts.staleOwnLeftovers++;
    }
  }

  // ---- liveness ----

  async livenessPhase() {
    const o = this.o;
    const live = this.liveWorkers();
    if (live.length === 0) {
      this.violation('harnessErrors', { what: 'no live worker for the liveness phase' });
      return;
    }
    // Every key is taken by a worker that will then crash (SIGKILL) or freeze (SIGSTOP).
    const holders = await Promise.all(
      this.keys.map(async (key, i) => {
        const w = live[i % live.length];
        const holding = new Promise((resolve) => {
          const previous = w.holdingResolve;
          w.holdingResolve = (m) => {
            if (m.key === key) resolve(m);
            else previous?.(m);
          };
        });
        w.child.send({ cmd: 'hold', key });
        const got = await Promise.race([holding, sleep(o.waitMs + 10_000).then(() => undefined)]);
        if (!got) this.violation('harnessErrors', { what: 'liveness holder did not get its key', key, owner: w.owner });
        return { key, w };
      }),
    );
    await sleep(o.heartbeatMs + 100); // at least one heartbeat each
    const frozen = [];
    const fate = new Map();
    for (const [i, { w }] of holders.entries()) {
      if (fate.has(w)) continue;
      if (i % 2 === 1 && !w.stopped) {
        fate.set(w, 'stop');
        frozen.push(this.pause(w, Number.POSITIVE_INFINITY, true));
      } else {
        fate.set(w, 'kill');
        this.kill(w);
        this.counts.kills++;
      }
    }
    this.livenessCrashes = { killed: [...fate.values()].filter((f) => f === 'kill').length, stopped: frozen.length };

    // A fresh client must get every key within one lease (+ poll).
    const prober = new LockManager({
      tableName: this.table,
      ownerName: 'prober',
      verifyTable: false,
      leaseDuration: o.leaseMs,
      logger: silentLogger(),
      clientConfig: { endpoint: this.proxyEndpoint, region: 'us-east-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' } },
    });
    const pseudo = { owner: 'prober', slot: -1, alive: true, pseudo: true, stops: [], child: { send: () => undefined } };
    this.workers.set('prober', pseudo);
    const bound = o.leaseMs + o.pollSlackMs;
    this.liveness = { boundMs: bound, perKeyMs: {} };
    await Promise.all(
      this.keys.map(async (key) => {
        const started = this.now();
        let lock;
        try {
          lock = await prober.acquire(key, { wait: 3 * o.leaseMs, data: { chaos: `prober:${key}` } });
        } catch (error) {
          this.liveness.perKeyMs[key] = null;
          this.violation('livenessExceeded', { key, error: `${error?.name}: ${error?.message}` });
          return;
        }
        const took = this.now() - started;
        this.liveness.perKeyMs[key] = Math.round(took);
        if (took > bound) this.violation('livenessExceeded', { key, tookMs: Math.round(took), boundMs: bound });
        // Every key was held by a process that was killed or stopped just before: taking it over
        // sooner than one lease would take it from a holder that may still believe it holds it.
        if (took < o.leaseMs - 50) this.violation('earlyTakeovers', { key, tookMs: Math.round(took), leaseMs: o.leaseMs });
        this.attempts.set(`prober:${key}`, {
          attemptId: `prober:${key}`,
          owner: 'prober',
          key,
          startAt: started,
          endAt: this.now(),
          outcome: 'acquired',
          leaseId: lock.leaseId,
        });
        // The new holder writes: fencing must accept its token (higher than everything before).
        await this.onWrite(pseudo, { leaseId: lock.leaseId, key, token: lock.fencingToken, attemptId: `prober:${key}`, gapMs: 0 }, 'enter');
        const accepted = this.resource.slot(key).highestLease === lock.leaseId;
        if (!accepted) this.violation('falseSuccesses', { via: 'fencing', key, owner: 'prober', token: lock.fencingToken });
        this.onLeave(pseudo, { leaseId: lock.leaseId, aborted: !lock.isHeld }, 'exit');
        await lock.release();
      }),
    );
    this.liveness.maxMs = Math.max(0, ...Object.values(this.liveness.perKeyMs).map((v) => v ?? Number.POSITIVE_INFINITY));
    await prober.close();

    // The frozen holders resume: their signal must abort before any further (checked) write, and
    // the one careless write each then makes with its old token must be rejected by fencing.
    const frozenLeases = holders.filter(({ w }) => fate.get(w) === 'stop').map(({ key, w }) => ({ key, w, leaseId: w.holding?.leaseId }));
    const rejectedBefore = this.resource.stats.uncheckedRejected;
    for (const timer of frozen) timer?.resume();
    await sleep(1_500);
    this.liveness.staleWritesRejected = this.resource.stats.uncheckedRejected - rejectedBefore;
    this.liveness.staleWritesExpected = frozenLeases.length;
    for (const { key, w, leaseId } of frozenLeases) {
      const lease = this.leases.get(leaseId);
      const log = this.resource.slot(key).log;
      if (log.some((entry) => entry.leaseId === leaseId && entry.kind === 'unchecked')) {
        this.violation('staleWritesAccepted', { key, owner: w.owner, leaseId });
      } else if (!lease || !lease.staleWriteSeen) {
        this.violation('harnessErrors', {
          what: 'stopped liveness holder made no write after resuming',
          key,
          owner: w.owner,
          state: lease?.state,
        });
      }
    }
  }

  // ---- shutdown ----

  async closeAll() {
    await Promise.all(
      this.liveWorkers().map(async (w) => {
        if (w.stopped) {
          try {
            w.child.kill('SIGCONT');
          } catch {
            // gone
          }
        }
        try {
          w.child.send({ cmd: 'close' });
        } catch {
          // gone
        }
        const outcome = await Promise.race([w.exited, sleep(15_000).then(() => 'timeout')]);
        if (outcome === 'timeout') {
          this.violation('harnessErrors', { what: 'worker did not close', owner: w.owner });
          this.kill(w);
        }
      }),
    );
  }

  async finalChecks() {
    // Nothing may stay held: every key was taken by the prober and released, and every worker closed.
    const output = await this.direct.send(new ScanCommand({ TableName: this.table, ConsistentRead: true }));
    for (const raw of output.Items ?? []) {
      const item = parseItem(raw);
      if (!item?.token) continue;
      const attempt = this.attempts.get(item.attemptId);
      if (attempt && attempt.outcome !== 'acquired' && attempt.outcome !== undefined) {
        // A waiter that had given up, promoted by a release after that (its queue exit had failed):
        // nobody holds it; it runs out after one lease. Counted with the orphans, not as a leak.
        this.noteOrphan(item.attemptId, 'left held at the end');
      } else
        this.violation('locksLeftHeld', { key: item.key, owner: item.owner, attemptId: item.attemptId, attemptOutcome: attempt?.outcome });
    }
    const viaApi = await this.inspector.list();
    const orphanKeys = new Set(
      (output.Items ?? [])
        .map(parseItem)
        .filter((item) => item?.token && this.orphans.has(item.attemptId))
        .map((item) => item.key),
    );
    const leftViaApi = viaApi.filter((info) => !orphanKeys.has(info.key));
    if (leftViaApi.length > 0 && this.violations.locksLeftHeld === 0)
      this.violation('locksLeftHeld', { via: 'list()', keys: leftViaApi.map((i) => i.key) });

    this.overlaps.finish(this.leases);
    for (const overlap of this.overlaps.violations()) this.violation('overlapsBetweenValidHolders', overlap);
    const { outOfOrder, sharedTokens } = this.resource.verify();
    for (let i = 0; i < outOfOrder; i++) this.violation('outOfOrderWrites', {});
    if (sharedTokens > 0 && this.violations.duplicateTokens === 0) this.violation('duplicateTokens', { sharedTokens });

    // Own writes recognised: one owner token per acquisition attempt, and it is the lock's leaseId.
    for (const [attemptId, { tokens }] of this.attemptTokens) {
      const attempt = this.attempts.get(attemptId);
      if (tokens.size > 1) this.violation('selfDeadlocks', { kind: 'one attempt, several owner tokens', attemptId, tokens: tokens.size });
      else if (attempt?.outcome === 'acquired' && attempt.leaseId && !tokens.has(attempt.leaseId)) {
        this.violation('selfDeadlocks', { kind: 'acquired with another token than its applied write', attemptId });
      }
    }

    // Own lock recognised. Evidence: an answer delivered to the worker that showed the lock held by
    // this very attempt (its own token). After that, the attempt must resolve with the lock at once,
    // not wait on (or give up on) a lock it already has — unless its process was stopped meanwhile.
    this.proxyStats = (await this.proxyCall({ cmd: 'stats' })).stats;
    const rel = (t) => Math.round(t - this.t0);
    for (const [attemptId, evidence] of Object.entries(this.proxyStats.evidence)) {
      const attempt = this.attempts.get(attemptId);
      if (!attempt?.endAt || attempt.outcome === 'died') continue;
      const shownAt = evidence.at - performance.timeOrigin;
      if (shownAt >= attempt.endAt - 100) continue; // after (or racing with) the end of the attempt
      if (this.pausedDuring(attempt.owner, shownAt - 100, attempt.endAt)) {
        this.note('ownLockShownWhileStopped', { attemptId, outcome: attempt.outcome });
        continue;
      }
      // Obstructed: a fault on this worker's own requests about the key after it was told, or a
      // response to it held back — it may simply not have been able to act in time.
      const obstructed = this.proxyStats.trace.some(
        (r) =>
          r.owner === attempt.owner &&
          r.key === attempt.key &&
          r.fault &&
          r.at >= evidence.at - 50 &&
          r.at <= attempt.endAt + performance.timeOrigin,
      );
      const lagMs = attempt.endAt - shownAt;
      if (obstructed && (attempt.outcome !== 'acquired' || lagMs > RECOGNITION_MS)) {
        this.note('ownLockShownThenObstructed', { attemptId, outcome: attempt.outcome, sinceShownMs: Math.round(lagMs) });
        continue;
      }
      const detail = {
        attemptId,
        key: attempt.key,
        outcome: attempt.outcome,
        errorName: attempt.errorName,
        sinceShownMs: Math.round(lagMs),
        timeline: { start: rel(attempt.startAt), shown: rel(shownAt), end: rel(attempt.endAt) },
      };
      const window = [attempt.startAt, attempt.endAt];
      if (attempt.outcome !== 'acquired')
        this.violation('selfDeadlocks', {
          kind: 'told it holds the lock, yet gave up',
          ...detail,
          owner: attempt.owner,
          window,
          events: attempt.events,
          workerStartMs: attempt.workerStartMs,
        });
      else {
        if (lagMs > this.counts.maxRecognitionMs) {
          this.counts.maxRecognitionMs = lagMs;
          this.maxRecognition = detail;
        }
        if (lagMs > RECOGNITION_MS)
          this.violation('selfDeadlocks', { kind: 'told it holds the lock, yet kept waiting', ...detail, owner: attempt.owner, window });
      }
    }

    // What the worker sent and got for that key meanwhile, for the report.
    for (const example of ['selfDeadlocks', 'ownLockWaits', 'ownExpiredLockWaits'].flatMap((name) => this.examples[name] ?? [])) {
      if (!example.window || !example.owner) continue;
      const [from, to] = example.window.map((t) => t + performance.timeOrigin);
      example.requests = this.proxyStats.trace
        .filter((r) => r.owner === example.owner && r.key === example.key && r.at >= from - 200 && r.at <= to + 500)
        .map(
          (r) =>
            `${Math.round(r.at - performance.timeOrigin - this.t0)} ${r.attempt ?? '?'} ${r.op} ${r.cond ?? ''} ${r.fault ?? ''} → ${r.status ?? '✗'}${r.holder ? ` holder=${r.holder}` : ''}`,
        );
      example.window = example.window.map((t) => Math.round(t - this.t0));
    }

    // Information: how long the item showed an attempt's own token (sampled every 100 ms) before
    // the attempt ended without it. Waiters given the lock by another's release only learn so by
    // reading, so a slow read or a stopped process costs the key up to a lease.
    for (const { attempt, firstAt } of this.ownTokenCases) {
      if (attempt.outcome === 'acquired' || attempt.outcome === 'died') continue;
      this.note('endedWhileItemShowedOwnToken', {
        attemptId: attempt.attemptId,
        outcome: attempt.outcome,
        shownMs: Math.round(attempt.endAt - firstAt),
      });
    }

    // Clock skew changes nothing: skewed workers are not starved.
    const slots = Object.values(this.counts.bySlot);
    const plain = slots
      .filter((s) => s.skewMs === 0)
      .map((s) => s.acquisitions)
      .sort((a, b) => a - b);
    const median = plain.length === 0 ? 0 : (plain[Math.floor((plain.length - 1) / 2)] + plain[Math.floor(plain.length / 2)]) / 2;
    for (const [slot, s] of Object.entries(this.counts.bySlot)) {
      if (s.skewMs !== 0 && s.acquisitions < 0.25 * median)
        this.violation('skewStarved', { slot, skewMs: s.skewMs, acquisitions: s.acquisitions, medianUnskewed: median });
    }
  }

  // ---- proxy ----

  async startProxy() {
    const attributes = { key: ATTR.key, token: ATTR.token, data: ATTR.data };
    this.proxy = fork(PROXY, [JSON.stringify({ target: this.o.endpoint, seed: this.o.seed, attributes })], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const forgetProxy = guard(() => this.proxy.kill('SIGKILL'));
    this.proxy.once('exit', forgetProxy);
    this.proxyPending = new Map();
    this.proxyId = 0;
    this.proxyEndpoint = await new Promise((resolve, reject) => {
      this.proxy.on('message', (m) => {
        if (m?.type === 'listening') resolve(m.endpoint);
        else if (m?.re !== undefined) {
          this.proxyPending.get(m.re)?.(m);
          this.proxyPending.delete(m.re);
        }
      });
      this.proxy.once('exit', (code) => reject(new Error(`fault proxy exited (${code})`)));
    });
  }

  proxyCall(message) {
    const id = ++this.proxyId;
    return new Promise((resolve, reject) => {
      this.proxyPending.set(id, (m) => (m.ok ? resolve(m) : reject(new Error(m.error))));
      this.proxy.send({ id, ...message });
    });
  }

  // ---- report ----

  async report() {
    const proxyStats = this.proxyStats ?? (await this.proxyCall({ cmd: 'stats' })).stats;
    const lost = { total: 0, attempts: 0, recognised: 0, gaveUp: 0, died: 0 };
    const seen = new Set();
    for (const write of proxyStats.lostWrites) {
      lost.total++;
      for (const attemptId of write.markers) {
        if (seen.has(attemptId)) continue;
        seen.add(attemptId);
        lost.attempts++;
        const outcome = this.attempts.get(attemptId)?.outcome;
        if (outcome === 'acquired') lost.recognised++;
        else if (outcome === 'died' || outcome === undefined) lost.died++;
        else lost.gaveUp++;
      }
    }
    const overlapCounts = this.overlaps.counts();
    const skew = {};
    for (const s of Object.values(this.counts.bySlot)) {
      const label = s.skewMs === 0 ? 'none' : `${s.skewMs > 0 ? '+' : '-'}${Math.abs(s.skewMs) / 60_000} min`;
      const group = (skew[label] ??= { slots: 0, acquisitions: 0 });
      group.slots++;
      group.acquisitions += s.acquisitions;
    }
    const counted = Object.entries(this.violations).filter(([name]) => this.o.strict || !(name in KNOWN_DEFECTS));
    const violationsTotal = counted.reduce((sum, [, n]) => sum + n, 0);
    const knownDefects = Object.fromEntries(Object.keys(KNOWN_DEFECTS).map((name) => [name, this.violations[name]]));
    return {
      server: this.o.serverName,
      endpoint: this.o.endpoint,
      seed: this.o.seed,
      ok: violationsTotal === 0,
      options: {
        durationMs: this.o.durationMs,
        workers: this.o.workers,
        tasks: this.o.tasks,
        keys: this.o.keys,
        leaseMs: this.o.leaseMs,
        rates: this.o.rates,
        skews: this.o.skews,
      },
      timings: Object.fromEntries(Object.entries(this.timings).map(([k, v]) => [k, Math.round(v)])),
      counts: {
        ...this.counts,
        orphanPromotions: {
          gaveUp: [...this.orphans].filter((id) => this.attempts.get(id)?.outcome !== 'died').length,
          died: [...this.orphans].filter((id) => this.attempts.get(id)?.outcome === 'died').length,
        },
        traceLength: proxyStats.trace?.length,
        protectedWrites: this.resource.stats,
        dynamoRequests: proxyStats.requests,
        requestsByOperation: proxyStats.byOperation,
        faults: Object.fromEntries(FAULT_KINDS.map((kind) => [kind, proxyStats.injected[kind]])),
        faultsTotal: FAULT_KINDS.reduce((sum, kind) => sum + proxyStats.injected[kind], 0),
        overlaps: overlapCounts,
        lostWriteResponses: lost,
        liveness: this.liveness,
        livenessCrashes: this.livenessCrashes,
        skew,
      },
      violations: this.violations,
      violationsTotal,
      knownDefects,
      strict: Boolean(this.o.strict),
      examples: this.examples,
      notes: this.notes,
      maxRecognition: this.maxRecognition,
      workers: [...this.workers.values()]
        .filter((w) => !w.pseudo)
        .map((w) => ({
          owner: w.owner,
          skewMs: w.skewMs,
          exit: w.exit,
          killed: w.killedByHarness,
          stops: w.stops.map((stop) => ({
            at: Math.round(stop.stopAt - this.t0),
            ms: Math.round((stop.contAt ?? stop.stopAt) - stop.stopAt),
            holding: stop.holding,
          })),
        })),
    };
  }

  async cleanup() {
    for (const timer of this.pauseTimers) clearTimeout(timer.handle);
    for (const w of this.workers.values()) {
      if (w.alive && w.child?.kill) {
        try {
          w.child.kill('SIGKILL');
        } catch {
          // gone
        }
      }
    }
    await this.monitor?.stop().catch(() => undefined);
    if (this.proxy && this.proxy.exitCode === null) {
      await Promise.race([this.proxyCall({ cmd: 'close' }).catch(() => undefined), sleep(3_000)]);
      this.proxy.kill('SIGKILL');
    }
    await deleteTable(this.direct, this.table).catch(() => undefined);
    this.direct.destroy();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** SDK settings per worker slot: no SDK retries / retries with a request timeout / SDK defaults. */
function sdkVariant(slot) {
  switch (slot % 3) {
    case 0:
      return { maxAttempts: 1 };
    case 1:
      return { maxAttempts: 3, requestTimeoutMs: 1_000 };
    default:
      return { maxAttempts: 3 };
  }
}

function parseItem(item) {
  if (!item) return undefined;
  const data = item[ATTR.data]?.S;
  let attemptId;
  if (data) {
    try {
      attemptId = JSON.parse(data)?.chaos;
    } catch {
      // not ours
    }
  }
  return {
    key: item[ATTR.key]?.S,
    token: item[ATTR.token]?.S,
    owner: item[ATTR.owner]?.S,
    rvn: item[ATTR.rvn]?.S,
    fence: item[ATTR.fence]?.N === undefined ? undefined : Number(item[ATTR.fence].N),
    attemptId,
  };
}

function silentLogger() {
  return { log() {}, warn() {}, error() {}, debug() {}, verbose() {} };
}

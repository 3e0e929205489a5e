// @ts-check
/**
 * The steps of one chaos run, in order (see `scenario.mjs`): set-up, chaos (kills and pauses while
 * the proxy injects faults), wind-down (quiesce, leftovers), liveness (every key's holder killed or
 * frozen; a fresh client must get each within one lease), shutdown (close, final checks).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { LockManager } from '../dist/index.js';
import { finalChecks } from './final-checks.mjs';
import { noFaults } from './support/fault-proxy.mjs';
import { serverHasTransactions } from './support/data-resource.mjs';
import { createTable } from './support/direct-table.mjs';
import { inspectLeftovers, startMonitor } from './self-deadlock-checks.mjs';
import { startLivenessTrail } from './liveness-trail.mjs';
import { LOCAL_REGION, localCredentials } from '../tools/dynamodb-servers.mjs';

/** @typedef {import('./scenario.mjs').ChaosRun} ChaosRun */
/** @typedef {import('./supervisor.mjs').WorkerHandle} WorkerHandle */

const now = () => performance.now();

/**
 * Runs every phase; the run's state then holds what the report needs.
 * @param {ChaosRun} run
 */
export async function runPhases(run) {
  const { o, supervisor } = run;
  run.log(
    `[chaos] ${o.serverName}: table ${run.table} (+ -data), ${o.workers} workers × ${o.tasks} tasks on ${o.keys} keys, lease ${o.leaseMs} ms, ${Math.round(o.durationMs / 1000)} s of faults, seed ${o.seed}`,
  );
  await createTable(run.direct, run.table);
  await createTable(run.direct, run.dataTable);
  run.data.transactions = await serverHasTransactions(run.direct, run.dataTable);
  run.inspector = new LockManager({
    tableName: run.table,
    client: run.direct,
    verifyTable: false,
    ownerName: 'chaos-inspector',
    logger: silentLogger(),
  });
  await supervisor.startProxy();
  const started = await supervisor.startWorkers();
  run.timings.setupMs = now() - run.t0;

  // ---- chaos ----
  run.phase = 'chaos';
  await supervisor.proxyCall({ cmd: 'set', rates: o.rates, timing: { delayMinMs: 1.2 * o.leaseMs, delayMaxMs: 1.8 * o.leaseMs } });
  run.monitor = startMonitor(run);
  for (const w of started) supervisor.send(w, { cmd: 'go' });
  const chaosStart = now();
  await chaosPhase(run, chaosStart + o.durationMs);
  run.timings.chaosMs = now() - chaosStart;

  // ---- wind-down ----
  run.phase = 'wind-down';
  const windStart = now();
  await Promise.all([...supervisor.pauseTimers].map((t) => t.done));
  await supervisor.proxyCall({ cmd: 'set', rates: noFaults() });
  await Promise.all([...supervisor.respawns]);
  await sleep(2 * o.leaseMs);
  run.phase = 'quiesce';
  await quiesceAll(run);
  await inspectLeftovers(run);
  run.timings.windDownMs = now() - windStart;

  // ---- liveness ----
  run.phase = 'liveness';
  const liveStart = now();
  await livenessPhase(run);
  run.timings.livenessMs = now() - liveStart;

  // ---- shutdown ----
  run.phase = 'shutdown';
  await supervisor.closeAll();
  await run.monitor.stop();
  await finalChecks(run);
  run.timings.totalMs = now() - run.t0;
}

/**
 * Until `end`: every `killEveryMs` (jittered) a worker is SIGKILLed and respawned, every
 * `pauseEveryMs` one is SIGSTOPped for longer than the lease — preferring ones inside their section.
 * @param {ChaosRun} run
 * @param {number} end
 */
async function chaosPhase(run, end) {
  const { o, random } = run;
  const jittered = (/** @type {number} */ ms) => ms * (0.6 + 0.8 * random());
  let nextKill = now() + jittered(o.killEveryMs);
  let nextPause = now() + jittered(o.pauseEveryMs) / 2;
  while (now() < end) {
    await sleep(25);
    if (now() >= nextKill) {
      killOne(run);
      nextKill = now() + jittered(o.killEveryMs);
    }
    if (now() >= nextPause) {
      if (pauseOne(run)) nextPause = now() + jittered(o.pauseEveryMs);
      else nextPause = now() + 200;
    }
  }
}

/**
 * @template T
 * @param {ChaosRun} run
 * @param {T[]} list
 * @returns {T}
 */
function pick(run, list) {
  return list[Math.floor(run.random() * list.length)];
}

/** @param {ChaosRun} run */
function killOne(run) {
  const { supervisor, referee, random, tally } = run;
  const candidates = supervisor.liveWorkers().filter((w) => !w.stopped && w.isReady);
  if (candidates.length === 0) return;
  const holders = candidates.filter((w) => referee.holdingLeases(w).length > 0);
  const w = holders.length > 0 && random() < 0.6 ? pick(run, holders) : pick(run, candidates);
  supervisor.kill(w);
  tally.counts.kills++;
  supervisor.respawnLater(w);
}

/**
 * @param {ChaosRun} run
 * @returns {boolean} whether a worker was paused (else try again soon)
 */
function pauseOne(run) {
  const { o, supervisor, referee, random } = run;
  const stopped = supervisor.liveWorkers().filter((w) => w.stopped).length;
  if (stopped >= o.maxStopped) return false;
  const candidates = supervisor.liveWorkers().filter((w) => !w.stopped && w.isReady);
  if (candidates.length <= 1) return false;
  const holders = candidates.filter((w) => referee.holdingLeases(w).length > 0);
  if (holders.length === 0 && random() < 0.8) return false; // try again soon, to catch a holder
  const w = holders.length > 0 ? pick(run, holders) : pick(run, candidates);
  const ms = o.leaseMs * (1.3 + 0.5 * random());
  supervisor.pause(w, ms, holders.includes(w));
  return true;
}

/**
 * Wind-down: every live worker ends its tasks and must then hold nothing.
 * @param {ChaosRun} run
 */
async function quiesceAll(run) {
  const { o, supervisor, tally } = run;
  const live = supervisor.liveWorkers();
  await Promise.all(
    live.map(async (w) => {
      /** @type {Promise<import('./protocol.mjs').IdleMessage>} */
      const idle = new Promise((resolve) => (w.idleResolve = resolve));
      supervisor.send(w, { cmd: 'quiesce' });
      const outcome = await Promise.race([
        idle,
        w.exited?.then(() => /** @type {const} */ ('exited')),
        sleep(o.waitMs + 10_000).then(() => /** @type {const} */ ('timeout')),
      ]);
      if (outcome === 'timeout') tally.violation('harnessErrors', { what: 'worker did not quiesce', owner: w.owner });
      else if (outcome !== 'exited' && outcome !== undefined && outcome.heldCount > 0) {
        tally.violation('leakedLeases', { owner: w.owner, heldCount: outcome.heldCount });
      }
    }),
  );
}

/**
 * Liveness: every key is taken by a worker that is then SIGKILLed or SIGSTOPped; a fresh client
 * must get every key within one lease (+ poll), not sooner than one lease; the frozen holders
 * resume, and the one careless write each then makes with its old token must be rejected.
 * @param {ChaosRun} run
 */
async function livenessPhase(run) {
  const { o, supervisor, referee, tally } = run;
  const live = supervisor.liveWorkers();
  if (live.length === 0) {
    tally.violation('harnessErrors', { what: 'no live worker for the liveness phase' });
    return;
  }
  // Every key is taken by a worker that will then crash (SIGKILL) or freeze (SIGSTOP).
  const holders = await Promise.all(
    run.keys.map(async (key, i) => {
      const w = live[i % live.length];
      const holding = new Promise((resolve) => {
        const previous = w.holdingResolve;
        w.holdingResolve = (m) => {
          if (m.key === key) resolve(m);
          else previous?.(m);
        };
      });
      supervisor.send(w, { cmd: 'hold', key });
      const got = await Promise.race([holding, sleep(o.waitMs + 10_000).then(() => undefined)]);
      if (!got) tally.violation('harnessErrors', { what: 'liveness holder did not get its key', key, owner: w.owner });
      return { key, w };
    }),
  );
  await sleep(o.heartbeatMs + 100); // at least one heartbeat each
  // Stopped at the end of the phase, or by the run's clean-up if the phase fails before.
  const trail = (run.livenessTrail = startLivenessTrail(run));
  const frozen = [];
  /** @type {Map<WorkerHandle, 'stop' | 'kill'>} */
  const fate = new Map();
  for (const [i, { w }] of holders.entries()) {
    if (fate.has(w)) continue;
    if (i % 2 === 1 && !w.stopped) {
      fate.set(w, 'stop');
      frozen.push(supervisor.pause(w, Number.POSITIVE_INFINITY, true));
    } else {
      fate.set(w, 'kill');
      supervisor.kill(w);
      tally.counts.kills++;
    }
  }
  run.livenessCrashes = { killed: [...fate.values()].filter((f) => f === 'kill').length, stopped: frozen.length };

  // A fresh client must get every key within one lease (+ poll).
  const prober = new LockManager({
    tableName: run.table,
    ownerName: 'prober',
    verifyTable: false,
    leaseDuration: o.leaseMs,
    logger: silentLogger(),
    clientConfig: { endpoint: supervisor.proxyEndpoint, region: LOCAL_REGION, credentials: localCredentials() },
  });
  /** @type {WorkerHandle} */
  const pseudo = { owner: 'prober', slot: -1, alive: true, pseudo: true, stops: [], child: { send: () => undefined } };
  supervisor.workers.set('prober', pseudo);
  // How the prober got each key: passing the silent holder itself, or served by another process.
  /** @type {Map<string, string>} */
  const via = new Map();
  prober.subscribe((event) => {
    if (event.type === 'acquired') via.set(event.key, event.via);
    trail.event(event.key, `prober: ${event.type}${event.type === 'acquired' ? ` via ${event.via}` : ''}`);
  });
  const bound = o.leaseMs + o.pollSlackMs;
  /** @type {NonNullable<ChaosRun['liveness']>} */
  const liveness = { boundMs: bound, perKeyMs: {} };
  run.liveness = liveness;
  await Promise.all(
    run.keys.map(async (key) => {
      const started = now();
      let lock;
      try {
        lock = await prober.acquire(key, { wait: 3 * o.leaseMs, data: { chaos: `prober:${key}` } });
      } catch (error) {
        liveness.perKeyMs[key] = null;
        tally.violation('livenessExceeded', { key, error: `${error?.name}: ${error?.message}`, trail: trail.of(key) });
        return;
      }
      const took = now() - started;
      liveness.perKeyMs[key] = Math.round(took);
      if (took > bound) tally.violation('livenessExceeded', { key, tookMs: Math.round(took), boundMs: bound, trail: trail.of(key) });
      // Every key was held by a process that was killed or stopped just before. A grant sooner than
      // one lease is early when the prober passed that holder itself (its watch started after it
      // did), or, whoever passed it, sooner than a lease after the holder's last possible renewal
      // (a heartbeat interval before it stopped, plus 200 ms for a late timer). Otherwise another
      // live worker served it (a quiet ticket that passed the holder on its own, earlier sight of
      // it, then released): a note.
      if (took < o.leaseMs - 50) {
        const detail = { key, tookMs: Math.round(took), leaseMs: o.leaseMs, via: via.get(key), trail: trail.of(key) };
        if (via.get(key) === 'takeover' || took < o.leaseMs - o.heartbeatMs - 200) tally.violation('earlyTakeovers', detail);
        else tally.note('livenessServedEarly', detail);
      }
      referee.attempts.set(`prober:${key}`, {
        attemptId: `prober:${key}`,
        owner: 'prober',
        key,
        startAt: started,
        endAt: now(),
        outcome: 'acquired',
        leaseId: lock.leaseId,
      });
      // The new holder writes: fencing must accept its token (higher than everything before).
      await referee.onWrite(
        pseudo,
        { leaseId: lock.leaseId, key, token: lock.fencingToken, attemptId: `prober:${key}`, gapMs: 0 },
        'enter',
      );
      const accepted = referee.resource.slot(key).highestLease === lock.leaseId;
      if (!accepted) tally.violation('falseSuccesses', { via: 'fencing', key, owner: 'prober', token: lock.fencingToken });
      referee.onLeave(pseudo, { leaseId: lock.leaseId, aborted: !lock.isHeld }, 'exit');
      await lock.release();
    }),
  );
  liveness.maxMs = Math.max(0, ...Object.values(liveness.perKeyMs).map((v) => v ?? Number.POSITIVE_INFINITY));
  await prober.close();
  await trail.stop();

  // The frozen holders resume: their signal must abort before any further (checked) write, and
  // the one careless write each then makes with its old token must be rejected by fencing.
  const frozenLeases = holders.filter(({ w }) => fate.get(w) === 'stop').map(({ key, w }) => ({ key, w, leaseId: w.holding?.leaseId }));
  const rejectedBefore = referee.resource.stats.uncheckedRejected;
  for (const timer of frozen) timer?.resume();
  await sleep(1_500);
  liveness.staleWritesRejected = referee.resource.stats.uncheckedRejected - rejectedBefore;
  liveness.staleWritesExpected = frozenLeases.length;
  for (const { key, w, leaseId } of frozenLeases) {
    const lease = referee.leases.get(/** @type {string} */ (leaseId));
    const log = referee.resource.slot(key).log;
    if (log.some((entry) => entry.leaseId === leaseId && entry.kind === 'unchecked')) {
      tally.violation('staleWritesAccepted', { key, owner: w.owner, leaseId });
    } else if (!lease || !lease.staleWriteSeen) {
      tally.violation('harnessErrors', {
        what: 'stopped liveness holder made no write after resuming',
        key,
        owner: w.owner,
        state: lease?.state,
      });
    }
  }
}

/** A logger for the harness's own lock managers (the inspector, the prober). */
function silentLogger() {
  return { log() {}, warn() {}, error() {}, debug() {}, verbose() {} };
}

// @ts-check
/**
 * A chaos worker: one OS process using the built library (`dist/`) through the fault proxy,
 * the way an application instance would. Started by `chaos/scenario.mjs` with one JSON argument.
 *
 * Each of its `tasks` loops: pick a key → `acquire()` → check `lock.signal` → protected writes
 * to the parent's fencing resource (over IPC, each acknowledged) with the fencing token, each
 * preceded by a signal check and followed by a write of the key's data item through the library's
 * fence (`lock.fencedWrite()` or `lock.transact()`, `support/data-resource.mjs`) → hold → one last
 * data write, whatever the signal says (the fence alone must stop it once the lock is lost) →
 * leave → `release()`. Critical sections are also marked with an exclusive marker file
 * (`openSync(path, 'wx')`), a clock-free overlap witness.
 *
 * What the worker itself judges (it alone has its monotonic clock):
 * - a pulse timer records event-loop freezes (SIGSTOP); at every signal check after a freeze of a
 *   whole lease or more since the lock was acquired, the signal must already have aborted
 *   (`pause-check` reports it either way);
 * - an acquisition that ends busy naming this very process as the holder is reported with the
 *   library's recent events for the key (the harness then reads the item to judge it);
 * - an error that is neither the library's nor a transient AWS/network error is `unexpected`.
 *
 * Messages to the parent: `{ type, ... }`; requests that need an answer carry `id` and get
 * `{ re: id, ... }` back. Commands from the parent: `go`, `quiesce`, `hold`, `close`. Every message
 * is typed in `protocol.mjs`.
 */
import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  DynamoLockError,
  LockBusyError,
  LockFencedError,
  LockLostError,
  LockManager,
  LockTransactionError,
  LockUnavailableError,
} from '../dist/index.js';
import { LOCAL_REGION, localCredentials } from '../tools/local-credentials.mjs';
import { dataUpdate } from './support/data-resource.mjs';

/** @typedef {import('./protocol.mjs').WorkerMessage} WorkerMessage */
/** @typedef {import('./protocol.mjs').WorkerReply} WorkerReply */
/** @typedef {import('./protocol.mjs').WorkerCommand} WorkerCommand */
/** @typedef {import('./protocol.mjs').LibraryEvent} LibraryEvent */
/** @typedef {import('./protocol.mjs').AttemptOutcome} AttemptOutcome */
/** @typedef {import('./protocol.mjs').MarkerClaim} MarkerClaim */

/** @type {import('./protocol.mjs').WorkerConfig} */
const cfg = JSON.parse(process.argv[2] ?? '{}');
const now = () => performance.now();
const rand = (min, max) => min + Math.random() * (max - min);
const randInt = (min, max) => Math.floor(rand(min, max + 1));

// ---- messaging ----

let nextId = 0;
const pending = new Map();
let exiting = false;

/** @param {WorkerMessage} message */
function send(message) {
  if (!process.connected) return;
  try {
    process.send?.(message);
  } catch {
    // the parent is gone; 'disconnect' ends this process
  }
}

/**
 * A request the parent answers; resolves with the answer.
 * @param {import('./protocol.mjs').WorkerRequest} request
 * @returns {Promise<WorkerReply>}
 */
function rpc(request) {
  if (!process.connected) return new Promise(() => undefined);
  const id = ++nextId;
  return new Promise((resolve) => {
    pending.set(id, resolve);
    send({ ...request, id });
  });
}

// ---- freeze detection (SIGSTOP, or a blocked event loop) ----

const PULSE_MS = 20;
const FREEZE_MIN_MS = 250;
let lastPulse = now();
const freezes = [];
setInterval(() => {
  const t = now();
  if (t - lastPulse >= FREEZE_MIN_MS) {
    freezes.push({ start: lastPulse, end: t });
    if (freezes.length > 100) freezes.shift();
  }
  lastPulse = t;
}, PULSE_MS);

/** The longest freeze that began at or after `since`, including one not yet seen by the pulse. */
function longestFreezeSince(since) {
  let longest = 0;
  for (const freeze of freezes) if (freeze.start >= since) longest = Math.max(longest, freeze.end - freeze.start);
  if (lastPulse >= since) longest = Math.max(longest, now() - lastPulse);
  return longest;
}

// ---- the lock manager ----

/** @type {import('./protocol.mjs').Warnings} */
const warnings = { count: 0, last: [] };
const logger = {
  log: () => undefined,
  debug: () => undefined,
  verbose: () => undefined,
  warn: (message) => {
    warnings.count++;
    warnings.last = [...warnings.last.slice(-4), String(message).slice(0, 300)];
  },
  error: (message) => {
    warnings.count++;
    warnings.last = [...warnings.last.slice(-4), `ERROR ${String(message).slice(0, 300)}`];
  },
};

/** The library's own events (`onEvent`), kept briefly per key for reports about failed acquisitions. */
/** @type {LibraryEvent[]} */
const events = [];
const t0 = now();
function onEvent(event) {
  events.push({
    t: Math.round(now() - t0),
    type: event.type,
    key: event.key,
    via: event.via,
    reason: event.reason,
    operation: event.operation,
    error: event.error ? String(event.error?.name ?? event.error) : undefined,
    fencingToken: event.fencingToken,
    holder: event.holder?.owner,
  });
  if (events.length > 400) events.splice(0, 100);
}
/** @returns {LibraryEvent[]} */
function eventsFor(key, sinceMs) {
  return events
    .filter((e) => e.key === key && e.t >= sinceMs - 50)
    .map((e) => /** @type {LibraryEvent} */ (Object.fromEntries(Object.entries(e).filter(([, v]) => v !== undefined))));
}

const requestHandler = cfg.sdk?.requestTimeoutMs ? { requestTimeout: cfg.sdk.requestTimeoutMs, throwOnRequestTimeout: true } : undefined;
const manager = new LockManager({
  tableName: cfg.table,
  ownerName: cfg.owner,
  verifyTable: false,
  leaseDuration: cfg.leaseMs,
  logger,
  onEvent,
  clientConfig: {
    endpoint: cfg.endpoint,
    region: LOCAL_REGION,
    credentials: localCredentials(),
    maxAttempts: cfg.sdk?.maxAttempts ?? 3,
    // Lets the fault proxy tell which worker a request came from.
    customUserAgent: `chaos/${cfg.owner}`,
    ...(requestHandler ? { requestHandler } : {}),
  },
});

// A pause between the library's check and the request leaving the process (GC, a frozen
// container): before some data writes are sent, the worker asks the harness, which may SIGSTOP it
// there past its lease. The write then leaves with the old token after a takeover: the fence's case.
manager.client.middlewareStack.add(
  (next) => async (args) => {
    const input = /** @type {any} */ (args.input);
    const dataWrite = input?.TableName === cfg.dataTable || input?.TransactItems?.some((item) => item.Update?.TableName === cfg.dataTable);
    if (dataWrite && Math.random() < cfg.stallRate) await rpc({ type: 'stall-point' });
    return next(args);
  },
  { step: 'build', name: 'chaosStallPoint' },
);

// ---- error classification ----

const TRANSIENT_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'ETIMEDOUT', 'EPIPE', 'ECONNABORTED', 'ERR_STREAM_PREMATURE_CLOSE']);
/** What the proxy injects (and its network effects): errors a caller may get once its wait ran out. */
const TRANSIENT_NAMES = new Set([
  'ThrottlingException',
  'ProvisionedThroughputExceededException',
  'InternalServerError',
  'ServiceUnavailable',
  'ServiceUnavailableException',
  'TimeoutError',
  'RequestTimeout',
]);

function classify(error) {
  if (error instanceof LockBusyError) return 'busy';
  // The wait ended while DynamoDB failed or did not answer, and no answer showed a holder: an outage.
  if (error instanceof LockUnavailableError) return 'transient';
  if (error === quiesceReason || error?.name === 'AbortError') return 'aborted';
  if (error instanceof DynamoLockError) return 'lock-error';
  if (TRANSIENT_NAMES.has(error?.name) || TRANSIENT_CODES.has(error?.code)) return 'transient';
  if ((error?.$metadata?.httpStatusCode ?? 0) >= 500) return 'transient';
  // Anything else (a ValidationException, a TypeError, ...) is a bug somewhere.
  return 'unexpected';
}

// ---- data writes through the fence ----

let dataWrites = 0;

/**
 * One write of `key`'s data item through the library's fence, reported before it is sent and when
 * it ends. Never throws: how it ended is the report.
 * @param {import('../dist/index.js').Lock} lock
 * @param {string} key
 * @param {'write' | 'last'} where
 */
async function dataWrite(lock, key, where) {
  const writeId = `${cfg.owner}.${++dataWrites}`;
  const token = lock.fencingToken;
  /** @type {'fencedWrite' | 'transact'} */
  const via = Math.random() < cfg.transactRate ? 'transact' : 'fencedWrite';
  send({ type: 'data-write', writeId, key, leaseId: lock.leaseId, token, via, where });
  /** @type {Omit<import('./protocol.mjs').DataWriteEndMessage, 'type' | 'writeId'>} */
  let end;
  try {
    const write = { table: cfg.dataTable, key, token, writeId };
    if (via === 'transact') await lock.transact([{ Update: dataUpdate({ ...write, stampFence: true }) }]);
    else await lock.fencedWrite({ Update: dataUpdate({ ...write, stampFence: false }) });
    end = { outcome: 'landed' };
  } catch (error) {
    if (error instanceof LockFencedError) end = { outcome: 'fenced', errorName: error.name, newerToken: error.newerToken };
    else if (error instanceof LockLostError) end = { outcome: 'lost', errorName: error.name };
    else if (error instanceof LockTransactionError && error.reasons.every((r) => r.code === 'None' || r.code === 'TransactionConflict'))
      // Another request wrote the lock item (a waiter joining the line) while the transaction ran.
      end = { outcome: 'conflict', errorName: error.name };
    else {
      const outcome = classify(error);
      end =
        outcome === 'transient'
          ? { outcome: 'failed', errorName: error?.name ?? error?.code }
          : { outcome: 'unexpected', errorName: error?.name, message: String(error?.stack ?? error).slice(0, 1_500) };
    }
  }
  send({ type: 'data-write-end', writeId, ...end });
}

// ---- critical sections ----

function markerPath(key) {
  return path.join(cfg.markerDir, `${cfg.keys.indexOf(key)}.inside`);
}

/** A protected section under `lock`: enter, checked writes, maybe one unchecked write, exit. */
async function section(lock, key, attemptId, resolvedAt, plan) {
  const leaseId = lock.leaseId;
  const token = lock.fencingToken;
  const marker = markerPath(key);
  const state = { markerMine: false, pauseReported: false, abandoned: false };

  /** @returns {MarkerClaim} */
  const claimMarker = () => {
    if (state.markerMine) return { status: 'mine' };
    for (let i = 0; i < 2; i++) {
      try {
        const fd = openSync(marker, 'wx');
        try {
          writeSync(fd, `${cfg.owner} ${leaseId} ${token}`);
        } finally {
          closeSync(fd);
        }
        state.markerMine = true;
        return { status: 'claimed' };
      } catch (error) {
        if (error?.code !== 'EEXIST') throw error;
        try {
          const [owner, otherLease, otherToken] = readFileSync(marker, 'utf8').split(' ');
          return { status: 'taken', owner, leaseId: otherLease, token: Number(otherToken) };
        } catch (readError) {
          if (readError?.code !== 'ENOENT') throw readError;
          // it was removed in between: try once more
        }
      }
    }
    return { status: 'busy' };
  };
  const dropMarker = () => {
    if (!state.markerMine) return;
    state.markerMine = false;
    try {
      unlinkSync(marker);
    } catch {
      // removed by the harness after it killed... never us while we live
    }
  };
  /** The documented check right before a protected write (`where`: enter, write or exit). */
  const check = (where) => {
    const at = now();
    const aborted = lock.signal.aborted;
    const frozenMs = longestFreezeSince(resolvedAt);
    if (frozenMs >= cfg.leaseMs && !state.pauseReported) {
      state.pauseReported = true;
      /** @type {Partial<import('./protocol.mjs').PauseCheckMessage>} */
      const detail = aborted
        ? {}
        : {
            where,
            heldForMs: Math.round(at - resolvedAt),
            freezes: freezes
              .filter((f) => f.start >= resolvedAt)
              .map((f) => [Math.round(f.start - resolvedAt), Math.round(f.end - resolvedAt)]),
            events: eventsFor(key, resolvedAt - t0 - 5_000).map((e) => ({ ...e, t: e.t - Math.round(resolvedAt - t0) })),
          };
      send({ type: 'pause-check', leaseId, key, frozenMs: Math.round(frozenMs), aborted, ...detail });
    }
    return { at, aborted };
  };

  const signal = lock.signal;
  const onAbort = () => {
    dropMarker();
    state.abandoned = true;
    send({ type: 'abandon', leaseId, key, reason: signal.reason?.reason ?? String(signal.reason?.name ?? signal.reason) });
  };
  if (signal.aborted) {
    check('enter');
    send({ type: 'abandon', leaseId, key, beforeEnter: true, reason: signal.reason?.reason ?? String(signal.reason) });
    return;
  }
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    let c = check('enter');
    if (c.aborted) return;
    let claim = claimMarker();
    const entered = await rpc({ type: 'enter', key, leaseId, token, attemptId, gapMs: now() - c.at, marker: claim });

    if (!entered.accepted) return;
    let lost = false;
    for (let step = 0; step < plan.writes && !lost; step++) {
      const until = now() + plan.holdMs / (plan.writes + 1);
      while (now() < until && !state.abandoned) await sleep(Math.min(40, Math.max(1, until - now())));
      c = check('write');
      if (c.aborted) {
        lost = true;
        break;
      }
      claim = claimMarker();
      const written = await rpc({
        type: 'write',
        key,
        leaseId,
        token,
        gapMs: now() - c.at,
        marker: claim.status === 'taken' ? claim : undefined,
      });
      if (!written.accepted) return;
      await dataWrite(lock, key, 'write');
    }
    if (!lost) {
      const until = now() + plan.holdMs / (plan.writes + 1);
      while (now() < until && !state.abandoned) await sleep(Math.min(40, Math.max(1, until - now())));
    }
    if (plan.unchecked) {
      // A careless client: one last write without checking the signal, even after losing the lock.
      // Only fencing protects the resource from it.
      await rpc({ type: 'write', key, leaseId, token, unchecked: true });
    }
    // The section's last data write, made whether or not the lock is still held: the fence decides.
    await dataWrite(lock, key, 'last');
  } finally {
    signal.removeEventListener('abort', onAbort);
    dropMarker();
    // Checked after leaving the marker: "still valid" here means valid all the time the marker existed.
    const { aborted } = check('exit');
    await rpc({ type: 'exit', key, leaseId, token, aborted, abandoned: state.abandoned });
  }
}

// ---- task loops ----

const keyHeld = new Map();
const keyEpoch = new Map();
let quiescing = false;
const quiesce = new AbortController();
const quiesceReason = new Error('quiesce');
quiesceReason.name = 'QuiesceError';

async function task(taskNo) {
  let n = 0;
  while (!quiescing) {
    const key = cfg.keys[Math.floor(Math.random() * cfg.keys.length)];
    const attemptId = `${cfg.owner}:${taskNo}:${++n}`;
    const siblingAtStart = (keyHeld.get(key) ?? 0) > 0;
    const epochAtStart = keyEpoch.get(key) ?? 0;
    send({ type: 'attempt', attemptId, key });
    const started = now();
    let lock;
    try {
      lock = await manager.acquire(key, { wait: cfg.waitMs, data: { chaos: attemptId }, signal: quiesce.signal });
    } catch (error) {
      const outcome = classify(error);
      const sibling = siblingAtStart || (keyEpoch.get(key) ?? 0) !== epochAtStart || (keyHeld.get(key) ?? 0) > 0;
      const holderOwner = error?.holder?.owner;
      send({
        type: 'attempt-end',
        attemptId,
        key,
        outcome,
        errorName: error?.name,
        message: outcome === 'unexpected' || outcome === 'lock-error' ? String(error?.stack ?? error).slice(0, 1_500) : undefined,
        holderOwner,
        sibling,
        warnings: outcome === 'busy' && holderOwner === cfg.owner ? warnings.last : undefined,
        startedAtMs: Math.round(started - t0),
        events: outcome === 'busy' ? eventsFor(key, started - t0) : undefined,
        waitedMs: Math.round(now() - started),
      });
      if (quiescing) break;
      await sleep(rand(20, 100));
      continue;
    }
    const resolvedAt = now();
    keyEpoch.set(key, (keyEpoch.get(key) ?? 0) + 1);
    keyHeld.set(key, (keyHeld.get(key) ?? 0) + 1);
    send({
      type: 'attempt-end',
      attemptId,
      key,
      outcome: 'acquired',
      leaseId: lock.leaseId,
      token: lock.fencingToken,
      waitedMs: Math.round(now() - started),
    });
    try {
      await section(lock, key, attemptId, resolvedAt, {
        writes: randInt(1, cfg.maxWrites),
        holdMs: rand(cfg.holdMinMs, cfg.holdMaxMs),
        unchecked: Math.random() < cfg.uncheckedRate,
      });
    } finally {
      keyHeld.set(key, keyHeld.get(key) - 1);
    }
    try {
      const released = await lock.release();
      send({ type: 'released', leaseId: lock.leaseId, key, released });
    } catch (error) {
      send({ type: 'release-error', leaseId: lock.leaseId, key, errorName: error?.name, outcome: classify(error) });
    }
    await sleep(rand(0, cfg.idleMaxMs));
  }
}

/**
 * Liveness set-up: take `key` and keep writing to it every 100 ms (checked) until the lock is
 * lost; then one last unchecked write, which fencing must reject once a newer holder wrote.
 */
async function holdKey(key) {
  const attemptId = `${cfg.owner}:hold:${key}`;
  send({ type: 'attempt', attemptId, key });
  const started = now();
  let lock;
  for (;;) {
    try {
      lock = await manager.acquire(key, { wait: cfg.waitMs, data: { chaos: attemptId } });
      break;
    } catch (error) {
      if (classify(error) !== 'transient' && classify(error) !== 'busy') throw error;
    }
  }
  const resolvedAt = now();
  send({
    type: 'attempt-end',
    attemptId,
    key,
    outcome: 'acquired',
    leaseId: lock.leaseId,
    token: lock.fencingToken,
    waitedMs: Math.round(now() - started),
  });
  send({ type: 'holding', key, leaseId: lock.leaseId, token: lock.fencingToken });
  // Careless at the end: once the lock is lost, one more write without checking (fencing must reject it).
  await section(lock, key, attemptId, resolvedAt, { writes: 1_000_000, holdMs: 100 * 1_000_001, unchecked: true });
  await lock.release().catch(() => undefined);
}

// ---- commands ----

let tasks = [];
let goResolve;
const go = new Promise((resolve) => (goResolve = resolve));

process.on('message', (/** @type {WorkerCommand | WorkerReply} */ message) => {
  if (message && 're' in message && message.re !== undefined) {
    const resolve = pending.get(message.re);
    pending.delete(message.re);
    resolve?.(message);
    return;
  }
  if (!('cmd' in message)) return;
  switch (message?.cmd) {
    case 'go':
      goResolve();
      break;
    case 'quiesce':
      void doQuiesce();
      break;
    case 'hold':
      void holdKey(message.key).catch((error) => crash(error));
      break;
    case 'close':
      void doClose();
      break;
  }
});

async function doQuiesce() {
  quiescing = true;
  quiesce.abort(quiesceReason);
  await Promise.allSettled(tasks);
  send({ type: 'idle', heldCount: manager.heldCount, warnings });
}

async function doClose() {
  if (exiting) return;
  quiescing = true;
  quiesce.abort(quiesceReason);
  await Promise.allSettled(tasks);
  exiting = true;
  await manager.close().catch(() => undefined);
  /** @type {WorkerMessage} */
  const closed = { type: 'closed', warnings };
  await new Promise((resolve) => (process.connected && process.send ? process.send(closed, () => resolve(undefined)) : resolve(undefined)));
  process.exit(0);
}

function crash(error) {
  send({ type: 'crash', stack: String(error?.stack ?? error).slice(0, 3_000) });
  setTimeout(() => process.exit(70), 50);
}

process.on('disconnect', () => {
  if (!exiting) process.exit(3);
});
process.on('uncaughtException', crash);
process.on('unhandledRejection', crash);

async function main() {
  // Warm up through the proxy (faults may be on already): loads the SDK, opens a connection.
  for (let i = 0; ; i++) {
    try {
      await manager.inspect('__warm-up__');
      break;
    } catch (error) {
      if (i >= 20) throw error;
      await sleep(50);
    }
  }
  send({ type: 'ready', dateNow: Date.now(), skewMs: globalThis.__clockSkewMs ?? 0 });
  if (!cfg.autoGo) await go;
  if (cfg.tasks > 0) tasks = Array.from({ length: cfg.tasks }, (_, i) => task(i));
}

main().catch(crash);

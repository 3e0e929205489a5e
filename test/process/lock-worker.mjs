/**
 * A separate OS process that uses the built library (`dist/`) the way an application
 * instance would, driven by `test/process/multi-process.spec.ts`.
 *
 * Configuration: one JSON argument (see `WorkerConfig` in the spec). Reports: IPC messages
 * `{ type, pid, at, ...fields }` where `at` is this process's `performance.now()` (only
 * meaningful within this process). Commands from the parent over IPC: `{ cmd: 'go' }`,
 * `{ cmd: 'release' }`.
 *
 * Overlap detection never compares clocks across processes: a critical section creates a
 * marker file with `O_CREAT | O_EXCL` (`'wx'`) and removes it when it leaves; a second
 * process entering while the marker exists gets EEXIST, which is reported as an overlap.
 * Protected "writes" are appended to a shared file, so their real order is the file's order.
 *
 * Modes:
 * - `loop`:    `count` times: acquire → section of `sectionMs` (marker, one log line) → release.
 * - `hold`:    acquire once, then "write" every `writeEveryMs` after checking `lock.signal`
 *              until `holdMs` passed, the parent sends `release`, or the lock is lost.
 * - `contend`: acquire with `waitMs` again and again (reporting each LockBusyError) until it
 *              gets the lock, then one short section and release.
 *
 * SIGTERM (when `onTerm` is set): `'close'` leaves the section, calls `manager.close()` and
 * exits 0; `'close-keep-working'` calls `manager.close()` while the section keeps running
 * (as a job would that nobody told about the shutdown) and exits after `exitDelayMs`.
 */
import { appendFileSync, closeSync, openSync, readFileSync, unlinkSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { LockBusyError, LockManager } from '../../dist/index.js';

const config = JSON.parse(process.argv[2] ?? '{}');
const now = () => performance.now();
const round = (ms) => Math.round(ms * 10) / 10;

/** A pause of the event loop longer than this counts as "the process was stopped". */
const PAUSE_GAP_MS = config.pauseGapMs ?? 1_000;

function send(type, fields = {}) {
  if (!process.connected) return Promise.resolve();
  return new Promise((resolve) => {
    try {
      process.send({ type, pid: process.pid, owner: config.owner, at: round(now()), ...fields }, () => resolve());
    } catch {
      resolve();
    }
  });
}

const logger = {
  log: (message) => void send('log', { level: 'log', message: String(message) }),
  warn: (message) => void send('log', { level: 'warn', message: String(message) }),
  error: (message) => void send('log', { level: 'error', message: String(message) }),
  debug: () => undefined,
  verbose: () => undefined,
};

const manager = new LockManager({
  tableName: config.table,
  ownerName: config.owner,
  verifyTable: false,
  heartbeatInterval: config.heartbeatMs,
  logger,
  clientConfig: {
    endpoint: config.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  },
});

// ---- critical-section marker and protected writes ----

let markerMine = false;

/** Enters the section: creates the marker exclusively. Returns false (and reports) on overlap. */
function enterSection(token) {
  if (!config.markerPath) return true;
  try {
    const fd = openSync(config.markerPath, 'wx');
    try {
      appendFileSync(fd, `${config.owner} ${token}`);
    } finally {
      closeSync(fd);
    }
    markerMine = true;
    return true;
  } catch (error) {
    if (error?.code !== 'EEXIST') throw error;
    let inside = '?';
    try {
      inside = readFileSync(config.markerPath, 'utf8');
    } catch {
      // it left in the meantime
    }
    void send('overlap', { token, inside });
    return false;
  }
}

/** Leaves the section: removes the marker if this process created it. */
function leaveSection() {
  if (!markerMine) return;
  markerMine = false;
  unlinkSync(config.markerPath);
}

/** A protected write: one line appended to the shared log, in real order. */
function protectedWrite(token, detail = '') {
  if (config.logPath) appendFileSync(config.logPath, `${config.owner} ${token}${detail ? ` ${detail}` : ''}\n`);
}

// ---- commands and signals ----

let goResolve;
const go = new Promise((resolve) => (goResolve = resolve));
let releaseRequested = false;
let terminating = false;
let stopSection = false;
let contAt;

process.on('message', (message) => {
  if (message?.cmd === 'go') goResolve();
  if (message?.cmd === 'release') releaseRequested = true;
});
// The parent is gone (or closed the channel): nobody can observe or clean up after us.
process.on('disconnect', () => {
  if (!terminating) process.exit(3);
});
process.on('SIGCONT', () => {
  contAt = now();
});
if (config.onTerm) {
  process.on('SIGTERM', () => void onTerm());
}

async function onTerm() {
  if (terminating) return;
  terminating = true;
  const termAt = now();
  if (config.onTerm === 'close') {
    // A well-behaved shutdown: stop the section's work, leave it, then release everything.
    stopSection = true;
    leaveSection();
    await manager.close();
    await send('closed', { closeMs: round(now() - termAt) });
    process.exit(0);
  }
  if (config.onTerm === 'close-keep-working') {
    // Shutdown hooks release the locks while a locked job is still running (it is never told).
    await manager.close();
    await send('closed', { closeMs: round(now() - termAt) });
    await sleep(config.exitDelayMs ?? 1_000);
    stopSection = true;
    await send('exiting', { ...sectionStats });
    process.exit(0);
  }
}

async function finish(code = 0) {
  terminating = true;
  await manager.close().catch(() => undefined);
  await send('exit', { code });
  process.exit(code);
}

// ---- modes ----

const sectionStats = { writes: 0, writesAfterPause: 0, writesNotHeld: 0, maxGapMs: 0 };

async function loopMode() {
  const tokens = [];
  for (let i = 0; i < config.count; i++) {
    const waitFrom = now();
    const lock = await manager.acquire(config.key, { leaseDuration: config.leaseMs, wait: config.waitMs });
    const waitedMs = round(now() - waitFrom);
    const entered = enterSection(lock.fencingToken);
    protectedWrite(lock.fencingToken, String(i));
    tokens.push(lock.fencingToken);
    void send('acquired', { token: lock.fencingToken, i, waitedMs, entered });
    await sleep(config.sectionMs ?? 10);
    if (lock.signal.aborted) void send('lost', { token: lock.fencingToken, i, reason: lock.signal.reason?.reason });
    if (entered) leaveSection();
    const released = await lock.release();
    if (!released) void send('release-failed', { token: lock.fencingToken, i });
    // A short random pause outside the lock, so the other processes get a chance at it.
    await sleep(Math.random() * (config.pauseMaxMs ?? 0));
  }
  await send('done', { count: tokens.length, tokens });
}

async function holdMode() {
  const lock = await manager.acquire(config.key, { leaseDuration: config.leaseMs, wait: config.waitMs ?? false });
  let abortAt;
  lock.signal.addEventListener('abort', () => (abortAt = now()), { once: true });
  const entered = enterSection(lock.fencingToken);
  const acquiredAt = now();
  await send('acquired', { token: lock.fencingToken, entered, acquiredAtMs: lock.acquiredAt.getTime() });

  let last = now();
  let resumedAt;
  let pauseMs = 0;
  let seq = 0;
  let lost;
  for (;;) {
    const t = now();
    const gap = t - last;
    last = t;
    sectionStats.maxGapMs = Math.max(sectionStats.maxGapMs, round(gap));
    if (gap > PAUSE_GAP_MS && resumedAt === undefined) {
      resumedAt = t;
      pauseMs = gap;
    }
    if (stopSection) break;
    // The documented check right before a protected write.
    if (lock.signal.aborted) {
      const reason = lock.signal.reason;
      lost = {
        reason: reason?.reason,
        errorName: reason?.name,
        message: reason?.message,
        pauseMs: round(pauseMs),
        // How long after the process resumed the loss was known (abort event), by each witness.
        // The SIGCONT handler may run only after the timers that find the lease expired.
        contHandlerRanFirst: contAt !== undefined && abortAt !== undefined && contAt <= abortAt,
        abortAfterFirstWakeMs: resumedAt === undefined || abortAt === undefined ? null : round(abortAt - resumedAt),
      };
      break;
    }
    protectedWrite(lock.fencingToken, String(seq++));
    sectionStats.writes++;
    if (resumedAt !== undefined) sectionStats.writesAfterPause++;
    if (!lock.isHeld) sectionStats.writesNotHeld++;
    if (releaseRequested) break;
    if (config.holdMs !== undefined && now() - acquiredAt >= config.holdMs) break;
    await sleep(config.writeEveryMs ?? 20);
  }
  if (stopSection) {
    // SIGTERM handling owns the rest (it exits the process).
    await new Promise(() => undefined);
  }
  if (entered) leaveSection();
  if (lost) {
    await send('lost', { token: lock.fencingToken, ...lost, ...sectionStats });
    const released = await lock.release();
    await send('released', { token: lock.fencingToken, released, ...sectionStats });
  } else {
    const released = await lock.release();
    await send('released', { token: lock.fencingToken, released, heldMs: round(now() - acquiredAt), ...sectionStats });
  }
  await finish(0);
}

async function contendMode() {
  const started = now();
  await send('waiting');
  let busy = 0;
  for (;;) {
    const from = now();
    let lock;
    try {
      lock = await manager.acquire(config.key, { leaseDuration: config.leaseMs, wait: config.waitMs });
    } catch (error) {
      if (!(error instanceof LockBusyError)) throw error;
      busy++;
      await send('busy', { waitedMs: round(now() - from), holder: error.holder?.owner ?? null });
      if (now() - started > (config.contendForMs ?? 30_000)) {
        await send('gave-up', { busy });
        return finish(0);
      }
      continue;
    }
    const entered = enterSection(lock.fencingToken);
    protectedWrite(lock.fencingToken, 'contender');
    await send('acquired', {
      token: lock.fencingToken,
      busy,
      waitedMs: round(now() - from),
      totalMs: round(now() - started),
      entered,
      acquiredAtMs: lock.acquiredAt.getTime(),
    });
    await sleep(config.sectionMs ?? 10);
    if (entered) leaveSection();
    const released = await lock.release();
    await send('released', { token: lock.fencingToken, released });
    return finish(0);
  }
}

async function main() {
  // Warm up: one read loads the SDK's lazy parts and opens a connection, so timings that
  // follow measure the lock, not the process start.
  await manager.inspect('__warm-up__');
  await send('ready', { dateNow: Date.now(), skewMs: globalThis.__clockSkewMs ?? 0 });
  if (config.waitForGo) await go;
  switch (config.mode) {
    case 'loop':
      await loopMode();
      return finish(0);
    case 'hold':
      return holdMode();
    case 'contend':
      return contendMode();
    default:
      throw new Error(`unknown mode ${config.mode}`);
  }
}

main().catch(async (error) => {
  await send('error', { name: error?.name, message: error?.message, stack: error?.stack });
  await finish(1);
});

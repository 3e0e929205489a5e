/**
 * Scenario 7: waiting at scale, as DynamoDB bills it. N participants on one key, each its own
 * `LockManager` from dist/ (as separate app instances would be: no shared local queue), spread
 * over up to 4 worker processes (one DynamoDB client per process), library defaults (30 s lease).
 * Each loops acquire (wait) → hold 20 ms → release for a window. The counting proxy meters the
 * table's capacity (`support/counting-proxy.mjs`): WCU and RCU per acquisition, server-reported
 * where the server reports them, and the largest item.
 *
 * Counting starts once every participant has asked once and was answered (queued or granted),
 * and at least `settleMs` after the start, so the window shows steady waiting rather than N first
 * asks at once (at N = 1,000 those take seconds: counted, they were a failed free write per
 * participant); the row says how long that took. The largest item is over the table's whole life,
 * settling included. Also measured per N: fairness (smallest
 * participant's share / the mean share), FIFO inversions (a grant that overtook a
 * caller of the same process that asked within the window, at least `fifoSlackMs` earlier, and
 * was still waiting; asks closer than that are taken as simultaneous, since their writes can
 * reach the table in either order; the count with no slack is kept too, and so is the count of
 * callers overtaken that asked in the start-up burst), overlaps (grant → release intervals of
 * any two participants, on `performance.timeOrigin + performance.now()`, that overlap by more
 * than 2 ms, the cross-process clock error allowed) and acquisitions/s.
 *
 * The graceful-stop and dead-queued-waiter measurements are in `waiting-stops.mjs`; the
 * throughput of 4 processes × 20 ms holds is the cross-process scenario's (run alongside).
 */
import http from 'node:http';
import { setMaxListeners } from 'node:events';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { LockManager } from '../../dist/index.js';
import { capacityTotals, diffCapacity, diffCounts, totals } from '../support/counting-proxy.mjs';
import { makeClient } from '../support/client.mjs';
import { measureWindow, prepareWorkers } from '../support/window.mjs';
import { holdFor, round, sleepUntil, summarize, wall } from '../support/stats.mjs';
import { forkWorker, isMain, workerMain } from '../support/worker.mjs';
import { createTable } from '../systems/index.mjs';
import { deadQueuedWaiters, gracefulStop } from './waiting-stops.mjs';

/** Overlap of two holders' intervals that counts (ms): more than the cross-process clock error. */
const OVERLAP_SLACK_MS = 2;
/**
 * Event-loop delay p99 (ms) in a worker above which a row is flagged: the machine did not keep
 * up with the row's request rate, so its figures measure the machine as much as the lock.
 */
const OVERLOAD_P99_MS = 100;

export async function run(ctx, { rows, processes, holdMs, settleMs, fifoSlackMs, graceful, deadWaiters }) {
  const out = { holdMs, settleMs, fifoSlackMs, processes, rows: [] };
  const live = rows.filter((r) => !r.skip);
  // One set of processes runs every row in turn (start-up is slow); a row of n < processes uses n of them.
  const pool = Array.from({ length: Math.min(processes, Math.max(...live.map((r) => r.n), 1)) }, (_, index) =>
    forkWorker(import.meta.url, { role: 'participants', endpoint: ctx.proxy.endpoint, index }),
  );
  try {
    for (const row of rows) {
      if (row.skip) {
        out.rows.push({ n: row.n, skipped: row.skip });
        continue;
      }
      const t0 = wall();
      const result = await measureRow(ctx, pool.slice(0, Math.min(row.n, pool.length)), row, { holdMs, settleMs, fifoSlackMs });
      result.rowSeconds = round((wall() - t0) / 1000, 1);
      out.rows.push(result);
      process.stderr.write(` n=${row.n} (${result.rowSeconds} s)`);
    }
  } finally {
    for (const w of pool) w.send('prepare', { exit: true });
    await Promise.all(pool.map((w) => w.exited));
  }
  for (const [name, measure, settings] of [
    ['graceful', gracefulStop, graceful],
    ['deadWaiters', deadQueuedWaiters, deadWaiters],
  ]) {
    const t0 = wall();
    out[name] = await measure(ctx, settings);
    process.stderr.write(` ${name} (${round((wall() - t0) / 1000, 1)} s)`);
  }
  return out;
}

async function measureRow(ctx, workers, { n, windowMs }, { holdMs, settleMs, fifoSlackMs }) {
  const table = ctx.table(`s7-n${n}`);
  await createTable(ctx.admin, 'ours', table);
  await ctx.proxy.meter([table]);
  const P = workers.length;
  const setupFrom = wall();
  const ready = await prepareWorkers(workers, n, { table, holdMs, fifoSlackMs });
  const setupMs = wall() - setupFrom;
  const { startAt, askedAt, measureFrom, endAt, countsBefore, countsAfter, capBefore, capAfter, reports } = await measureWindow(
    ctx,
    workers,
    { settleMs, windowMs, untilAsked: true },
  );

  // Grants: [participant, askedAt, grantedAt, releasedAt, anyAsk, beyondAsk] per process: the latest
  // ask of the same process each grant overtook (any earlier one, one beyond the slack), or null.
  const all = reports.flatMap((r, p) =>
    r.grants.map(([i, askedAt, grantedAt, releasedAt, anyAsk, beyondAsk]) => ({
      who: `${p}:${i}`,
      askedAt,
      grantedAt,
      releasedAt,
      anyAsk,
      beyondAsk,
    })),
  );
  const inWindow = all.filter((g) => g.grantedAt >= measureFrom && g.grantedAt <= endAt).sort((a, b) => a.grantedAt - b.grantedAt);
  const acquisitions = inWindow.length;
  const perParticipant = new Map();
  reports.forEach((r, p) => {
    for (let i = 0; i < r.participants; i++) perParticipant.set(`${p}:${i}`, 0);
  });
  for (const g of inWindow) perParticipant.set(g.who, perParticipant.get(g.who) + 1);
  const mean = acquisitions / n;
  const shares = [...perParticipant.values()];
  const span = acquisitions > 1 ? inWindow.at(-1).grantedAt - inWindow[0].grantedAt : 0;
  // Hand-over: a release call to the next grant (the line's own delay, holds aside).
  const handOvers = inWindow.slice(1).flatMap((g, k) => (inWindow[k].releasedAt == null ? [] : [g.grantedAt - inWindow[k].releasedAt]));
  const cap = capacityTotals(diffCapacity(capBefore, capAfter, table));
  const t = totals(diffCounts(countsBefore, countsAfter, table));
  const per = (v) => (acquisitions ? round(v / acquisitions, 3) : null);
  return {
    n,
    processes: P,
    windowMs,
    setupSeconds: round(setupMs / 1000, 1),
    askedSeconds: round((askedAt - startAt) / 1000, 1),
    managerStartMs: round(Math.max(...ready.map((r) => r.setupMs))),
    acquisitions,
    perSecond: span > 0 ? round(((acquisitions - 1) / span) * 1000) : 0,
    handOverMs: summarize(handOvers),
    wcuPerAcquisition: per(cap.wcu),
    rcuPerAcquisition: per(cap.rcu),
    computedWcuPerAcquisition: per(cap.computed.wcu),
    computedRcuPerAcquisition: per(cap.computed.rcu),
    capacitySource: cap.source,
    failedWritesPerAcquisition: per(cap.failedWrites),
    failedWriteWcuPerAcquisition: per(cap.failedWriteUnits),
    writesPerAcquisition: per(t.writes),
    readsPerAcquisition: per(t.strongReads + t.eventualReads),
    requestsPerAcquisition: per(t.requests),
    maxItemBytes: cap.maxItemBytes,
    unmeteredRequests: cap.unmetered,
    minShare: mean > 0 ? round(Math.min(...shares) / mean, 3) : null,
    maxShare: mean > 0 ? round(Math.max(...shares) / mean, 3) : null,
    participantsWithoutGrant: shares.filter((s) => s === 0).length,
    // Steady waiting: the caller overtaken asked within the window. The first asks of the start-up
    // burst each try the free lock before they queue (a failed write first), so a participant's
    // second ask can queue ahead of another's first: counted apart.
    fifoInversions: inWindow.filter((g) => g.beyondAsk !== null && g.beyondAsk >= measureFrom).length,
    fifoInversionsAnySlack: inWindow.filter((g) => g.anyAsk !== null && g.anyAsk >= measureFrom).length,
    fifoInversionsOfStartUpAsks: inWindow.filter((g) => g.beyondAsk !== null && g.beyondAsk < measureFrom).length,
    overlaps: countOverlaps(all),
    eventLoopP99Ms: round(Math.max(...reports.map((r) => r.eldP99Ms))),
    overloaded: Math.max(...reports.map((r) => r.eldP99Ms)) > OVERLOAD_P99_MS,
    overloadP99Ms: OVERLOAD_P99_MS,
    otherErrors: t.otherErrors,
    errors: mergeCounts(reports.map((r) => r.errors)),
    warnings: reports.flatMap((r) => r.warnings).slice(0, 5),
  };
}

/** Grants whose interval starts more than the slack before an earlier grant's interval ended. */
function countOverlaps(grants) {
  const sorted = grants.filter((g) => g.releasedAt != null).sort((a, b) => a.grantedAt - b.grantedAt);
  let overlaps = 0;
  let end = -Infinity;
  for (const g of sorted) {
    if (g.grantedAt < end - OVERLAP_SLACK_MS) overlaps++;
    end = Math.max(end, g.releasedAt);
  }
  return overlaps;
}

function mergeCounts(list) {
  const out = {};
  for (const counts of list) for (const [k, v] of Object.entries(counts)) out[k] = (out[k] ?? 0) + v;
  return out;
}

async function participants(config, io) {
  // One client per process, with sockets enough for every participant's request at once.
  const client = makeClient(config.endpoint, { requestHandler: { httpAgent: new http.Agent({ keepAlive: true, maxSockets: 1024 }) } });
  for (;;) {
    const { exit, table, count, holdMs, fifoSlackMs } = await io.next('prepare');
    if (exit) return;
    const t0 = performance.now();
    const warnings = [];
    const keep = (message) => warnings.length < 20 && warnings.push(String(message));
    const logger = { log() {}, warn: keep, error: keep, debug() {}, verbose() {} };
    const managers = Array.from(
      { length: count },
      (_, i) => new LockManager({ tableName: table, client, ownerName: `w${config.index}-${i}`, verifyTable: false, logger }),
    );
    // Warm-up (connections, JIT) on another key, before the window is counted.
    await (await managers[0].acquire('warm-up')).release();
    await io.send('ready', { setupMs: performance.now() - t0 });
    // The window's end comes once every participant of every process asked once (see measureWindow).
    const { startAt } = await io.next('go');
    let endAt = Number.POSITIVE_INFINITY;
    const windowSet = io.next('window', 600_000).then((m) => (endAt = m.endAt));
    /** Participants whose first ask was answered (queued, granted, or refused). */
    const asked = new Set();
    const noteAsked = (i) => {
      if (asked.has(i)) return;
      asked.add(i);
      if (asked.size === count) void io.send('asked', {});
    };
    const unsubscribe = managers.map((m, i) => m.subscribe((event) => event.type === 'waiting' && noteAsked(i)));
    await sleepUntil(startAt);
    const stop = new AbortController();
    setMaxListeners(0, stop.signal);
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    const grants = [];
    const errors = {};
    /** Participants of this process waiting now: index → { ticket, askedAt }. */
    const waiting = new Map();
    let tickets = 0;
    const participant = async (m, i) => {
      while (wall() < endAt) {
        const ticket = tickets++;
        const askedAt = wall();
        waiting.set(i, { ticket, askedAt });
        let lock;
        try {
          lock = await m.acquire('hot', { wait: true, signal: stop.signal });
        } catch (error) {
          waiting.delete(i);
          noteAsked(i);
          if (stop.signal.aborted) return;
          const name = `${error?.name ?? 'Error'}: ${String(error?.message ?? error).slice(0, 120)}`;
          errors[name] = (errors[name] ?? 0) + 1;
          await sleep(50);
          continue;
        }
        waiting.delete(i);
        noteAsked(i);
        const grantedAt = wall();
        // The latest ask this grant overtook (null: none), any earlier one and one beyond the slack.
        let anyAsk = null;
        let beyondAsk = null;
        for (const other of waiting.values()) {
          if (other.ticket < ticket) anyAsk = Math.max(anyAsk ?? 0, round(other.askedAt, 3));
          if (other.askedAt < askedAt - fifoSlackMs) beyondAsk = Math.max(beyondAsk ?? 0, round(other.askedAt, 3));
        }
        const grant = [i, round(askedAt, 3), round(grantedAt, 3), undefined, anyAsk, beyondAsk];
        grants.push(grant);
        await holdFor(Math.min(holdMs, Math.max(0, endAt - wall())));
        grant[3] = round(wall(), 3);
        try {
          await lock.release();
        } catch (error) {
          const name = `release: ${error?.name ?? 'Error'}`;
          errors[name] = (errors[name] ?? 0) + 1;
        }
      }
    };
    const all = Promise.all(managers.map(participant));
    await windowSet;
    await sleepUntil(endAt);
    for (const off of unsubscribe) off();
    stop.abort();
    await Promise.race([all, sleep(5_000)]);
    delay.disable();
    await Promise.allSettled(managers.map((m) => m.close()));
    await io.send('done', {
      participants: count,
      grants,
      errors,
      warnings: warnings.slice(0, 5),
      eldP99Ms: delay.percentile(99) / 1e6,
    });
  }
}

if (isMain(import.meta.url)) workerMain(participants);

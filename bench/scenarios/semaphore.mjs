/**
 * Scenario 9: counting semaphores (`acquire(key, { limit })`), as DynamoDB bills them. N
 * participants on one key, each its own `LockManager` from dist/ (as separate app instances),
 * spread over up to 4 worker processes; each loops acquire (wait) → hold → release for a window.
 * The counting proxy meters the table's capacity: WCU and RCU per acquisition (server-reported
 * where the server reports them, failed conditional writes included), and the largest item.
 * Counting starts `settleMs` after the start (steady waiting, not N first asks at once).
 *
 * Also per row: fairness (the smallest participant's share of the grants / the mean share),
 * the most holders at once (from grant → release intervals on `performance.timeOrigin +
 * performance.now()`, with 2 ms allowed for the cross-process clock error; a check, not a proof:
 * the proof is in test/process), acquisitions/s. The row "at the largest limit" fills a
 * semaphore of limit 32 with 32 holders, for the largest item and the write units it costs.
 */
import http from 'node:http';
import { setMaxListeners } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { LockManager } from '../../dist/index.js';
import { capacityTotals, diffCapacity, diffCounts, totals } from '../support/counting-proxy.mjs';
import { makeClient } from '../support/client.mjs';
import { measureWindow, prepareWorkers } from '../support/window.mjs';
import { holdFor, round, sleepUntil, wall } from '../support/stats.mjs';
import { forkWorker, isMain, workerMain } from '../support/worker.mjs';
import { createTable } from '../systems/index.mjs';

const OVERLAP_SLACK_MS = 2;

export async function run(ctx, { rows, processes, settleMs }) {
  const out = { settleMs, processes, rows: [] };
  const pool = Array.from({ length: processes }, (_, index) =>
    forkWorker(import.meta.url, { role: 'semaphore', endpoint: ctx.proxy.endpoint, index }),
  );
  try {
    for (const row of rows) {
      const t0 = wall();
      const result = await measureRow(ctx, pool.slice(0, Math.min(row.n, pool.length)), row, settleMs);
      result.rowSeconds = round((wall() - t0) / 1000, 1);
      out.rows.push(result);
      process.stderr.write(` n=${row.n}/limit=${row.limit} (${result.rowSeconds} s)`);
    }
  } finally {
    for (const w of pool) w.send('prepare', { exit: true });
    await Promise.all(pool.map((w) => w.exited));
  }
  return out;
}

async function measureRow(ctx, workers, { n, limit, holdMs, windowMs }, settleMs) {
  const table = ctx.table(`s8-n${n}-l${limit}-h${holdMs}`);
  await createTable(ctx.admin, 'ours', table);
  await ctx.proxy.meter([table]);
  const P = workers.length;
  await prepareWorkers(workers, n, { table, limit, holdMs });
  const { measureFrom, endAt, countsBefore, countsAfter, capBefore, capAfter, reports } = await measureWindow(ctx, workers, {
    settleMs,
    windowMs,
  });
  const all = reports.flatMap((r, p) =>
    r.grants.map(([i, grantedAt, releasedAt, token]) => ({ who: `${p}:${i}`, grantedAt, releasedAt, token })),
  );
  const inWindow = all.filter((g) => g.grantedAt >= measureFrom && g.grantedAt <= endAt).sort((a, b) => a.grantedAt - b.grantedAt);
  const acquisitions = inWindow.length;
  const perParticipant = new Map();
  reports.forEach((r, p) => {
    for (let i = 0; i < r.participants; i++) perParticipant.set(`${p}:${i}`, 0);
  });
  for (const g of inWindow) perParticipant.set(g.who, perParticipant.get(g.who) + 1);
  const shares = [...perParticipant.values()];
  const mean = acquisitions / n;
  const span = acquisitions > 1 ? inWindow.at(-1).grantedAt - inWindow[0].grantedAt : 0;
  const cap = capacityTotals(diffCapacity(capBefore, capAfter, table));
  const t = totals(diffCounts(countsBefore, countsAfter, table));
  const per = (v) => (acquisitions ? round(v / acquisitions, 3) : null);
  return {
    n,
    limit,
    holdMs,
    processes: P,
    windowMs,
    acquisitions,
    perSecond: span > 0 ? round(((acquisitions - 1) / span) * 1000) : 0,
    wcuPerAcquisition: per(cap.wcu),
    rcuPerAcquisition: per(cap.rcu),
    capacitySource: cap.source,
    failedWritesPerAcquisition: per(cap.failedWrites),
    writesPerAcquisition: per(t.writes),
    readsPerAcquisition: per(t.strongReads + t.eventualReads),
    maxItemBytes: cap.maxItemBytes,
    minShare: mean > 0 ? round(Math.min(...shares) / mean, 3) : null,
    participantsWithoutGrant: shares.filter((s) => s === 0).length,
    mostInside: mostInside(all),
    duplicateTokens: all.length - new Set(all.map((g) => g.token)).size,
    otherErrors: t.otherErrors,
    errors: Object.assign({}, ...reports.map((r) => r.errors)),
  };
}

/** The most grant → release intervals open at once (an interval starting within the slack of another's end does not count). */
function mostInside(grants) {
  const edges = grants
    .filter((g) => g.releasedAt != null)
    .flatMap((g) => [
      [g.grantedAt, 1],
      [g.releasedAt - OVERLAP_SLACK_MS, -1],
    ])
    .sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let now = 0;
  let most = 0;
  for (const [, d] of edges) most = Math.max(most, (now += d));
  return most;
}

async function participants(config, io) {
  const client = makeClient(config.endpoint, { requestHandler: { httpAgent: new http.Agent({ keepAlive: true, maxSockets: 1024 }) } });
  for (;;) {
    const { exit, table, count, limit, holdMs } = await io.next('prepare');
    if (exit) return;
    const logger = { log() {}, warn() {}, error() {}, debug() {}, verbose() {} };
    const managers = Array.from(
      { length: count },
      (_, i) => new LockManager({ tableName: table, client, ownerName: `w${config.index}-${i}`, verifyTable: false, logger }),
    );
    // Warm-up (connections, JIT) on another key, before the window is counted.
    await (await managers[0].acquire('warm-up', { limit })).release();
    await io.send('ready');
    const { startAt, endAt } = await io.next('go');
    await sleepUntil(startAt);
    const stop = new AbortController();
    setMaxListeners(0, stop.signal);
    const grants = [];
    const errors = {};
    const participant = async (m, i) => {
      while (wall() < endAt) {
        let lock;
        try {
          lock = await m.acquire('hot', { limit, wait: true, signal: stop.signal });
        } catch (error) {
          if (stop.signal.aborted) return;
          const name = `${error?.name ?? 'Error'}: ${String(error?.message ?? error).slice(0, 120)}`;
          errors[name] = (errors[name] ?? 0) + 1;
          await sleep(50);
          continue;
        }
        const grant = [i, round(wall(), 3), undefined, lock.fencingToken];
        grants.push(grant);
        await holdFor(Math.min(holdMs, Math.max(0, endAt - wall())));
        grant[2] = round(wall(), 3);
        await lock.release().catch(() => undefined);
      }
    };
    const all = Promise.all(managers.map(participant));
    await sleepUntil(endAt);
    stop.abort();
    await Promise.race([all, sleep(5_000)]);
    await Promise.allSettled(managers.map((m) => m.close()));
    await io.send('done', { participants: count, grants, errors });
  }
}

if (isMain(import.meta.url)) workerMain(participants);

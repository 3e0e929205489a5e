/**
 * Scenario 7b: waiting at scale for the other systems, so the waiting axis has a line per system
 * that can run it. As in scenario 7 (ours): N participants on one key, each its own lock instance
 * (as separate app instances would be), spread over up to 4 worker processes (one DynamoDB client
 * per process), the same lease as ours there (30 s, our library default; heartbeats every third).
 * Each loops acquire (wait) → hold 20 ms → release for a window, counted after `settleMs`.
 * Measured per N: acquisitions/s, WCU and RCU per acquisition as the counting proxy meters them,
 * write-equivalents and requests per acquisition, the smallest participant's share / the mean
 * share, participants never granted, and the workers' event-loop delay p99 (a row is flagged when
 * it lags: the machine did not keep up with the row's requests). A row `{ n, skip: 'why' }` is
 * not run and says why.
 */
import http from 'node:http';
import { setMaxListeners } from 'node:events';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { capacityTotals, diffCapacity, diffCounts, totals } from '../support/counting-proxy.mjs';
import { makeClient } from '../support/client.mjs';
import { measureWindow, prepareWorkers } from '../support/window.mjs';
import { holdFor, round, sleepUntil, wall } from '../support/stats.mjs';
import { forkWorker, isMain, workerMain } from '../support/worker.mjs';
import { createTable, openSystem } from '../systems/index.mjs';

/** Event-loop delay p99 (ms) in a worker above which a row is flagged (as in scenario 7). */
const OVERLOAD_P99_MS = 100;

/**
 * Runs the rows of `rows[id]` (`[{ n, windowMs } | { n, skip }]`) for each system of `systems`
 * that this run compares; returns `{ holdMs, settleMs, leaseMs, processes, systems: { [id]: { rows } } }`.
 */
export async function run(ctx, { systems, rows, processes, holdMs, settleMs, leaseMs }) {
  const out = { holdMs, settleMs, leaseMs, processes, systems: {} };
  for (const id of systems.filter((s) => ctx.locks.includes(s))) {
    const live = rows[id].filter((r) => !r.skip);
    // One set of processes per system runs its rows in turn; a row of n < processes uses n of them.
    const pool = Array.from({ length: Math.min(processes, Math.max(...live.map((r) => r.n), 1)) }, (_, index) =>
      forkWorker(import.meta.url, { role: 'participants', system: id, endpoint: ctx.proxy.endpoint, index }),
    );
    const results = [];
    try {
      for (const row of rows[id]) {
        if (row.skip) {
          results.push({ n: row.n, skipped: row.skip });
          continue;
        }
        const t0 = wall();
        const result = await measureRow(ctx, id, pool.slice(0, Math.min(row.n, pool.length)), row, { holdMs, settleMs, leaseMs });
        result.rowSeconds = round((wall() - t0) / 1000, 1);
        results.push(result);
        process.stderr.write(` ${id} n=${row.n} (${result.rowSeconds} s)`);
      }
    } finally {
      for (const w of pool) w.send('prepare', { exit: true });
      await Promise.all(pool.map((w) => w.exited));
    }
    out.systems[id] = { rows: results };
  }
  return out;
}

async function measureRow(ctx, id, workers, { n, windowMs }, { holdMs, settleMs, leaseMs }) {
  const table = ctx.table(`s7b-${id}-n${n}`);
  await createTable(ctx.admin, id, table);
  await ctx.proxy.meter([table]);
  const P = workers.length;
  await prepareWorkers(workers, n, { table, holdMs, leaseMs });
  const { measureFrom, endAt, countsBefore, countsAfter, capBefore, capAfter, reports } = await measureWindow(ctx, workers, {
    settleMs,
    windowMs,
  });
  const grants = reports
    .flatMap((r, p) => r.grants.map(([i, grantedAt]) => ({ who: `${p}:${i}`, grantedAt })))
    .filter((g) => g.grantedAt >= measureFrom && g.grantedAt <= endAt)
    .sort((a, b) => a.grantedAt - b.grantedAt);
  const acquisitions = grants.length;
  const shares = new Map(reports.flatMap((r, p) => Array.from({ length: r.participants }, (_, i) => [`${p}:${i}`, 0])));
  for (const g of grants) shares.set(g.who, shares.get(g.who) + 1);
  const mean = acquisitions / n;
  const span = acquisitions > 1 ? grants.at(-1).grantedAt - grants[0].grantedAt : 0;
  const cap = capacityTotals(diffCapacity(capBefore, capAfter, table));
  const t = totals(diffCounts(countsBefore, countsAfter, table));
  const per = (v) => (acquisitions ? round(v / acquisitions, 3) : null);
  const eldP99Ms = Math.max(...reports.map((r) => r.eldP99Ms));
  return {
    n,
    processes: P,
    windowMs,
    acquisitions,
    perSecond: span > 0 ? round(((acquisitions - 1) / span) * 1000) : 0,
    wcuPerAcquisition: per(cap.wcu),
    rcuPerAcquisition: per(cap.rcu),
    capacitySource: cap.source,
    writeEqPerAcquisition: per(t.writeEq),
    writesPerAcquisition: per(t.writes),
    readsPerAcquisition: per(t.strongReads + t.eventualReads),
    requestsPerAcquisition: per(t.requests),
    minShare: mean > 0 ? round(Math.min(...shares.values()) / mean, 3) : null,
    participantsWithoutGrant: [...shares.values()].filter((s) => s === 0).length,
    eventLoopP99Ms: round(eldP99Ms),
    overloaded: eldP99Ms > OVERLOAD_P99_MS,
    overloadP99Ms: OVERLOAD_P99_MS,
    otherErrors: t.otherErrors,
    errors: reports.reduce((a, r) => a + r.errors, 0),
    warnings: reports.flatMap((r) => r.warnings).slice(0, 5),
  };
}

async function participants(config, io) {
  // One client per process, with sockets enough for every participant's request at once.
  const client = makeClient(config.endpoint, { requestHandler: { httpAgent: new http.Agent({ keepAlive: true, maxSockets: 1024 }) } });
  for (;;) {
    const { exit, table, count, holdMs, leaseMs } = await io.next('prepare');
    if (exit) return;
    const locks = await Promise.all(
      Array.from({ length: count }, (_, i) =>
        openSystem(config.system, {
          client,
          table,
          owner: `s7b-${config.index}-${i}`,
          leaseMs,
          heartbeatMs: Math.round(leaseMs / 3),
        }),
      ),
    );
    // Warm-up (connections, JIT) on a key of this process's own, before the window is counted
    // (dynamodb-lock-client, finding a shared one held, would sleep a whole lease).
    await (await locks[0].acquire(`warm-up-${config.index}`)).release();
    await io.send('ready');
    const { startAt, endAt } = await io.next('go');
    await sleepUntil(startAt);
    const stop = new AbortController();
    setMaxListeners(0, stop.signal);
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    const grants = [];
    let errors = 0;
    const participant = async (lock, i) => {
      while (wall() < endAt) {
        let held;
        try {
          held = await lock.acquire('hot', { signal: stop.signal });
        } catch {
          if (stop.signal.aborted) return;
          errors++;
          await sleep(50);
          continue;
        }
        grants.push([i, round(wall(), 3)]);
        await holdFor(Math.min(holdMs, Math.max(0, endAt - wall())));
        await held.release().catch(() => errors++);
      }
    };
    const all = Promise.all(locks.map(participant));
    await sleepUntil(endAt);
    stop.abort();
    await Promise.race([all, sleep(5_000)]);
    delay.disable();
    // Ends what a lock still does for this row (dynamodb-lock-client's waits cannot be cancelled).
    await Promise.allSettled(locks.map((l) => l.close()));
    await io.send('done', {
      participants: count,
      grants,
      errors,
      warnings: locks.flatMap((l) => l.warnings).slice(0, 5),
      eldP99Ms: delay.percentile(99) / 1e6,
    });
  }
}

if (isMain(import.meta.url)) workerMain(participants);

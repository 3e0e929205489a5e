/**
 * Scenario 6: scale. One process (started with --expose-gc, nothing else in it) acquires n
 * locks on distinct keys and holds them with heartbeats for a window, for each n of the axis
 * (a fresh process and table per n). Measured: acquisitions per second (n / the time to acquire
 * all, 64 at a time), heartbeat writes per lock per interval in the window (from the proxy:
 * should be exactly 1), event-loop delay p99 (perf_hooks.monitorEventLoopDelay), heap per held lock (heapUsed
 * after − before, both after a full GC, / n), and active timers
 * (every live setTimeout/setInterval, unref'd ones included, sampled every 20 ms when no
 * request is in flight, largest sample).
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { diffCounts, totals } from '../support/counting-proxy.mjs';
import { makeClient } from '../support/client.mjs';
import { pool, round } from '../support/stats.mjs';
import { forkWorker, isMain, workerMain } from '../support/worker.mjs';
import { createTable, openSystem } from '../systems/index.mjs';

/**
 * Runs the scale scenario: for each system of `systems` (that this run compares), one worker per
 * entry of `held[id]` (`[{ n, windowMs, acquireWithinMs? }]`, smallest n first; `{ n, skip: 'why' }`
 * is not run) holds n locks for the window; a worker that has not acquired its n locks within
 * `acquireWithinMs` is stopped and its row says so. Returns per system the figures at its largest
 * n measured (what the tables and checks have always read) and `byN`: the axis, one row per n.
 */
export async function run(ctx, { systems, held, leaseMs }) {
  const out = {};
  for (const id of systems.filter((s) => ctx.locks.includes(s))) {
    const byN = [];
    let largest;
    for (const { n, windowMs, skip, acquireWithinMs = 600_000 } of held[id]) {
      const measured = skip ? null : await measure(ctx, id, { n, windowMs, leaseMs, acquireWithinMs });
      if (!measured) {
        byN.push({ n, skipped: skip ? `not run: ${skip}` : `stopped: not all ${n} locks acquired within ${acquireWithinMs / 1000} s` });
        continue;
      }
      largest = measured;
      byN.push({
        n,
        windowMs: largest.windowMs,
        acquireSeconds: largest.acquireSeconds,
        acquirePerSecond: largest.acquirePerSecond,
        heartbeatWritesPerLockPerInterval: largest.heartbeatWritesPerLockPerInterval,
        heapBytesPerLock: largest.heapBytesPerLock,
        eventLoopDelayP99Ms: largest.eventLoopDelayP99Ms,
        warnings: largest.warnings,
      });
    }
    out[id] = { ...largest, byN };
  }
  return out;
}

/**
 * One system at one n: a fresh table and worker; acquire n locks, then hold them for the window.
 * Null when the n locks were not acquired within `acquireWithinMs`.
 */
async function measure(ctx, id, { n, windowMs, leaseMs, acquireWithinMs }) {
  const heartbeatMs = Math.round(leaseMs / 3);
  const table = ctx.table(`s6-${id}-${n}`);
  await createTable(ctx.admin, id, table);
  const worker = forkWorker(
    import.meta.url,
    { role: 's6', system: id, endpoint: ctx.proxy.endpoint, table, n, windowMs, leaseMs, heartbeatMs },
    { execArgv: ['--expose-gc'] },
  );
  const pending = worker.next('acquired', acquireWithinMs + 1_000);
  const acquired = await Promise.race([pending, sleep(acquireWithinMs, null)]);
  if (!acquired) {
    pending.catch(() => undefined); // rejected as the worker is killed
    worker.kill('SIGKILL');
    await worker.exited;
    return null;
  }
  const before = await ctx.proxy.counts();
  worker.send('window');
  const measured = await worker.next('measured', windowMs + 120_000);
  const after = await ctx.proxy.counts();
  // Releasing 10,000 locks measures nothing more: the table is thrown away with its leases.
  worker.kill('SIGKILL');
  await worker.exited;
  const t = totals(diffCounts(before, after, table));
  return {
    locks: n,
    windowMs: measured.windowMs,
    leaseMs,
    heartbeatMs: round(heartbeatMs),
    acquireSeconds: round(acquired.acquireMs / 1000),
    acquirePerSecond: round(n / (acquired.acquireMs / 1000)),
    heartbeatWritesPerLockPerInterval: round(t.writes / (n * (measured.windowMs / heartbeatMs)), 3),
    failedWritesInWindow: t.failedWrites,
    otherErrors: t.otherErrors,
    eventLoopDelayP99Ms: measured.eldP99Ms,
    eventLoopDelayMaxMs: measured.eldMaxMs,
    heapBytesPerLock: Math.round(acquired.heapDelta / n),
    activeTimers: measured.timers,
    idleTimers: acquired.idleTimers,
    warnings: measured.warnings.length,
    warningSample: measured.warnings.slice(0, 3),
  };
}

/**
 * Live timers, unref'd ones included (process.getActiveResourcesInfo() lists only those that
 * keep the process alive, and our scheduler's timer is unref'd): the global timer functions
 * are wrapped to track them. Every library here looks the globals up at call time.
 */
function trackTimers() {
  const live = new Set();
  const { setTimeout: st, setInterval: si, clearTimeout: ct, clearInterval: ci } = globalThis;
  const custom = Object.getOwnPropertySymbols(st).map((sym) => [sym, st[sym]]);
  globalThis.setTimeout = function setTimeout(fn, ms, ...args) {
    const timer = st(
      (...a) => {
        live.delete(timer);
        fn(...a);
      },
      ms,
      ...args,
    );
    live.add(timer);
    return timer;
  };
  for (const [sym, value] of custom) globalThis.setTimeout[sym] = value;
  globalThis.setInterval = function setInterval(fn, ms, ...args) {
    const timer = si(fn, ms, ...args);
    live.add(timer);
    return timer;
  };
  globalThis.clearTimeout = (timer) => (live.delete(timer), ct(timer));
  globalThis.clearInterval = (timer) => (live.delete(timer), ci(timer));
  return () => live.size;
}
const heapAfterGc = () => {
  global.gc();
  global.gc();
  return process.memoryUsage().heapUsed;
};

async function work(config, io) {
  const timers = trackTimers();
  const client = makeClient(config.endpoint);
  // The SDK keeps a few timers per request in flight; count the lock's own timers only at
  // moments when no request is in flight.
  let inFlight = 0;
  client.middlewareStack.add(
    (next) => async (args) => {
      inFlight++;
      try {
        return await next(args);
      } finally {
        inFlight--;
      }
    },
    { step: 'initialize', name: 'benchInFlight' },
  );
  const lock = await openSystem(config.system, {
    client,
    table: config.table,
    owner: `s6-${config.system}`,
    leaseMs: config.leaseMs,
    heartbeatMs: config.heartbeatMs,
  });
  // Warm the code paths and connections first, so the heap delta is the locks' own.
  await pool(64, 64, async (i) => (await lock.acquire(`warm-${i}`)).release());
  const idleTimers = timers();
  const heap0 = heapAfterGc();
  const started = performance.now();
  // The handles stay referenced until the process is killed, as an app would keep them.
  const held = await pool(config.n, 64, (i) => lock.acquire(`k-${i}`));
  const acquireMs = performance.now() - started;
  const heapDelta = heapAfterGc() - heap0;
  await io.send('acquired', { acquireMs, heapDelta, idleTimers, held: held.length });

  await io.next('window');
  const from = performance.now();
  const delay = monitorEventLoopDelay({ resolution: ELD_RESOLUTION_MS });
  delay.enable();
  let maxTimers = null;
  let idleSamples = 0;
  while (performance.now() - from < config.windowMs) {
    if (inFlight === 0) {
      idleSamples++;
      maxTimers = Math.max(maxTimers ?? 0, timers());
    }
    await sleep(Math.min(20, config.windowMs - (performance.now() - from)));
  }
  delay.disable();
  await io.send('measured', {
    windowMs: performance.now() - from,
    eldP99Ms: round(loopDelayMs(delay.percentile(99))),
    eldMaxMs: round(loopDelayMs(delay.max)),
    timers: maxTimers,
    idleSamples,
    warnings: lock.warnings,
  });
  await new Promise(() => {}); // until killed
}

/** How often the event-loop delay is sampled. */
const ELD_RESOLUTION_MS = 10;

/**
 * The delay of one sample (ns, as the histogram records it) in ms: the histogram records the whole
 * interval between two checks, the sampling period included (an idle process shows p50 ≈ 10.1 ms
 * at a 10 ms resolution), so the period is taken off.
 */
function loopDelayMs(ns) {
  return Math.max(0, ns / 1e6 - ELD_RESOLUTION_MS);
}

if (isMain(import.meta.url)) workerMain(work);

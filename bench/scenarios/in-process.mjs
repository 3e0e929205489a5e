/**
 * Scenario 2: in-process contention. 32 callers in one process loop on one key
 * (acquire → hold 20 ms → release) for a fixed time. Per system: acquisitions/s as a
 * fraction of 1000 / (hold + RTT), writes and write-equivalents per acquisition, FIFO
 * (callers are numbered when they ask; the grants must come in that order) and overlaps.
 */
import { setMaxListeners } from 'node:events';
import { diffCounts, totals } from '../support/counting-proxy.mjs';
import { makeClient } from '../support/client.mjs';
import { holdFor, round, sleepUntil, summarize, wall } from '../support/stats.mjs';
import { forkWorker, isMain, workerMain } from '../support/worker.mjs';
import { createTable, measureRtt, openSystem } from '../systems/index.mjs';

export async function run(ctx, { rounds, durationMs, callers, holdMs }) {
  const segments = Object.fromEntries(ctx.locks.map((id) => [id, []]));
  for (let r = 0; r < rounds; r++) {
    const order = ctx.locks.map((_, i) => ctx.locks[(i + r) % ctx.locks.length]);
    for (const id of order) segments[id].push(await segment(ctx, id, r, { durationMs, callers, holdMs }));
  }
  const out = {};
  for (const id of ctx.locks) {
    const s = segments[id];
    const sum = (f) => s.reduce((a, x) => a + f(x), 0);
    const acquisitions = sum((x) => x.acquisitions);
    const seconds = sum((x) => x.durationMs) / 1000;
    // 1 / the mean interval between consecutive grants (grants / window would depend on where
    // the window cuts the last cycle).
    const span = sum((x) => x.spanMs);
    const rate = span > 0 ? (sum((x) => Math.max(0, x.acquisitions - 1)) / span) * 1000 : 0;
    const rtt = sum((x) => x.rttMs) / s.length;
    const limit = 1000 / (holdMs + rtt);
    const t = {
      requests: sum((x) => x.t.requests),
      writes: sum((x) => x.t.writes),
      failedWrites: sum((x) => x.t.failedWrites),
      writeEq: sum((x) => x.t.writeEq),
      otherErrors: sum((x) => x.t.otherErrors),
    };
    out[id] = {
      callers,
      holdMs,
      seconds,
      acquisitions,
      rttMs: round(rtt),
      perSecond: round(rate),
      limitPerSecond: round(limit),
      fractionOfLimit: round(rate / limit, 3),
      writesPerAcquisition: round(t.writes / acquisitions, 3),
      failedWritesPerAcquisition: round(t.failedWrites / acquisitions, 3),
      requestsPerAcquisition: round(t.requests / acquisitions, 3),
      writeEqPerAcquisition: round(t.writeEq / acquisitions, 3),
      handoverMs: summarize(s.flatMap((x) => x.handovers)),
      fifoInversions: sum((x) => x.fifoInversions),
      overlaps: sum((x) => x.overlaps),
      otherErrors: t.otherErrors,
      warnings: s.flatMap((x) => x.warnings).slice(0, 5),
    };
  }
  return out;
}

async function segment(ctx, id, r, { durationMs, callers, holdMs }) {
  const table = ctx.table(`s2-${id}-${r}`);
  const probeTable = ctx.table(`s2-rtt-${id}-${r}`);
  await Promise.all([createTable(ctx.admin, id, table), createTable(ctx.admin, 'baseline', probeTable)]);
  const worker = forkWorker(import.meta.url, {
    role: 's2',
    system: id,
    endpoint: ctx.proxy.endpoint,
    table,
    probeTable,
    rttSamples: ctx.rttSamples,
    callers,
    holdMs,
    leaseMs: ctx.leaseMs,
  });
  const { rttMs } = await worker.next('ready');
  const before = await ctx.proxy.counts();
  const startAt = wall() + 100;
  const endAt = startAt + durationMs;
  worker.send('go', { startAt, endAt });
  // Count requests up to the end of the window only, not the stragglers after it.
  await sleepUntil(endAt);
  const after = await ctx.proxy.counts();
  const result = await worker.next('done');
  await worker.exited;
  return { ...result, rttMs, durationMs, t: totals(diffCounts(before, after, table)) };
}

async function work(config, io) {
  const client = makeClient(config.endpoint);
  const rttMs = await measureRtt(makeClient(config.endpoint), config.probeTable, { samples: config.rttSamples });
  const lock = await openSystem(config.system, {
    client,
    table: config.table,
    owner: `s2-${config.system}-${process.pid}`,
    leaseMs: config.leaseMs,
    heartbeatMs: Math.round(config.leaseMs / 3),
  });
  await (await lock.acquire('warm-up')).release();
  await io.send('ready', { rttMs });
  const { startAt, endAt } = await io.next('go');
  await sleepUntil(startAt);

  const stop = new AbortController();
  setMaxListeners(0, stop.signal); // every waiting caller listens to it
  let asked = 0;
  const grants = [];
  let inside = 0;
  let overlaps = 0;
  const handovers = [];
  let lastRelease;
  let firstGrantAt;
  let lastGrantAt;
  const caller = async () => {
    while (wall() < endAt) {
      const ticket = asked++;
      let held;
      try {
        held = await lock.acquire('hot', { signal: stop.signal });
      } catch (error) {
        if (stop.signal.aborted) return;
        throw error;
      }
      const grantedAt = performance.now();
      firstGrantAt ??= wall();
      if (wall() <= endAt) lastGrantAt = wall();
      if (lastRelease !== undefined && wall() <= endAt) handovers.push(grantedAt - lastRelease);
      if (wall() <= endAt) grants.push(ticket);
      if (++inside > 1) overlaps++;
      await holdFor(Math.min(config.holdMs, Math.max(0, endAt - wall())));
      inside--;
      lastRelease = performance.now();
      await held.release();
    }
  };
  const all = Promise.all(Array.from({ length: config.callers }, caller));
  await sleepUntil(endAt);
  stop.abort();
  await Promise.race([all, new Promise((resolve) => setTimeout(resolve, 3_000))]);
  // FIFO: tickets in grant order must increase; count grants that overtook an earlier ticket.
  let fifoInversions = 0;
  let highest = -1;
  for (const ticket of grants) {
    if (ticket < highest) fifoInversions++;
    highest = Math.max(highest, ticket);
  }
  await io.send('done', {
    acquisitions: grants.length,
    spanMs: (lastGrantAt ?? 0) - (firstGrantAt ?? 0),
    handovers,
    fifoInversions,
    overlaps,
    warnings: lock.warnings.slice(0, 5),
  });
}

if (isMain(import.meta.url)) workerMain(work);

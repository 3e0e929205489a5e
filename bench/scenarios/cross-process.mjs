/**
 * Scenario 3: cross-process contention. 4 forked processes loop on one key (acquire → hold
 * → release) for a fixed time. Per system and hold: acquisitions/s as a fraction of
 * 1000 / (hold + RTT) (a fair hand-over through the table: the release lands, then the next holder
 * learns of it; RTT from an idle probe once every worker is ready), cost in
 * write-equivalents per acquisition, hand-over latency (a release call to the next grant, on
 * the shared wall clock), fairness (each process's share / the mean share), how often the
 * releaser itself got the lock next, and overlaps: inside the section each process creates
 * a marker file with O_EXCL, which fails if another process is inside too.
 */
import { closeSync, openSync, rmSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setMaxListeners } from 'node:events';
import { diffCounts, totals } from '../support/counting-proxy.mjs';
import { makeClient } from '../support/client.mjs';
import { holdFor, round, sleepUntil, summarize, wall } from '../support/stats.mjs';
import { forkWorker, isMain, workerMain } from '../support/worker.mjs';
import { createTable, measureRtt, openSystem } from '../systems/index.mjs';

export async function run(ctx, { holds, processes, rounds }) {
  const segments = Object.fromEntries(holds.map(({ holdMs }) => [holdMs, Object.fromEntries(ctx.locks.map((id) => [id, []]))]));
  for (let r = 0; r < rounds; r++) {
    const order = ctx.locks.map((_, i) => ctx.locks[(i + r) % ctx.locks.length]);
    for (const id of order) {
      // One set of processes per system and round runs every hold in turn (start-up is slow).
      const workers = Array.from({ length: processes }, (_, index) =>
        forkWorker(import.meta.url, {
          role: 's3',
          system: id,
          endpoint: ctx.proxy.endpoint,
          rttSamples: ctx.rttSamples,
          leaseMs: ctx.leaseMs,
          index,
        }),
      );
      for (const { holdMs, durationMs } of holds) segments[holdMs][id].push(await window(ctx, workers, id, r, { holdMs, durationMs }));
      for (const w of workers) w.send('prepare', { exit: true });
      await Promise.all(workers.map((w) => w.exited));
    }
  }
  return Object.fromEntries(
    holds.map(({ holdMs }) => [
      `hold${holdMs}`,
      Object.fromEntries(ctx.locks.map((id) => [id, combine(segments[holdMs][id], holdMs, processes)])),
    ]),
  );
}

function combine(s, holdMs, processes) {
  const sum = (f) => s.reduce((a, x) => a + f(x), 0);
  const acquisitions = sum((x) => x.grants.length);
  const seconds = sum((x) => x.durationMs) / 1000;
  // Rate: 1 / the mean interval between consecutive grants. Grants / window would depend on
  // where the window cuts the last cycle (up to one cycle: 3% of a 30 s window of 1 s holds).
  const span = sum((x) => x.spanMs);
  const rate = span > 0 ? (sum((x) => Math.max(0, x.grants.length - 1)) / span) * 1000 : 0;
  const rtt = sum((x) => x.rttMs) / s.length;
  const limit = 1000 / (holdMs + rtt);
  const handovers = s.flatMap((x) => x.handovers);
  const shares = s.flatMap((x) => x.shares);
  const t = {
    requests: sum((x) => x.t.requests),
    writes: sum((x) => x.t.writes),
    failedWrites: sum((x) => x.t.failedWrites),
    strongReads: sum((x) => x.t.strongReads),
    writeEq: sum((x) => x.t.writeEq),
    otherErrors: sum((x) => x.t.otherErrors),
  };
  const per = (n) => (acquisitions ? round(n / acquisitions, 3) : null);
  return {
    processes,
    holdMs,
    seconds,
    acquisitions,
    rttMs: round(rtt),
    perSecond: round(rate),
    limitPerSecond: round(limit),
    fractionOfLimit: round(rate / limit, 3),
    writeEqPerAcquisition: per(t.writeEq),
    requestsPerAcquisition: per(t.requests),
    writesPerAcquisition: per(t.writes),
    failedWritesPerAcquisition: per(t.failedWrites),
    strongReadsPerAcquisition: per(t.strongReads),
    handoverMs: summarize(handovers),
    sameProcessNext: round(sum((x) => x.sameNext) / Math.max(1, handovers.length), 3),
    perProcess: s.map((x) => x.perProcess),
    minShare: round(Math.min(...shares), 3),
    maxShare: round(Math.max(...shares), 3),
    overlaps: sum((x) => x.overlaps),
    otherErrors: t.otherErrors,
    warnings: s.flatMap((x) => x.warnings).slice(0, 5),
  };
}

async function window(ctx, workers, id, r, { holdMs, durationMs }) {
  const table = ctx.table(`s3-${id}-${holdMs}-${r}`);
  const probeTable = ctx.table(`s3-rtt-${id}-${holdMs}-${r}`);
  await Promise.all([createTable(ctx.admin, id, table), createTable(ctx.admin, 'baseline', probeTable)]);
  const markerPath = path.join(tmpdir(), `${table}.inside`);
  rmSync(markerPath, { force: true });
  for (const w of workers) w.send('prepare', { table, probeTable, holdMs, markerPath });
  await Promise.all(workers.map((w) => w.next('ready')));
  // The RTT of the limit, on an idle probe: every worker has started and waits for the window, so
  // neither their start-up nor their load on the server counts against the hand-over.
  workers[0].send('probe');
  const { rttMs } = await workers[0].next('rtt');
  const before = await ctx.proxy.counts();
  const startAt = wall() + 100;
  const endAt = startAt + durationMs;
  for (const w of workers) w.send('go', { startAt, endAt });
  await sleepUntil(endAt);
  const after = await ctx.proxy.counts();
  const reports = await Promise.all(workers.map((w) => w.next('done')));
  rmSync(markerPath, { force: true });
  const processes = workers.length;

  // Every grant in the window, in time order, with the process that got it.
  const grants = reports
    .flatMap((rep, p) => rep.grants.map((g) => ({ ...g, p })))
    .filter((g) => g.grantedAt >= startAt && g.grantedAt <= endAt)
    .sort((a, b) => a.grantedAt - b.grantedAt);
  const handovers = [];
  let sameNext = 0;
  for (let i = 1; i < grants.length; i++) {
    const prev = grants[i - 1];
    if (prev.releasedAt === undefined) continue;
    handovers.push(grants[i].grantedAt - prev.releasedAt);
    if (grants[i].p === prev.p) sameNext++;
  }
  const perProcess = reports.map((_, p) => grants.filter((g) => g.p === p).length);
  const mean = grants.length / processes;
  return {
    durationMs,
    spanMs: grants.length > 1 ? grants.at(-1).grantedAt - grants[0].grantedAt : 0,
    rttMs,
    grants,
    handovers,
    sameNext,
    perProcess,
    shares: perProcess.map((n) => (mean ? n / mean : 0)),
    overlaps: reports.reduce((a, x) => a + x.overlaps, 0),
    warnings: reports.flatMap((x) => x.warnings),
    t: totals(diffCounts(before, after, table)),
  };
}

async function work(config, io) {
  for (;;) {
    const { exit, table, probeTable, holdMs, markerPath } = await io.next('prepare');
    if (exit) return;
    const client = makeClient(config.endpoint);
    const probe = config.index === 0 ? makeClient(config.endpoint) : undefined;
    const lock = await openSystem(config.system, {
      client,
      table,
      owner: `s3-${config.system}-${config.index}`,
      leaseMs: config.leaseMs,
      heartbeatMs: Math.round(config.leaseMs / 3),
    });
    await io.send('ready');
    if (probe) {
      await io.next('probe');
      await io.send('rtt', { rttMs: await measureRtt(probe, probeTable, { samples: config.rttSamples }) });
      probe.destroy();
    }
    const { startAt, endAt } = await io.next('go');
    await sleepUntil(startAt);
    const stop = new AbortController();
    setMaxListeners(0, stop.signal); // every waiting caller listens to it
    const timer = setTimeout(() => stop.abort(), Math.max(0, endAt - wall()));
    const grants = [];
    let overlaps = 0;
    while (wall() < endAt) {
      let held;
      try {
        held = await lock.acquire('hot', { signal: stop.signal });
      } catch (error) {
        if (stop.signal.aborted) break;
        throw error;
      }
      const grant = { grantedAt: wall() };
      grants.push(grant);
      let marker = true;
      try {
        closeSync(openSync(markerPath, 'wx'));
      } catch (error) {
        if (error.code !== 'EEXIST') throw error;
        overlaps++;
        marker = false;
      }
      // The last hold ends with the window: nothing after it is counted.
      await holdFor(Math.min(holdMs, Math.max(0, endAt - wall())));
      if (marker) unlinkSync(markerPath);
      grant.releasedAt = wall();
      await held.release();
    }
    clearTimeout(timer);
    // Stops whatever the lock still does for this window (a waiter that cannot be cancelled).
    await lock.close();
    client.destroy();
    await io.send('done', { grants, overlaps, warnings: lock.warnings.slice(0, 5) });
  }
}

if (isMain(import.meta.url)) workerMain(work);

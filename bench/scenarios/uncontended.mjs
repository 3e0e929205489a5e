/**
 * Scenario 1: uncontended acquire + release on distinct keys, one at a time, every system
 * in one process, round-robin in blocks so drift hits all alike. Per system: requests per
 * cycle (from the proxy), cycle latency and the worker's CPU time per cycle (the client's own:
 * the server and the proxy are other processes), against the two-call SDK baseline sent with
 * the same client as our lock.
 */
import { diffCounts, totals } from '../support/counting-proxy.mjs';
import { makeClient } from '../support/client.mjs';
import { round, summarize } from '../support/stats.mjs';
import { forkWorker, isMain, workerMain } from '../support/worker.mjs';
import { createTable, openSystem } from '../systems/index.mjs';

export async function run(ctx, { rounds, cycles }) {
  const ORDER = ['baseline', ...ctx.locks];
  const tables = Object.fromEntries(ORDER.map((id) => [id, ctx.table(`s1-${id}`)]));
  await Promise.all(ORDER.map((id) => createTable(ctx.admin, id, tables[id])));
  const worker = forkWorker(import.meta.url, {
    role: 's1',
    order: ORDER,
    endpoint: ctx.proxy.endpoint,
    tables,
    rounds,
    cycles,
    leaseMs: ctx.leaseMs,
  });
  await worker.next('warm');
  const before = await ctx.proxy.counts();
  worker.send('go');
  const { latencies, cpuMicros, warnings } = await worker.next('done', 600_000);
  const after = await ctx.proxy.counts();
  const n = rounds * cycles;
  const base = summarize(latencies.baseline);
  const cpuPerCycle = (id) => cpuMicros[id] / 1000 / n;
  const out = {};
  for (const id of ORDER) {
    const t = totals(diffCounts(before, after, tables[id]));
    const lat = summarize(latencies[id]);
    out[id] = {
      cycles: n,
      requestsPerCycle: round(t.requests / n, 3),
      writesPerCycle: round(t.writes / n, 3),
      readsPerCycle: round((t.strongReads + t.eventualReads) / n, 3),
      writeEqPerCycle: round(t.writeEq / n, 3),
      otherErrors: t.otherErrors,
      latencyMs: lat,
      p50Ratio: round(lat.p50 / base.p50, 3),
      p99Ratio: round(lat.p99 / base.p99, 3),
      cpuMsPerCycle: round(cpuPerCycle(id), 3),
      cpuRatio: round(cpuPerCycle(id) / cpuPerCycle('baseline'), 3),
      warnings: warnings[id],
    };
  }
  return out;
}

async function work(config, io) {
  const ORDER = config.order;
  const systems = {};
  // The baseline shares our lock's client, as the issue asks; the others get their own.
  const shared = makeClient(config.endpoint);
  for (const id of ORDER) {
    const client = id === 'baseline' || id === 'ours' ? shared : makeClient(config.endpoint);
    systems[id] = {
      lock: await openSystem(id, {
        client,
        table: config.tables[id],
        owner: `s1-${id}`,
        leaseMs: config.leaseMs,
        heartbeatMs: Math.round(config.leaseMs / 3),
      }),
    };
  }
  const cycle = async (id, key) => {
    const t = performance.now();
    const held = await systems[id].lock.acquire(key);
    await held.release();
    return performance.now() - t;
  };
  // Warm-up (JIT, connections) on other keys of the same tables; the parent counts from 'go'.
  for (const id of ORDER) for (let i = 0; i < 20; i++) await cycle(id, `warm-${i}`);
  await io.send('warm');
  await io.next('go');
  const latencies = Object.fromEntries(ORDER.map((id) => [id, []]));
  // CPU time of this process (user + system, µs) over each system's blocks of cycles.
  const cpuMicros = Object.fromEntries(ORDER.map((id) => [id, 0]));
  for (let r = 0; r < config.rounds; r++) {
    // Rotate the order each round, so no system always runs right after another.
    const order = ORDER.map((_, i) => ORDER[(i + r) % ORDER.length]);
    for (const id of order) {
      const cpu = process.cpuUsage();
      for (let c = 0; c < config.cycles; c++) latencies[id].push(await cycle(id, `k-${r}-${c}`));
      const used = process.cpuUsage(cpu);
      cpuMicros[id] += used.user + used.system;
    }
  }
  await io.send('done', { latencies, cpuMicros, warnings: Object.fromEntries(ORDER.map((id) => [id, systems[id].lock.warnings])) });
}

if (isMain(import.meta.url)) workerMain(work);

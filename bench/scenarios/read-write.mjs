/**
 * Scenario 13: read locks. 64 readers (8 managers of 8 callers, each manager its own client, as
 * separate instances would be) read one key in a loop while 1 writer (a manager of its own)
 * rewrites it every `writerGapMs`, for a fixed window; then the same 65 callers with every caller
 * exclusive (the readers as plain mutex callers), alternating, in the same run. Per variant: read
 * acquisitions/s, the writer's acquisitions and its wait (p50/p99), billed capacity per
 * acquisition (WCU, RCU; the table is metered) and the largest item. Then the cost of holding: 64
 * readers hold the key for `holdWindowMs` (heartbeats every third of a lease): billed WCU per
 * held reader per heartbeat interval.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { LockManager } from '../../dist/index.js';
import { capacityTotals, diffCapacity } from '../support/counting-proxy.mjs';
import { makeClient } from '../support/client.mjs';
import { round, summarize } from '../support/stats.mjs';
import { createTable } from '../systems/index.mjs';

export const VARIANTS = ['read', 'mutex'];
const KEY = 'catalog';

export async function run(
  ctx,
  { managers: managerCount, callersPerManager, windowMs, rounds, readHoldMs, writeHoldMs, writerGapMs, holdWindowMs },
) {
  const table = ctx.table('s13-read');
  await createTable(ctx.admin, 'ours', table);
  await ctx.proxy.meter([table]);
  const silent = { log() {}, warn() {}, error() {}, debug() {}, verbose() {} };
  const clients = Array.from({ length: managerCount + 1 }, () => makeClient(ctx.proxy.endpoint));
  const managers = clients.map(
    (client, i) =>
      new LockManager({ tableName: table, client, verifyTable: false, ownerName: `s13-${i}`, logger: silent, maxPollInterval: 250 }),
  );
  const writer = managers[managerCount];
  const readers = managers.slice(0, managerCount);
  const options = { wait: '60s', leaseDuration: ctx.leaseMs };
  const samples = Object.fromEntries(VARIANTS.map((v) => [v, { reads: 0, writes: 0, ms: 0, writerWaits: [], readWaits: [], billed: [] }]));
  let holding;
  try {
    // Warm-up: connections open, the item exists.
    for (const manager of managers) await manager.withLock(KEY, () => undefined, { ...options, mode: 'read' });
    for (let r = 0; r < rounds; r++) {
      for (const variant of r % 2 === 0 ? VARIANTS : [...VARIANTS].reverse()) {
        const s = samples[variant];
        const before = await ctx.proxy.capacity();
        const started = performance.now();
        const until = started + windowMs;
        const readerLoops = readers.flatMap((manager) =>
          Array.from({ length: callersPerManager }, async () => {
            while (performance.now() < until) {
              const t = performance.now();
              await manager.withLock(KEY, () => sleep(readHoldMs), { ...options, ...(variant === 'read' ? { mode: 'read' } : {}) });
              s.readWaits.push(performance.now() - t - readHoldMs);
              s.reads++;
            }
          }),
        );
        const writerLoop = (async () => {
          while (performance.now() < until) {
            const t = performance.now();
            await writer.withLock(KEY, () => sleep(writeHoldMs), options);
            s.writerWaits.push(performance.now() - t - writeHoldMs);
            s.writes++;
            await sleep(writerGapMs);
          }
        })();
        await Promise.all([...readerLoops, writerLoop]);
        s.ms += performance.now() - started;
        s.billed.push(capacityTotals(diffCapacity(before, await ctx.proxy.capacity(), table)));
      }
    }
    holding = await holdCost(ctx, table, readers, callersPerManager, holdWindowMs);
  } finally {
    await Promise.all(managers.map((m) => m.close()));
    for (const client of clients) client.destroy();
  }
  const out = {
    readers: managerCount * callersPerManager,
    managers: managerCount,
    writers: 1,
    windowMs,
    rounds,
    readHoldMs,
    writeHoldMs,
    writerGapMs,
    leaseMs: ctx.leaseMs,
    holding,
  };
  for (const variant of VARIANTS) {
    const s = samples[variant];
    const acquisitions = s.reads + s.writes;
    const sum = (f) => s.billed.reduce((a, b) => a + f(b), 0);
    out[variant] = {
      readsPerSecond: round((s.reads / s.ms) * 1000, 1),
      writesPerSecond: round((s.writes / s.ms) * 1000, 2),
      readWaitMs: summarize(s.readWaits),
      writerWaitMs: summarize(s.writerWaits),
      wcuPerAcquisition: acquisitions ? round(sum((b) => b.wcu) / acquisitions, 2) : null,
      rcuPerAcquisition: acquisitions ? round(sum((b) => b.rcu) / acquisitions, 2) : null,
      maxItemBytes: Math.max(...s.billed.map((b) => b.maxItemBytes ?? 0)),
      source: s.billed[0]?.source,
    };
  }
  out.readThroughputRatio = out.mutex.readsPerSecond > 0 ? round(out.read.readsPerSecond / out.mutex.readsPerSecond, 1) : null;
  return out;
}

/** 64 readers hold the key for `ms`: billed capacity per held reader per heartbeat interval (a third of the lease). */
async function holdCost(ctx, table, readers, callersPerManager, ms) {
  const locks = (
    await Promise.all(
      readers.flatMap((manager) =>
        Array.from({ length: callersPerManager }, () => manager.acquire(KEY, { mode: 'read', wait: '60s', leaseDuration: ctx.leaseMs })),
      ),
    )
  ).flat();
  const info = await readers[0].inspect(KEY);
  const before = await ctx.proxy.capacity();
  const started = performance.now();
  await sleep(ms);
  const elapsed = performance.now() - started;
  const billed = capacityTotals(diffCapacity(before, await ctx.proxy.capacity(), table));
  await Promise.all(locks.map((lock) => lock.release()));
  const intervals = elapsed / (ctx.leaseMs / 3);
  return {
    held: locks.length,
    readersInItem: info?.holders?.length ?? 0,
    ms: Math.round(elapsed),
    heartbeatIntervalMs: Math.round(ctx.leaseMs / 3),
    writes: billed.successfulWrites,
    wcu: billed.wcu,
    writesPerReaderPerInterval: round(billed.successfulWrites / (locks.length * intervals), 2),
    wcuPerReaderPerInterval: round(billed.wcu / (locks.length * intervals), 2),
    maxItemBytes: billed.maxItemBytes,
    source: billed.source,
  };
}

/**
 * Scenario 12: multi-key transfers. Callers in several managers (each its own client, as separate
 * instances would be) move money between 4 accounts, each transfer holding two accounts named
 * in a random order, for a fixed window; then the same with two nested mutex acquisitions
 * (`withLock(first, () => withLock(second, ...))`, the keys sorted by hand so they cannot
 * deadlock), in the same run, alternating. Per variant: transfers/s, the latency of a whole
 * transfer (lock, 2 ms of work, release), requests and write-equivalents per transfer (a
 * transaction: 2 WCU per item, cancelled ones included). First with one caller (uncontended: the
 * fast path against two nested acquisitions), then with the configured callers. On DynamoDB Local a free pair is one `TransactWriteItems` (the
 * fast path); on dynalite (no transactions) the keys are taken in order.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { LockManager } from '../../dist/index.js';
import { diffCounts, totals } from '../support/counting-proxy.mjs';
import { makeClient } from '../support/client.mjs';
import { round, summarize } from '../support/stats.mjs';
import { createTable } from '../systems/index.mjs';

export const VARIANTS = ['multi', 'nested'];
const ACCOUNTS = 4;
const WORK_MS = 2;

/** Two distinct accounts, in a random order. */
function pair() {
  const a = Math.floor(Math.random() * ACCOUNTS);
  const b = (a + 1 + Math.floor(Math.random() * (ACCOUNTS - 1))) % ACCOUNTS;
  return [`account-${a}`, `account-${b}`];
}

const bytes = (key) => Buffer.from(key, 'utf8');

export async function run(ctx, { managers: managerCount, callersPerManager, windowMs, rounds }) {
  const table = ctx.table('s12-multi');
  await createTable(ctx.admin, 'ours', table);
  // One caller first: nothing contends, so a free pair is the fast path every time (one request).
  const uncontended = await measure(ctx, table, { managerCount: 1, callersPerManager: 1, windowMs, rounds });
  const contended = await measure(ctx, table, { managerCount, callersPerManager, windowMs, rounds });
  return { ...contended, uncontended };
}

/** One setting: both variants, alternating, over `rounds` windows each. */
async function measure(ctx, table, { managerCount, callersPerManager, windowMs, rounds }) {
  const silent = { log() {}, warn() {}, error() {}, debug() {}, verbose() {} };
  const clients = Array.from({ length: managerCount }, () => makeClient(ctx.proxy.endpoint));
  const managers = clients.map(
    (client, i) =>
      new LockManager({ tableName: table, client, verifyTable: false, ownerName: `s12-${i}`, logger: silent, maxPollInterval: 250 }),
  );
  const transfer = {
    multi: (manager, keys, fn) => manager.withLock(keys, fn, { wait: '60s', leaseDuration: ctx.leaseMs }),
    nested: (manager, keys, fn) => {
      const [first, second] = [...keys].sort((x, y) => Buffer.compare(bytes(x), bytes(y)));
      const options = { wait: '60s', leaseDuration: ctx.leaseMs };
      return manager.withLock(first, () => manager.withLock(second, fn, options), options);
    },
  };
  const samples = Object.fromEntries(VARIANTS.map((v) => [v, { transfers: 0, ms: 0, latencies: [], counts: [] }]));
  try {
    // Warm-up: connections open, items exist.
    for (const manager of managers) await transfer.multi(manager, ['account-0', 'account-1'], () => undefined);
    for (let r = 0; r < rounds; r++) {
      for (const variant of r % 2 === 0 ? VARIANTS : [...VARIANTS].reverse()) {
        const s = samples[variant];
        const before = await ctx.proxy.counts();
        const started = performance.now();
        const until = started + windowMs;
        let transfers = 0;
        const loops = managers.flatMap((manager) =>
          Array.from({ length: callersPerManager }, async () => {
            while (performance.now() < until) {
              const t = performance.now();
              await transfer[variant](manager, pair(), () => sleep(WORK_MS));
              s.latencies.push(performance.now() - t);
              transfers++;
            }
          }),
        );
        await Promise.all(loops);
        s.ms += performance.now() - started;
        s.transfers += transfers;
        s.counts.push(totals(diffCounts(before, await ctx.proxy.counts(), table)));
      }
    }
  } finally {
    await Promise.all(managers.map((m) => m.close()));
    for (const client of clients) client.destroy();
  }
  const out = { managers: managerCount, callers: managerCount * callersPerManager, windowMs, rounds, accounts: ACCOUNTS, workMs: WORK_MS };
  for (const variant of VARIANTS) {
    const s = samples[variant];
    const sum = (f) => s.counts.reduce((a, t) => a + f(t), 0);
    const per = (n) => (s.transfers > 0 ? round(n / s.transfers) : null);
    out[variant] = {
      transfers: s.transfers,
      perSecond: round((s.transfers / s.ms) * 1000, 1),
      latencyMs: summarize(s.latencies),
      requestsPerTransfer: per(sum((t) => t.requests)),
      // A transaction bills 2 WCU per item (2 items here), a cancelled one too (its items are
      // prepared before a condition fails): both counted, each also shown apart.
      writeEqPerTransfer: per(sum((t) => t.writeEq + 4 * (t.transactions + t.cancelledTransactions))),
      transactionsPerTransfer: per(sum((t) => t.transactions)),
      cancelledTransactionsPerTransfer: per(sum((t) => t.cancelledTransactions)),
      updatesPerTransfer: per(sum((t) => t.writes)),
      failedWritesPerTransfer: per(sum((t) => t.failedWrites)),
    };
  }
  out.throughputRatio = out.nested.perSecond > 0 ? round(out.multi.perSecond / out.nested.perSecond) : null;
  return out;
}

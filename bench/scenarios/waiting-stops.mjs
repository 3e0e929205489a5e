/**
 * Scenario 7, continued: how fast a waiter in another process gets the lock when its holder
 * stops, with `LockManager`s from dist/ (one per process, as app instances).
 *
 * - Graceful stop → next holder: process A holds the key (library defaults: 30 s lease), process
 *   B waits for it (`acquire({ wait: true })`); after B has waited a while (`waitMs` plus a
 *   different fraction of `jitterMs` each trial, so the stop lands at different points of B's
 *   polling), A gets SIGTERM and runs `manager.close()`. Measured: the SIGTERM to B's grant, on
 *   the shared wall clock.
 * - Dead queued waiters: with a 1 s lease, holder H holds the key; k waiters in processes of their
 *   own start waiting first, then the live waiter W; the k are SIGKILLed while queued, then H
 *   releases. Measured: H's release call to W's grant, against the claim period (the lease a
 *   promoted queue head gets: 5 s, capped by the lease; the library does not export it), and how
 *   many queue entries the item held before the kill (the longest list attribute of the item,
 *   read directly from the server: format-agnostic, informative only).
 */
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { setTimeout as sleep } from 'node:timers/promises';
import { LockManager } from '../../dist/index.js';
import { makeClient } from '../support/client.mjs';
import { round, summarize, wall } from '../support/stats.mjs';
import { forkWorker, isMain, workerMain } from '../support/worker.mjs';
import { createTable } from '../systems/index.mjs';

/** The claim lease of a promoted queue head (lib/store/lock-store.protocol.ts), capped by the lease. */
const CLAIM_LEASE_MS = 5_000;
/** Longest wait for a grant before a trial is given up (a 30 s lease, and then some). */
const GRANT_TIMEOUT_MS = 70_000;

export async function gracefulStop(ctx, { trials, waitMs, jitterMs }) {
  const results = [];
  for (let t = 0; t < trials; t++) {
    const table = ctx.table(`s7-stop-${t}`);
    await createTable(ctx.admin, 'ours', table);
    const base = { endpoint: ctx.proxy.endpoint, table };
    const holder = forkWorker(import.meta.url, { ...base, role: 'holder' });
    const waiter = forkWorker(import.meta.url, { ...base, role: 'waiter' });
    await holder.next('acquired');
    waiter.send('start');
    await waiter.next('waiting');
    await sleep(waitMs + (((t + 1) * 0.618) % 1) * jitterMs);
    const signalAt = wall();
    holder.kill('SIGTERM');
    const granted = await waiter.next('granted', GRANT_TIMEOUT_MS).catch(() => null);
    const closed = await holder.next('closed', 10_000).catch(() => null);
    await finish([holder, waiter]);
    results.push({ fromSignalMs: granted ? granted.at - signalAt : null, closeMs: closed?.closeMs ?? null });
  }
  const done = results.filter((r) => r.fromSignalMs !== null);
  return {
    trials,
    leaseMs: 30_000,
    fromSignalMs: summarize(done.map((r) => r.fromSignalMs)),
    closeMs: summarize(results.filter((r) => r.closeMs !== null).map((r) => r.closeMs)),
    timedOut: trials - done.length,
    perTrialMs: results.map((r) => (r.fromSignalMs === null ? null : round(r.fromSignalMs, 1))),
  };
}

export async function deadQueuedWaiters(ctx, { trials, k, leaseMs, enqueueMs = 400 }) {
  const claimMs = Math.min(CLAIM_LEASE_MS, leaseMs);
  const results = [];
  for (let t = 0; t < trials; t++) {
    const table = ctx.table(`s7-dead-${t}`);
    await createTable(ctx.admin, 'ours', table);
    const base = { endpoint: ctx.proxy.endpoint, table, leaseMs };
    const holder = forkWorker(import.meta.url, { ...base, role: 'holder' });
    const dead = Array.from({ length: k }, () => forkWorker(import.meta.url, { ...base, role: 'waiter' }));
    const live = forkWorker(import.meta.url, { ...base, role: 'waiter' });
    await Promise.all([holder.next('acquired'), ...[...dead, live].map((w) => w.next('started'))]);
    // The doomed ones queue first, so the live waiter is behind all of them.
    for (const w of dead) w.send('start');
    await Promise.all(dead.map((w) => w.next('waiting')));
    await sleep(enqueueMs);
    live.send('start');
    await live.next('waiting');
    await sleep(enqueueMs);
    const queueSeen = await longestList(ctx.admin, table, 'hot');
    for (const w of dead) w.kill('SIGKILL');
    await Promise.all(dead.map((w) => w.exited));
    await sleep(100);
    holder.send('release');
    const released = await holder.next('released');
    const granted = await live.next('granted', GRANT_TIMEOUT_MS).catch(() => null);
    await finish([holder, live]);
    results.push({ fromReleaseMs: granted ? granted.at - released.at : null, queueSeen });
  }
  const done = results.filter((r) => r.fromReleaseMs !== null);
  const fromRelease = summarize(done.map((r) => r.fromReleaseMs));
  return {
    trials,
    k,
    leaseMs,
    claimMs,
    fromReleaseMs: fromRelease,
    claimPeriods: { p50: round(fromRelease.p50 / claimMs), max: round(fromRelease.max / claimMs) },
    timedOut: trials - done.length,
    queueSeen: results.map((r) => r.queueSeen),
    perTrialMs: results.map((r) => (r.fromReleaseMs === null ? null : round(r.fromReleaseMs, 1))),
  };
}

/** Lets the workers exit (or kills them), and waits until they have. */
async function finish(workers) {
  for (const w of workers) w.send('exit');
  const timer = setTimeout(() => workers.forEach((w) => w.kill('SIGKILL')), 10_000);
  await Promise.all(workers.map((w) => w.exited));
  clearTimeout(timer);
}

/** Entries of the longest list attribute of the item (`null`: no item or no list). */
async function longestList(admin, table, key) {
  const { Item } = await admin.send(new GetItemCommand({ TableName: table, Key: { key: { S: key } }, ConsistentRead: true }));
  const lengths = Object.values(Item ?? {})
    .filter((v) => v.L)
    .map((v) => v.L.length);
  return lengths.length ? Math.max(...lengths) : null;
}

async function work(config, io) {
  const client = makeClient(config.endpoint);
  const manager = new LockManager({
    tableName: config.table,
    client,
    ownerName: `s7-${config.role}-${process.pid}`,
    verifyTable: false,
    // Library defaults unless a lease is given (the dead-waiter trials use 1 s).
    ...(config.leaseMs ? { leaseDuration: config.leaseMs } : {}),
    logger: { log() {}, warn() {}, error() {}, debug() {}, verbose() {} },
  });
  const exit = io.next('exit');
  if (config.role === 'holder') {
    process.on('SIGTERM', () => {
      // Graceful shutdown: what an app's shutdown hook does with its manager.
      const from = performance.now();
      manager
        .close()
        .then(() => io.send('closed', { closeMs: performance.now() - from }))
        .finally(() => process.exit(0));
    });
    const lock = await manager.acquire('hot');
    await io.send('acquired');
    const release = await Promise.race([io.next('release'), exit]);
    if (release.type === 'release') {
      const at = wall();
      await lock.release();
      await io.send('released', { at });
      await exit;
    }
  } else {
    await io.send('started');
    await io.next('start');
    const acquiring = manager.acquire('hot', { wait: true });
    await io.send('waiting');
    const lock = await Promise.race([acquiring, exit.then(() => null)]);
    if (lock) {
      await io.send('granted', { at: wall() });
      await lock.release();
      await exit;
    }
  }
  await manager.close();
  client.destroy();
}

if (isMain(import.meta.url)) workerMain(work);

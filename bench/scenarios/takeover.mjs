/**
 * Scenario 5: takeover. A holder process acquires a key (lease 2 s, heartbeats), two other
 * processes wait for it; half a heartbeat interval after one of its heartbeats the holder is
 * SIGKILLed (crash) or SIGTERMed (graceful: it stops the lock client, which should release).
 * Measured: time until a waiter holds the lock, from the holder's last heartbeat (reported by
 * a client middleware in the holder, at send time) and from the signal; and what waiting cost
 * while the lock was held (write-equivalents per second per waiter).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { diffCounts, totals } from '../support/counting-proxy.mjs';
import { makeClient, watchWrites } from '../support/client.mjs';
import { round, summarize, wall } from '../support/stats.mjs';
import { forkWorker, isMain, workerMain } from '../support/worker.mjs';
import { createTable, measureRtt, openSystem } from '../systems/index.mjs';

const WAITERS = 2;

export async function run(ctx, { trials, leaseMs, heldMs }) {
  const results = Object.fromEntries(ctx.locks.map((id) => [id, { kill: [], graceful: [] }]));
  for (let t = 0; t < trials; t++) {
    // Crash trials side by side (seconds of idle waiting; a few ms of interference is noise
    // against a lease); graceful ones one system at a time, since they take a few ms.
    const kills = await Promise.all(ctx.locks.map((id) => trial(ctx, id, 'kill', t, { leaseMs, heldMs })));
    ctx.locks.forEach((id, i) => results[id].kill.push(kills[i]));
    for (const id of ctx.locks) results[id].graceful.push(await trial(ctx, id, 'graceful', t, { leaseMs, heldMs }));
  }
  const perSystem = Object.entries(results);
  const out = {};
  for (const [id, results] of perSystem) {
    out[id] = { leaseMs, heartbeatMs: round(leaseMs / 3) };
    for (const mode of ['kill', 'graceful']) {
      const r = results[mode];
      out[id][mode] = {
        trials: r.length,
        fromHeartbeatMs: summarize(r.map((x) => x.fromHeartbeat)),
        fromSignalMs: summarize(r.map((x) => x.fromSignal)),
        rttMs: round(r.reduce((a, x) => a + x.rttMs, 0) / r.length),
        waitWriteEqPerSecondPerWaiter: round(r.reduce((a, x) => a + x.waitCost, 0) / r.length, 2),
        otherErrors: r.reduce((a, x) => a + x.otherErrors, 0),
        warnings: r.flatMap((x) => x.warnings).slice(0, 5),
      };
    }
  }
  return out;
}

async function trial(ctx, id, mode, t, { leaseMs, heldMs }) {
  const table = ctx.table(`s5-${id}-${mode}-${t}`);
  const probeTable = ctx.table(`s5-rtt-${id}-${mode}-${t}`);
  await Promise.all([createTable(ctx.admin, id, table), createTable(ctx.admin, 'baseline', probeTable)]);
  const base = { system: id, endpoint: ctx.proxy.endpoint, table, probeTable, leaseMs, rttSamples: ctx.rttSamples };
  // All three start together; the waiters begin to wait once the holder holds the lock.
  const holder = forkWorker(import.meta.url, { ...base, role: 'holder' });
  const waiters = Array.from({ length: WAITERS }, () => forkWorker(import.meta.url, { ...base, role: 'waiter' }));
  await holder.next('acquired');
  // The RTT of the target, on an idle probe: every process has started, nobody waits yet.
  await Promise.all(waiters.map((w) => w.next('opened')));
  holder.send('probe');
  const { rttMs } = await holder.next('rtt');
  for (const w of waiters) w.send('start');
  await Promise.all(waiters.map((w) => w.next('waiting')));
  const waitFrom = wall();
  const before = await ctx.proxy.counts();
  // Let the waiters settle into their steady waiting, then strike half an interval after a heartbeat.
  await sleep(heldMs);
  const early = holder.drain('beat');
  const awaited = await holder.next('beat', 10_000);
  await sleep(leaseMs / 6);
  const beats = [...early, awaited, ...holder.drain('beat')];
  const signalAt = wall();
  holder.kill(mode === 'kill' ? 'SIGKILL' : 'SIGTERM');
  const after = await ctx.proxy.counts();
  const grants = waiters.map((w) => w.next('granted', 60_000));
  for (const g of grants) g.catch(() => undefined); // the loser exits without a grant
  const granted = await Promise.race(grants);
  await holder.exited;
  // Its last heartbeat is the last write it sent before the signal.
  const lastBeat = Math.max(...beats.map((b) => b.sentAt));
  // The other waiter is not needed: stop both now (one may wait for a whole lease more).
  for (const w of waiters) w.send('exit');
  const reports = await Promise.all(waiters.map((w) => w.next('done').catch(() => ({ warnings: [] }))));
  await Promise.all(waiters.map((w) => w.exited));
  const t2 = totals(diffCounts(before, after, table));
  const seconds = (signalAt - waitFrom) / 1000;
  const holderBeats = beats.filter((b) => b.sentAt >= waitFrom).length;
  return {
    fromHeartbeat: granted.at - lastBeat,
    fromSignal: granted.at - signalAt,
    rttMs,
    waitCost: Math.max(0, t2.writeEq - holderBeats) / seconds / WAITERS,
    otherErrors: t2.otherErrors,
    warnings: reports.flatMap((x) => x.warnings ?? []),
  };
}

async function work(config, io) {
  const client = makeClient(config.endpoint);
  const owner = `s5-${config.system}-${config.role}-${process.pid}`;
  if (config.role === 'holder') {
    const probe = makeClient(config.endpoint);
    watchWrites(client, (sentAt) => void io.send('beat', { sentAt }), wall);
    const lock = await openSystem(config.system, {
      client,
      table: config.table,
      owner,
      leaseMs: config.leaseMs,
      heartbeatMs: Math.round(config.leaseMs / 3),
    });
    process.on('SIGTERM', () => {
      // Graceful shutdown: what an app's shutdown hook does with its lock client.
      lock.close().finally(() => process.exit(0));
    });
    await lock.acquire('hot');
    await io.send('acquired');
    await io.next('probe');
    await io.send('rtt', { rttMs: await measureRtt(probe, config.probeTable, { samples: config.rttSamples }) });
    probe.destroy();
    await new Promise(() => {}); // hold until killed
  }
  const lock = await openSystem(config.system, {
    client,
    table: config.table,
    owner,
    leaseMs: config.leaseMs,
    heartbeatMs: Math.round(config.leaseMs / 3),
  });
  await io.send('opened');
  await io.next('start');
  const acquiring = lock.acquire('hot');
  await io.send('waiting');
  const exit = io.next('exit');
  const held = await Promise.race([acquiring, exit.then(() => null)]);
  if (held) {
    await io.send('granted', { at: wall() });
    await held.release();
    await exit;
  }
  await io.send('done', { warnings: lock.warnings.slice(0, 5) });
}

if (isMain(import.meta.url)) workerMain(work);

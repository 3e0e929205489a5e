/**
 * Counting semaphores across OS processes, against the real servers: every holder is a separate
 * Node process (`semaphore-worker.mjs`, on the built `dist/`), sharing nothing but DynamoDB and
 * the file system. Bounds are generous (two noisy cores) but each separates right from wrong:
 * "at most 3 inside" is counted, not timed; a killed holder's slot is taken "after about a lease"
 * versus "at once" or "never".
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { LockFixture } from '../support/lock-fixture';
import { describeEachServer } from '../support/servers';
import { type WorkerReport, workerPool } from './support/worker-process';

interface Report extends WorkerReport {
  at: number;
  fencingToken?: number;
  inside?: number;
  reason?: string;
  pausedMs?: number;
  actedStale?: boolean;
  aborted?: boolean;
  skewMs?: number;
  /** `Date.now()` minus the real time, in the worker: its clock's skew as applied. */
  wallMinusReal?: number;
}

const { start } = workerPool<Report>('semaphore-worker.mjs');

describeEachServer('semaphore across processes', { shortRunOn: 'dynalite' }, (server) => {
  let fixture: LockFixture;
  let dir: string;
  beforeAll(async () => {
    fixture = await new LockFixture(server).setup();
    dir = mkdtempSync(path.join(tmpdir(), 'semaphore-'));
  });
  afterAll(async () => {
    await fixture.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('10 processes with limit 3: never more than 3 inside, every process gets all its 3 turns, every grant its own fencing token', async () => {
    const insideDir = mkdtempSync(path.join(dir, 'inside-'));
    const config = { key: 'ten-processes', limit: 3, leaseMs: 10_000, mode: 'loop', turns: 3, sectionMs: 300, insideDir, waitForGo: true };
    const ten = Array.from({ length: 10 }, (_, i) => start(server, fixture.tableName, { ...config, owner: `p${i}` }));
    await Promise.all(ten.map((w) => w.next('ready', 60_000)));
    for (const worker of ten) worker.child.send('go');
    await Promise.all(ten.map((w) => w.next('done', 90_000)));
    const turns = ten.flatMap((w) => w.reports.filter((r) => r.type === 'turn'));
    expect(ten.map((w) => w.reports.filter((r) => r.type === 'turn').length)).toEqual(Array(10).fill(3));
    expect(Math.max(...turns.map((t) => t.inside!))).toBeLessThanOrEqual(3);
    expect(new Set(turns.map((t) => t.fencingToken)).size).toBe(30);
  }, 120_000);

  it('a slot holder SIGKILLed frees its slot after about a lease; the other holder keeps its own', async () => {
    const leaseMs = 2_000;
    const base = { key: 'killed-holder', limit: 2, leaseMs };
    const victim = start(server, fixture.tableName, { ...base, owner: 'victim', mode: 'hold' });
    const victimToken = (await victim.next('acquired', 30_000)).fencingToken!;
    const keeper = start(server, fixture.tableName, { ...base, owner: 'keeper', mode: 'hold' });
    await keeper.next('acquired', 30_000);
    const insideDir = mkdtempSync(path.join(dir, 'inside-'));
    const waiter = start(server, fixture.tableName, { ...base, owner: 'waiter', mode: 'loop', turns: 1, sectionMs: 10, insideDir });
    // The waiter is in line (it sees the semaphore full) before the kill.
    const probe = fixture.manager();
    const started = performance.now();
    while (((await probe.inspect('killed-holder'))?.waiting ?? 0) < 1) {
      if (performance.now() - started > 30_000) throw new Error('the waiter never queued');
      await new Promise((r) => setTimeout(r, 50));
    }
    victim.child.kill('SIGKILL');
    const killedAt = performance.now();
    const turn = await waiter.next('turn', 30_000);
    const tookMs = turn.receivedAt - killedAt;
    // The waiter saw the victim's last version at most one heartbeat (a third of the lease) before the kill.
    expect(tookMs).toBeGreaterThanOrEqual(leaseMs - leaseMs / 3 - 100);
    expect(tookMs).toBeLessThan(leaseMs + 8_000);
    expect(turn.fencingToken).toBeGreaterThan(victimToken);
    expect(keeper.reports.some((r) => r.type === 'lost')).toBe(false);
    await waiter.next('done', 30_000);
    const info = await probe.inspect('killed-holder');
    expect(info?.holders?.map((h) => h.owner)).toEqual(['keeper']);
  }, 90_000);

  it('a slot holder SIGSTOPped past its lease is taken over after about a lease; woken, its slot is no longer valid and its signal aborts', async () => {
    const leaseMs = 2_000;
    const base = { key: 'paused-holder', limit: 2, leaseMs };
    const victim = start(server, fixture.tableName, { ...base, owner: 'victim', mode: 'guard' });
    const victimToken = (await victim.next('acquired', 30_000)).fencingToken!;
    const keeper = start(server, fixture.tableName, { ...base, owner: 'keeper', mode: 'guard' });
    await keeper.next('acquired', 30_000);
    const waiter = start(server, fixture.tableName, { ...base, owner: 'waiter', mode: 'guard' });
    const probe = fixture.manager();
    // The victim's renewals as the table shows them (its entry's updatedAt changing), sampled every 50 ms.
    let lastRenewalSeenAt: number | undefined;
    let renewals = 0;
    let sampling = true;
    const sampler = (async () => {
      let updatedAt: number | undefined;
      while (sampling) {
        const victimEntry = (await probe.inspect('paused-holder'))?.holders?.find((h) => h.owner === 'victim');
        const seen = victimEntry?.updatedAt.getTime();
        if (seen !== undefined && updatedAt !== undefined && seen !== updatedAt) {
          lastRenewalSeenAt = performance.now();
          renewals++;
        }
        if (seen !== undefined) updatedAt = seen;
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    try {
      const started = performance.now();
      while (((await probe.inspect('paused-holder'))?.waiting ?? 0) < 1) {
        if (performance.now() - started > 30_000) throw new Error('the waiter never queued');
        await new Promise((r) => setTimeout(r, 50));
      }
      // At least one renewal seen before the stop, so the takeover is timed from the victim's last one.
      while (renewals < 1) {
        if (performance.now() - started > 30_000) throw new Error('no renewal of the victim was seen');
        await new Promise((r) => setTimeout(r, 50));
      }
      victim.child.kill('SIGSTOP');
      const stoppedAt = performance.now();
      const taken = await waiter.next('acquired', 30_000);
      // Timed from the victim's last renewal, not the stop (heartbeats run late on a loaded machine):
      // the waiter read that version after it was written, which the sampler saw at most one sample
      // (50 ms) and one read later; the waiter then waits a whole lease on its own clock.
      expect(taken.receivedAt - lastRenewalSeenAt!).toBeGreaterThanOrEqual(leaseMs - 500);
      expect(taken.receivedAt - stoppedAt).toBeLessThan(leaseMs + 8_000);
      expect(taken.fencingToken).toBeGreaterThan(victimToken);
      // Stopped for a while longer, then woken: its first check finds the slot no longer valid.
      await new Promise((r) => setTimeout(r, 500));
      victim.child.kill('SIGCONT');
      const woke = await victim.next('woke', 10_000);
      expect(woke.pausedMs).toBeGreaterThan(leaseMs);
      expect(woke.actedStale).toBe(false);
      const lost = await victim.next('lost', 10_000);
      expect(['expired', 'taken', 'gone']).toContain(lost.reason);
    } finally {
      sampling = false;
      await sampler;
    }
    expect(keeper.reports.some((r) => r.type === 'lost' || r.type === 'woke')).toBe(false);
    expect(waiter.reports.some((r) => r.type === 'lost')).toBe(false);
    const info = await probe.inspect('paused-holder');
    expect(info?.holders?.map((h) => h.owner).sort()).toEqual(['keeper', 'waiter']);
  }, 60_000);

  it('processes with wall clocks 30 s ahead and behind: never more than `limit` inside, every process gets its turns', async () => {
    const insideDir = mkdtempSync(path.join(dir, 'inside-'));
    // Leases of 6 s, long enough for six processes on a loaded machine, still far below the 30 s skew.
    const config = { key: 'skewed', limit: 2, leaseMs: 6_000, mode: 'loop', turns: 3, sectionMs: 150, insideDir, waitForGo: true };
    const skews = [30_000, -30_000, 30_000, -30_000, 0, 0];
    const six = skews.map((skew, i) => start(server, fixture.tableName, { ...config, owner: `s${i}` }, skew));
    const ready = await Promise.all(six.map((w) => w.next('ready', 30_000)));
    // The preload shifted each worker's wall clock as asked (to within a second).
    expect(ready.map((r) => r.skewMs)).toEqual(skews);
    ready.forEach((r, i) => expect(Math.abs(r.wallMinusReal! - skews[i]!)).toBeLessThan(1_000));
    for (const worker of six) worker.child.send('go');
    await Promise.all(six.map((w) => w.next('done', 45_000)));
    const turns = six.flatMap((w) => w.reports.filter((r) => r.type === 'turn'));
    expect(six.map((w) => w.reports.filter((r) => r.type === 'turn').length)).toEqual(Array(6).fill(3));
    expect(Math.max(...turns.map((t) => t.inside!))).toBeLessThanOrEqual(2);
    expect(new Set(turns.map((t) => t.fencingToken)).size).toBe(18);
  }, 60_000);
});

/**
 * Scheduled jobs run exactly once per fire (`fireTime`), at the LockManager level: two managers
 * sharing a table (or a memory store) are two instances of an app whose schedule fires on both.
 */
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type DynamoLockOptions,
  type JobFire,
  type Lock,
  LockBusyError,
  type LockEvent,
  LockManager,
  LockValidationError,
  MemoryLockStore,
} from '../../lib';
import { type LockStores, storesOf } from '../../lib/store/lock-stores';
import type { MutexStorePort } from '../../lib/store/mutex/mutex-store.port';
import { LockFixture, MemoryLogger } from '../support/lock-fixture';
import { countRequests } from '../support/request-counter';
import { describeEachServer } from '../support/servers';

/** A scheduled time, as a cron schedule names a fire: the schedule's, not any clock's. */
const T = Date.UTC(2031, 5, 1, 3, 0, 0);
/** The schedule's period. */
const P = 60_000;
/** Lease of the runs the watch tests let die (heartbeat: false, never released). */
const DEAD_LEASE = 1_000;
/** Lease of a live run (renewed by heartbeats every third of it). */
const LIVE_LEASE = 1_500;

let keySeq = 0;
const newKey = (name: string) => `job-${name}-${++keySeq}`;

/** A manager under test, and the reads (strongly consistent or not) its store requests have made so far. */
interface Instance {
  manager: LockManager;
  reads(): number;
  /** Every event this manager emitted, in order. */
  events: LockEvent[];
}

/** How a suite gets its instances: each a manager of its own, all sharing one table or store. */
type Instances = (owner: string, options?: DynamoLockOptions) => Instance;

function watchEvents(manager: LockManager): LockEvent[] {
  const events: LockEvent[] = [];
  manager.subscribe((event) => events.push(event));
  return events;
}

/** The `fire` events of a manager, of its key. */
const fireEvents = (instance: Instance, key: string) => instance.events.filter((e) => e.type === 'fire' && e.key === key);

/** Polls `check` until it returns true; fails after `ms`. */
async function until(check: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = performance.now() + ms;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(10);
  }
}

/** The LockBusyError an attempt rejects with (fails the test when it resolves or rejects otherwise). */
async function busyOf(attempt: Promise<Lock>): Promise<LockBusyError> {
  const error = await attempt.then(
    (lock) => {
      void lock.release();
      return new Error(`expected a LockBusyError; got the lock (fencing token ${lock.fencingToken})`);
    },
    (rejection: unknown) => rejection,
  );
  if (!(error instanceof LockBusyError)) throw error instanceof Error ? error : new Error(String(error));
  return error;
}

/** A wall-clock time (a Date) between `from` and `to` (ms since the epoch). */
function dateBetween(from: number, to: number): Date {
  const matcher = {
    asymmetricMatch: (value: unknown) => value instanceof Date && value.getTime() >= from && value.getTime() <= to,
    toString: () => `a Date between ${new Date(from).toISOString()} and ${new Date(to).toISOString()}`,
    toAsymmetricMatcher: () => `a Date between ${new Date(from).toISOString()} and ${new Date(to).toISOString()}`,
  };
  return matcher as unknown as Date;
}

function scheduledFiresSuite(name: string, instances: () => Instances): void {
  describe(`scheduled fires [${name}]`, () => {
    it('the instance that claims fire T runs it; the other skips T while it runs and after it, and so does the first', async () => {
      const [a, b] = [instances()('A'), instances()('B')];
      const key = newKey('once');
      const run = await a.manager.tryAcquire(key, { fireTime: new Date(T) });
      expect(run).not.toBeNull();
      expect(run!.owner).toBe('A');

      // The same fire, as a number or a Date: skipped (null from tryAcquire, fireClaimed from acquire).
      expect(await b.manager.tryAcquire(key, { fireTime: T })).toBeNull();
      const during = await busyOf(b.manager.acquire(key, { fireTime: T, wait: false }));
      expect(during.fireClaimed).toEqual({ scheduledAt: new Date(T), owner: 'A' });
      expect(during.key).toBe(key);
      expect(during.message).toContain(new Date(T).toISOString());
      expect(await a.manager.tryAcquire(key, { fireTime: T })).toBeNull();

      expect(await run!.release()).toBe(true);

      // After the release the claim stays: nobody runs T again, the key being free.
      expect(await b.manager.tryAcquire(key, { fireTime: new Date(T) })).toBeNull();
      const after = await busyOf(b.manager.acquire(key, { fireTime: T, wait: 0 }));
      expect(after.fireClaimed).toEqual({ scheduledAt: new Date(T), owner: 'A' });
      expect(after.holder).toBeUndefined();
      expect(await a.manager.tryAcquire(key, { fireTime: T })).toBeNull();
      expect(await b.manager.inspect(key)).toBeNull();
    });

    it('a later fire is taken by whichever instance tries first; a late attempt at an earlier fire is skipped, naming the later claim', async () => {
      const [a, b] = [instances()('A'), instances()('B')];
      const key = newKey('later');
      const first = await a.manager.tryAcquire(key, { fireTime: T });
      expect(await first!.release()).toBe(true);

      const second = await b.manager.tryAcquire(key, { fireTime: T + P });
      expect(second).not.toBeNull();
      expect(second!.owner).toBe('B');
      expect(await second!.release()).toBe(true);
      expect(await a.manager.tryAcquire(key, { fireTime: T + P })).toBeNull();

      // An instance that lags behind the schedule tries T + P/2 (or T) after T + P ran: skipped.
      for (const late of [T, T + P / 2, T + P]) {
        const error = await busyOf(a.manager.acquire(key, { fireTime: late, wait: false }));
        expect(error.fireClaimed).toEqual({ scheduledAt: new Date(T + P), owner: 'B' });
      }
      // An earlier fire is past (superseded); the same one ran elsewhere.
      const reasons = fireEvents(a, key)
        .map((e) => e as Extract<LockEvent, { type: 'fire' }>)
        .filter((e) => e.outcome === 'skipped')
        .map((e) => e.reason);
      expect(reasons.slice(-3)).toEqual(['superseded', 'superseded', 'ran-elsewhere']);

      const third = await a.manager.tryAcquire(key, { fireTime: T + 2 * P });
      expect(third).not.toBeNull();
      expect(await third!.release()).toBe(true);
      expect(await b.manager.lastFire(key)).toMatchObject({ scheduledAt: new Date(T + 2 * P), owner: 'A', outcome: 'done' });
    });

    it('the fire is the number the caller gives: a claim of T from an instance whose clock is 20 s ahead (or behind) still fails after T ran', async () => {
      const [a, b] = [instances()('A'), instances()('B')];
      const key = newKey('skew');
      const run = await a.manager.tryAcquire(key, { fireTime: T });
      expect(await run!.release()).toBe(true);

      const realNow = Date.now.bind(Date);
      for (const skewMs of [20_000, -20_000]) {
        const skewed = jest.spyOn(Date, 'now').mockImplementation(() => realNow() + skewMs);
        try {
          expect(await b.manager.tryAcquire(key, { fireTime: T })).toBeNull();
          const error = await busyOf(b.manager.acquire(key, { fireTime: T, wait: false }));
          expect(error.fireClaimed).toEqual({ scheduledAt: new Date(T), owner: 'A' });
        } finally {
          skewed.mockRestore();
        }
      }
      // A skewed instance takes the next fire as any other would; its clock only dates the run.
      const skewed = jest.spyOn(Date, 'now').mockImplementation(() => realNow() + 20_000);
      let next: Lock | null;
      const from = realNow() + 20_000;
      try {
        next = await b.manager.tryAcquire(key, { fireTime: T + P });
      } finally {
        skewed.mockRestore();
      }
      expect(next).not.toBeNull();
      expect((await a.manager.lastFire(key))?.startedAt).toEqual(dateBetween(from, realNow() + 20_000));
      expect(await next!.release()).toBe(true);
      expect(await a.manager.tryAcquire(key, { fireTime: T + P })).toBeNull();
    });

    it('lastFire() and inspect().lastFire: null before any fire; owner and start, running, while held; done with an end after the release', async () => {
      const [a, b] = [instances()('A'), instances()('B')];
      const key = newKey('last-fire');
      expect(await a.manager.lastFire(key)).toBeNull();
      // A key locked without fireTime has no fire either.
      const plain = await a.manager.acquire(key, { wait: false });
      expect(await b.manager.lastFire(key)).toBeNull();
      expect((await b.manager.inspect(key))?.lastFire).toBeUndefined();
      expect(await plain.release()).toBe(true);

      const from = Date.now();
      const run = await a.manager.tryAcquire(key, { fireTime: T });
      const to = Date.now();
      const running: JobFire = { scheduledAt: new Date(T), owner: 'A', startedAt: dateBetween(from, to), outcome: 'running' };
      for (const reader of [a, b]) {
        const fire = await reader.manager.lastFire(key);
        expect(fire).toEqual(running);
        expect(fire).not.toHaveProperty('endedAt');
        const info = await reader.manager.inspect(key);
        expect(info).toMatchObject({ key, owner: 'A', fencingToken: run!.fencingToken });
        expect(info?.lastFire).toEqual(running);
      }

      const releasedFrom = Date.now();
      expect(await run!.release()).toBe(true);
      const releasedTo = Date.now();
      const done = await b.manager.lastFire(key);
      expect(done).toEqual({ ...running, endedAt: dateBetween(releasedFrom, releasedTo), outcome: 'done' });
      expect(done!.endedAt!.getTime()).toBeGreaterThanOrEqual(done!.startedAt.getTime());
      // Free: inspect() shows no holder (the fire is read with lastFire()).
      expect(await b.manager.inspect(key)).toBeNull();

      // A holder without fireTime leaves the last fire as it was; inspect() shows it while held.
      const other = await b.manager.acquire(key, { wait: false });
      expect((await a.manager.inspect(key))?.lastFire).toEqual(done);
      expect(await other.release()).toBe(true);
      expect(await a.manager.lastFire(key)).toEqual(done);
    });

    it("close() with the lock of a fire held records the fire 'failed' (the 'ran' event says so); the next fire runs elsewhere at once", async () => {
      const [a, b] = [instances()('A'), instances()('B')];
      const key = newKey('close');
      const run = await a.manager.tryAcquire(key, { fireTime: T });
      expect(run).not.toBeNull();
      const from = Date.now();
      await a.manager.close();
      expect(run!.isHeld).toBe(false);
      const fire = await b.manager.lastFire(key);
      expect(fire).toMatchObject({ scheduledAt: new Date(T), owner: 'A', outcome: 'failed', endedAt: dateBetween(from, Date.now()) });
      expect(fireEvents(a, key)).toEqual([{ type: 'fire', key, owner: 'A', scheduledAt: new Date(T), outcome: 'ran', result: 'failed' }]);
      // The shutdown released the key: the next fire is free at once, and T stays claimed.
      expect(await b.manager.tryAcquire(key, { fireTime: T })).toBeNull();
      const next = await b.manager.tryAcquire(key, { fireTime: T + P });
      expect(next).not.toBeNull();
      expect(await next!.release()).toBe(true);
    });

    it("emits 'fire' events: skipped ran-elsewhere / previous-run (with who) before 'busy'; ran with result done at the release; none without fireTime", async () => {
      const [a, b] = [instances()('A'), instances()('B')];
      const key = newKey('events');
      const run = await a.manager.tryAcquire(key, { fireTime: T, leaseDuration: LIVE_LEASE });
      expect(fireEvents(a, key)).toEqual([]);

      expect(await b.manager.tryAcquire(key, { fireTime: T })).toBeNull();
      expect(await b.manager.tryAcquire(key, { fireTime: T + P })).toBeNull();
      // Without fireTime, a busy single attempt tells of no fire.
      expect(await b.manager.tryAcquire(key)).toBeNull();
      expect(fireEvents(b, key)).toEqual([
        { type: 'fire', key, owner: 'B', scheduledAt: new Date(T), outcome: 'skipped', reason: 'ran-elsewhere', by: 'A' },
        { type: 'fire', key, owner: 'B', scheduledAt: new Date(T + P), outcome: 'skipped', reason: 'previous-run', by: 'A' },
      ]);
      // Each skip is followed by its 'busy' event.
      const ofKey = b.events.filter((e) => e.key === key).map((e) => (e.type === 'fire' ? `fire:${e.reason}` : e.type));
      expect(ofKey).toEqual(['fire:ran-elsewhere', 'busy', 'fire:previous-run', 'busy', 'busy']);

      expect(await run!.release()).toBe(true);
      expect(fireEvents(a, key)).toEqual([{ type: 'fire', key, owner: 'A', scheduledAt: new Date(T), outcome: 'ran', result: 'done' }]);
      const aOfKey = a.events.filter((e) => e.key === key).map((e) => e.type);
      expect(aOfKey).toEqual(['acquired', 'fire', 'released']);

      // After the run: T was claimed (ran-elsewhere, by A); no run holds the key.
      expect(await b.manager.tryAcquire(key, { fireTime: T })).toBeNull();
      expect(fireEvents(b, key).at(-1)).toEqual({
        type: 'fire',
        key,
        owner: 'B',
        scheduledAt: new Date(T),
        outcome: 'skipped',
        reason: 'ran-elsewhere',
        by: 'A',
      });
      // A plain lock released emits no fire event.
      const plain = await b.manager.acquire(key, { wait: false });
      expect(await plain.release()).toBe(true);
      expect(fireEvents(b, key)).toHaveLength(3);
      expect(fireEvents(a, key)).toHaveLength(1);
    });

    it('rejects fireTime with a waiting acquire, with limit, or when it is not a valid time, before any request', async () => {
      const [a] = [instances()('A')];
      const key = newKey('validation');
      const bad: unknown[] = [Number.NaN, Number.POSITIVE_INFINITY, -1, new Date('not a date'), '2031-06-01T03:00:00Z', null, {}];
      const calls: [string, () => Promise<unknown>][] = [
        ["acquire() with wait: '1s'", () => a.manager.acquire(key, { fireTime: T, wait: '1s' })],
        ['acquire() with wait: true', () => a.manager.acquire(key, { fireTime: T, wait: true })],
        ['acquire() with the default wait', () => a.manager.acquire(key, { fireTime: T })],
        ['withLock() with the default wait', () => a.manager.withLock(key, () => 'ran', { fireTime: T })],
        ['acquire() with limit', () => a.manager.acquire(key, { fireTime: T, wait: false, limit: 2 })],
        ['tryAcquire() with limit', () => a.manager.tryAcquire(key, { fireTime: T, limit: 2 })],
        ...bad.map((fireTime): [string, () => Promise<unknown>] => [
          `tryAcquire() with fireTime ${String(fireTime)}`,
          () => a.manager.tryAcquire(key, { fireTime: fireTime as number }),
        ]),
        ...bad.map((fireTime): [string, () => Promise<unknown>] => [
          `acquire() with fireTime ${String(fireTime)}`,
          () => a.manager.acquire(key, { fireTime: fireTime as Date, wait: false }),
        ]),
      ];
      for (const [what, call] of calls) {
        const outcome = await call().then(
          () => 'resolved',
          (error: unknown) => error,
        );
        if (!(outcome instanceof LockValidationError)) throw new Error(`${what}: expected a LockValidationError, got ${String(outcome)}`);
        expect(outcome.message).toContain('fireTime');
      }
      // Nothing was written: no fire, no holder, no semaphore.
      expect(await a.manager.lastFire(key)).toBeNull();
      expect(await a.manager.inspect(key)).toBeNull();
      // wait: false, wait: 0 and tryAcquire() are single attempts: accepted.
      const ok = await a.manager.acquire(key, { fireTime: T, wait: 0 });
      expect(await ok.release()).toBe(true);
    });

    it("RunWatch: a run whose instance died is passed by the instance that skipped for it, within two leases; its fire is 'lost' and the next fire runs at once", async () => {
      const [a, b] = [instances()('A'), instances()('B')];
      const key = newKey('dead-run');
      // A crashed instance: its run never renews nor releases (A is closed only at the end).
      const dead = await a.manager.tryAcquire(key, { fireTime: T, leaseDuration: DEAD_LEASE, heartbeat: false });
      expect(dead).not.toBeNull();

      const skippedAt = performance.now();
      expect(await b.manager.tryAcquire(key, { fireTime: T + 1, leaseDuration: DEAD_LEASE })).toBeNull();
      expect(fireEvents(b, key)).toEqual([
        { type: 'fire', key, owner: 'B', scheduledAt: new Date(T + 1), outcome: 'skipped', reason: 'previous-run', by: 'A' },
      ]);

      let lostAt = 0;
      await until(
        () => {
          if (fireEvents(b, key).some((e) => e.type === 'fire' && e.outcome === 'lost')) lostAt ||= performance.now();
          return lostAt > 0;
        },
        6 * DEAD_LEASE,
        "B's 'lost' event",
      );
      const tookMs = lostAt - skippedAt;
      // Never before the run's version stayed unchanged for its lease; then within two leases.
      expect(tookMs).toBeGreaterThanOrEqual(DEAD_LEASE - 5);
      expect(tookMs).toBeLessThan(2 * DEAD_LEASE + 500);
      expect(fireEvents(b, key)[1]).toEqual({ type: 'fire', key, owner: 'B', scheduledAt: new Date(T), outcome: 'lost', by: 'A' });
      expect(fireEvents(b, key)).toHaveLength(2);

      const lost = await b.manager.lastFire(key);
      expect(lost).toMatchObject({ scheduledAt: new Date(T), owner: 'A', outcome: 'lost', endedAt: expect.any(Date) });
      // The pass freed the key: no holder.
      expect(await b.manager.inspect(key)).toBeNull();

      // The next fire's single attempt takes the lock at once, with the free write.
      const acquiredBefore = b.events.filter((e) => e.type === 'acquired' && e.key === key).length;
      const next = await b.manager.tryAcquire(key, { fireTime: T + 2, leaseDuration: DEAD_LEASE });
      expect(next).not.toBeNull();
      const acquired = b.events.filter((e) => e.type === 'acquired' && e.key === key);
      expect(acquired).toHaveLength(acquiredBefore + 1);
      expect(['free', 'takeover']).toContain((acquired.at(-1) as Extract<LockEvent, { type: 'acquired' }>).via);
      expect(next!.fencingToken).toBeGreaterThan(dead!.fencingToken);
      expect(await a.manager.lastFire(key)).toMatchObject({ scheduledAt: new Date(T + 2), owner: 'B', outcome: 'running' });
      expect(await next!.release()).toBe(true);

      // The dead instance coming back (closing) cannot touch the fire that ran after it.
      await a.manager.close();
      expect(await b.manager.lastFire(key)).toMatchObject({ scheduledAt: new Date(T + 2), owner: 'B', outcome: 'done' });
      // Nor can the late fire T + 1 (skipped) or T (lost) run now.
      expect(await b.manager.tryAcquire(key, { fireTime: T + 1 })).toBeNull();
      expect(await b.manager.tryAcquire(key, { fireTime: T })).toBeNull();
    }, 30_000);

    it('RunWatch: a live run (renewing its lease) is never passed; once it ends, the watch stops and no read is made while no run is in progress', async () => {
      const [a, b] = [instances()('A'), instances()('B')];
      const key = newKey('live-run');
      const run = await a.manager.tryAcquire(key, { fireTime: T, leaseDuration: LIVE_LEASE });
      expect(run).not.toBeNull();

      const readsBefore = b.reads();
      const skippedAt = performance.now();
      expect(await b.manager.tryAcquire(key, { fireTime: T + P })).toBeNull();
      await sleep(2.5 * LIVE_LEASE);
      const watchedMs = performance.now() - skippedAt;
      const readsDuringRun = b.reads() - readsBefore;
      // The watch reads while the run is in progress: about twice per lease of the holder.
      expect(readsDuringRun).toBeGreaterThanOrEqual(2);
      expect(readsDuringRun).toBeLessThanOrEqual(Math.ceil((2 * watchedMs) / LIVE_LEASE) + 3);
      expect(run!.isHeld).toBe(true);
      expect(fireEvents(b, key).filter((e) => e.type === 'fire' && e.outcome === 'lost')).toEqual([]);
      expect(await b.manager.lastFire(key)).toMatchObject({ scheduledAt: new Date(T), owner: 'A', outcome: 'running' });

      expect(await run!.release()).toBe(true);
      // The watch reads once more within half a lease, finds the run ended and stops.
      await sleep(LIVE_LEASE);
      const quietFrom = b.reads();
      await sleep(2 * LIVE_LEASE);
      expect(b.reads() - quietFrom).toBe(0);
      expect(await b.manager.lastFire(key)).toMatchObject({ scheduledAt: new Date(T), owner: 'A', outcome: 'done' });
      expect(fireEvents(b, key).filter((e) => e.type === 'fire' && e.outcome === 'lost')).toEqual([]);
    }, 30_000);

    it('RunWatch: an instance that skips a fire for its own run in progress does not watch that run (a read at most), nor passes it', async () => {
      const [a] = [instances()('A')];
      const key = newKey('own-run');
      const run = await a.manager.tryAcquire(key, { fireTime: T, leaseDuration: LIVE_LEASE });
      expect(run).not.toBeNull();
      const from = a.reads();
      expect(await a.manager.tryAcquire(key, { fireTime: T + P })).toBeNull();
      expect(fireEvents(a, key)).toEqual([
        { type: 'fire', key, owner: 'A', scheduledAt: new Date(T + P), outcome: 'skipped', reason: 'previous-run', by: 'A' },
      ]);
      await sleep(3 * LIVE_LEASE);
      expect(a.reads() - from).toBeLessThanOrEqual(1);
      expect(run!.isHeld).toBe(true);
      expect(await run!.release()).toBe(true);
      expect(await a.manager.lastFire(key)).toMatchObject({ scheduledAt: new Date(T), owner: 'A', outcome: 'done' });
    }, 30_000);

    it("a retry of the fire this instance's own run holds is skipped as claimed (here), not as a previous run", async () => {
      const [a] = [instances()('A')];
      const key = newKey('own-retry');
      const run = await a.manager.tryAcquire(key, { fireTime: T });
      expect(run).not.toBeNull();
      const again = await busyOf(a.manager.acquire(key, { fireTime: T, wait: false }));
      expect(again.fireClaimed).toEqual({ scheduledAt: new Date(T), owner: 'A' });
      expect(await run!.release()).toBe(true);
    });

    it("withLock() with fireTime records the run 'failed' when its function throws, 'done' when it returns", async () => {
      const [a] = [instances()('A')];
      const key = newKey('with-lock');
      await expect(a.manager.withLock(key, () => Promise.reject(new Error('report failed')), { fireTime: T, wait: false })).rejects.toThrow(
        'report failed',
      );
      expect(await a.manager.lastFire(key)).toMatchObject({ scheduledAt: new Date(T), outcome: 'failed' });
      await a.manager.withLock(key, () => 'ok', { fireTime: T + P, wait: false });
      expect(await a.manager.lastFire(key)).toMatchObject({ scheduledAt: new Date(T + P), outcome: 'done' });
    });

    it('rejects fireTime on a key the async context holds already (a nested call would claim no fire)', async () => {
      const [a] = [instances()('A')];
      const key = newKey('nested');
      await a.manager.withLock(key, async () => {
        await expect(a.manager.tryAcquire(key, { fireTime: T })).rejects.toThrow(LockValidationError);
        await expect(a.manager.tryAcquire(key, { fireTime: T })).rejects.toThrow(
          /holds lock ".*" already, so the call would join that lock/,
        );
      });
      expect(await a.manager.lastFire(key)).toBeNull();
    });

    it('RunWatch: after passing a dead run, the watch stops: no read while no run is in progress', async () => {
      const [a, b] = [instances()('A'), instances()('B')];
      const key = newKey('quiet-after-pass');
      expect(await a.manager.tryAcquire(key, { fireTime: T, leaseDuration: DEAD_LEASE, heartbeat: false })).not.toBeNull();
      const idleFrom = b.reads();
      // Before any skip, B does not read the key at all.
      await sleep(DEAD_LEASE);
      expect(b.reads()).toBe(idleFrom);

      expect(await b.manager.tryAcquire(key, { fireTime: T + P })).toBeNull();
      await until(() => fireEvents(b, key).some((e) => e.type === 'fire' && e.outcome === 'lost'), 6 * DEAD_LEASE, "B's 'lost' event");
      await sleep(DEAD_LEASE / 2);
      const quietFrom = b.reads();
      await sleep(3 * DEAD_LEASE);
      expect(b.reads() - quietFrom).toBe(0);
      await a.manager.close();
    }, 30_000);
  });
}

// ---- on every server: managers on one table, each with its own client ----

describeEachServer('scheduled fires on DynamoDB', { shortRunOn: 'dynamodb-local' }, (server) => {
  let fixture: LockFixture;
  beforeAll(async () => {
    fixture = await new LockFixture(server).setup();
  });
  afterAll(() => fixture?.close());

  scheduledFiresSuite(server.name, () => (owner, options = {}) => {
    const manager = fixture.manager({ ownerName: owner, ...options });
    const counter = countRequests(manager.client);
    return { manager, reads: () => counter.count('GetItem'), events: watchEvents(manager) };
  });
});

// ---- on the memory store: managers sharing its items, each through a store that counts its reads ----

describe('scheduled fires on a MemoryLockStore', () => {
  const managers: LockManager[] = [];
  let stores: LockStores;
  /** Reads that were not strongly consistent: the watch must never decide on an eventual read. */
  const eventualReads: string[] = [];
  beforeAll(() => {
    stores = storesOf(new MemoryLockStore())!;
  });
  afterAll(async () => {
    await Promise.all(managers.map((m) => m.close()));
  });

  /** The shared stores, with a mutex store whose reads are counted for this instance alone. */
  function countingStores(): { stores: LockStores; reads: () => number } {
    let reads = 0;
    const inner = stores.mutex;
    const mutex = new Proxy(inner, {
      get(target, property, receiver) {
        const value: unknown = Reflect.get(target, property, receiver);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          if (property === 'read') {
            reads++;
            if (args[1] === 'eventual') eventualReads.push(String(args[0]));
          }
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    }) as MutexStorePort;
    return { stores: { ...stores, mutex }, reads: () => reads };
  }

  scheduledFiresSuite('memory', () => (owner, options = {}) => {
    const counted = countingStores();
    const manager = new LockManager({
      store: counted.stores,
      verifyTable: false,
      ownerName: owner,
      logger: new MemoryLogger(),
      ...options,
    });
    managers.push(manager);
    return { manager, reads: counted.reads, events: watchEvents(manager) };
  });

  it('(after the suite) the watches made strongly consistent reads only', () => {
    expect(eventualReads).toEqual([]);
  });
});

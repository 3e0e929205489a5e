/**
 * Every way a caller stops frees what it held or queued, at once (issue 28, section 1), through
 * `LockManager` on DynamoDB Local, dynalite and the memory store:
 * - a lease that ran out unnoticed is freed by its `release()` when nobody took it (`'expired'`),
 *   and left alone when another owner did (`'not-held'`);
 * - a waiter of another process that stops waiting (its signal, its `wait`, its manager's shutdown)
 *   leaves the line: the holder's release serves the next live waiter, and a single attempt right
 *   after it gets the key, instead of waiting out the abandoned ticket's claim lease (5 s);
 * - an acquire whose write landed while its answer, and every request after it, was lost is
 *   released in the background once DynamoDB answers again, long before its lease ends.
 * Bounds are counted from the mechanism (a leave is one write after the caller stops; a waiter next
 * in line reads at least every `maxPollInterval`, 1 s, one further back at least every half claim
 * lease; a clean-up retries at least every 2 s) against the claim lease or the lease the old code
 * waited for, with margins for a loaded machine.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import { type DynamoLockOptions, type Lock, type LockEvent, LockBusyError, LockManager, LockUnavailableError } from '../../lib';
import { MemoryLockStore } from '../../lib/store/memory-lock.store';
import { DynamoMutexStore } from '../../lib/store/mutex/mutex.dynamo-store';
import type { LockRecord } from '../../lib/store/mutex/mutex.record';
import { CLAIM_LEASE_MS } from '../../lib/store/mutex/mutex-store.protocol';
import type { MutexStorePort } from '../../lib/store/mutex/mutex-store.port';
import { customStores, memoryStoresOf } from '../support/custom-stores';
import { faultError, injectFaults } from '../support/fault-injection';
import { LockFixture, MemoryLogger } from '../support/lock-fixture';
import { rejectionOf } from '../support/rejection';
import { describeEachServer } from '../support/servers';

let keySeq = 0;
const newKey = (name: string) => `stop-${name}-${++keySeq}`;

/** A leave is one write after the caller stops (after the request in flight, if any): a few round trips, generously. */
const LEAVE_BOUND_MS = 3_000;
/** A waiter's `maxPollInterval` where a test counts on it. */
const POLL_MS = 200;
/** The lease of an acquire whose answer is lost: what the key stayed blocked for before. */
const LOST_LEASE_MS = 20_000;

/** A manager whose next acquiring write is applied but its answer lost, and whose every request fails after it, until `heal()`. */
interface FaultyManager {
  readonly manager: LockManager;
  loseAcquireAnswer(): void;
  heal(): void;
}

/** What a suite needs of a place for lock items: managers on it, raw reads, a manager whose requests fail on demand. */
interface StoreSetup {
  manager(owner: string, options?: DynamoLockOptions): LockManager;
  read(key: string): Promise<LockRecord | undefined>;
  faulty(owner: string): FaultyManager;
}

/** Every event a manager emits, kept for assertions. */
function recordEvents(manager: LockManager): LockEvent[] {
  const events: LockEvent[] = [];
  manager.subscribe((event) => void events.push(event));
  return events;
}

/** The outcomes of the `cleanup` events of `key`, in order. */
function cleanupsOf(events: readonly LockEvent[], key: string): string[] {
  return events.flatMap((event) => (event.type === 'cleanup' && event.key === key ? [event.outcome] : []));
}

/** Polls `check` until it holds or `timeoutMs` passed; says which. */
async function eventually(check: () => boolean | Promise<boolean>, timeoutMs: number, everyMs = 20): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (performance.now() > deadline) return false;
    await sleep(everyMs);
  }
}

/** Waits until the item shows `count` tickets taken behind the one served; returns the last ticket taken. */
async function ticketsTaken(read: StoreSetup['read'], key: string, count: number): Promise<number> {
  let record: LockRecord | undefined;
  const behind = (r: LockRecord | undefined) => (r?.head === undefined || r.tail === undefined ? 0 : r.tail - r.head - 1);
  const taken = await eventually(async () => behind((record = await read(key))) >= count, 10_000);
  if (!taken) throw new Error(`no ${count} tickets behind the holder of ${key}: ${JSON.stringify(record)}`);
  return record!.tail! - 1;
}

/** Single attempts until one gets the lock (a silent holder is passed once its record stayed the same for its lease). */
async function pollTryAcquire(attempt: () => Promise<Lock | null>, limitMs: number): Promise<Lock> {
  const deadline = performance.now() + limitMs;
  for (;;) {
    const lock = await attempt();
    if (lock) return lock;
    if (performance.now() > deadline) throw new Error(`no lock after ${limitMs} ms of single attempts`);
    await sleep(50);
  }
}

/**
 * A waiter of `events`' manager stopped waiting for `key` behind `held`: once its manager says it
 * left, the holder releases, and a single attempt of a third process right after gets the key.
 */
async function expectFreeAfterRelease(setup: StoreSetup, held: Lock, third: LockManager, events: LockEvent[], ticket: number) {
  const key = held.key;
  const left = await eventually(() => cleanupsOf(events, key).includes('left'), LEAVE_BOUND_MS);
  const leftSet = (await setup.read(key))?.left;
  expect(await held.release()).toBe(true);
  // One attempt, no polling: the release passed the ticket that left, so the key is free now.
  const next = await third.tryAcquire(key);
  expect(next).not.toBeNull();
  expect(next!.fencingToken).toBeGreaterThan(held.fencingToken);
  await next!.release();
  expect(left).toBe(true);
  expect(leftSet).toEqual([ticket]);
  expect(cleanupsOf(events, key)).toEqual(['left']);
}

/**
 * A holder of `key` and four waiters of four other managers in line behind it, in order; the
 * middle two give up and leave the line.
 */
async function lineWithMiddleLeft(s: StoreSetup, key: string, options?: DynamoLockOptions) {
  const held = await s.manager('holder').acquire(key);
  const heldAt = performance.now();
  const waiters = ['w1', 'w2', 'w3', 'w4'].map((owner) => s.manager(owner, options));
  const events = waiters.map(recordEvents);
  const controllers = waiters.map(() => new AbortController());
  const order: string[] = [];
  const outcomes: Promise<Lock | Error>[] = [];
  const tickets: number[] = [];
  for (const [i, waiter] of waiters.entries()) {
    const acquired = waiter.acquire(key, { wait: '60s', signal: controllers[i].signal });
    outcomes.push(acquired.then((lock) => (order.push(lock.owner), lock)).catch((error: Error) => error));
    // One at a time, so that the tickets are in the order of the waiters.
    tickets.push(await ticketsTaken(s.read, key, i + 1));
  }
  controllers[1].abort(new Error('w2 gave up'));
  controllers[2].abort(new Error('w3 gave up'));
  const bothLeft = () => [1, 2].every((i) => cleanupsOf(events[i], key).includes('left'));
  expect(await eventually(bothLeft, LEAVE_BOUND_MS)).toBe(true);
  expect((await s.read(key))?.left).toEqual([tickets[1], tickets[2]]);
  return { held, heldAt, events, order, outcomes, tickets };
}

function stoppingCallersSuite(name: string, setup: () => StoreSetup): void {
  describe(`a lease that ran out unnoticed [${name}]`, () => {
    it.each([
      ['release({ outcome: true })', 'expired', true],
      ['release()', false, false],
    ] as const)(
      '%s resolves %p and frees it when nobody took it (a cleanup event): the next single attempt gets the key',
      async (_, says, outcome) => {
        const { manager } = setup();
        const [late, next] = [manager('late'), manager('next')];
        const events = recordEvents(late);
        const key = newKey('expired');
        const lock = await late.acquire(key, { leaseDuration: 300, heartbeat: false });
        await sleep(450);
        expect(await (outcome ? lock.release({ outcome }) : lock.release())).toBe(says);
        const taken = await next.tryAcquire(key);
        expect(taken).not.toBeNull();
        expect(taken!.fencingToken).toBeGreaterThan(lock.fencingToken);
        expect(cleanupsOf(events, key)).toEqual(['released']);
        await taken!.release();
      },
    );

    it("ran out while the event loop was blocked (no timer could fire): 'expired', not 'released'", async () => {
      const { manager } = setup();
      const [late, next] = [manager('late'), manager('next')];
      const key = newKey('expired-blocked');
      const lock = await late.acquire(key, { leaseDuration: 300, heartbeat: false });
      // A synchronous task longer than the lease: the lease ran out before release() was called.
      const until = performance.now() + 450;
      while (performance.now() < until);
      expect(await lock.release({ outcome: true })).toBe('expired');
      const taken = await next.tryAcquire(key);
      expect(taken).not.toBeNull();
      await taken!.release();
    });

    it("another owner took it meanwhile: 'not-held', and the new holder's item is left as it was", async () => {
      const { manager, read } = setup();
      const [late, taker] = [manager('late'), manager('taker')];
      const key = newKey('taken');
      const lock = await late.acquire(key, { leaseDuration: 300, heartbeat: false });
      // No heartbeats either: the new holder's item does not change by itself.
      const taken = await pollTryAcquire(() => taker.tryAcquire(key, { leaseDuration: 10_000, heartbeat: false }), 5_000);
      const before = await read(key);
      expect(before?.owner).toBe('taker');
      expect(await lock.release({ outcome: true })).toBe('not-held');
      expect(await read(key)).toEqual(before);
      expect(taken.isHeld).toBe(true);
      expect(taken.fencingToken).toBeGreaterThan(lock.fencingToken);
      expect(await taken.release()).toBe(true);
    });
  });

  describe(`a waiter of another process that stops waiting leaves the line [${name}]`, () => {
    it('its signal aborted: it leaves (a cleanup event), and a single attempt right after the release gets the key', async () => {
      const s = setup();
      const [holder, waiter, third] = [s.manager('holder'), s.manager('waiter'), s.manager('third')];
      const events = recordEvents(waiter);
      const key = newKey('aborted');
      const held = await holder.acquire(key);
      const controller = new AbortController();
      const waiting = rejectionOf(waiter.acquire(key, { wait: '30s', signal: controller.signal }));
      const ticket = await ticketsTaken(s.read, key, 1);
      controller.abort(new Error('caller gave up'));
      expect((await waiting).message).toBe('caller gave up');
      await expectFreeAfterRelease(s, held, third, events, ticket);
    });

    it('its wait ran out (LockBusyError): it leaves, and a single attempt right after the release gets the key', async () => {
      const s = setup();
      const [holder, waiter, third] = [s.manager('holder'), s.manager('waiter'), s.manager('third')];
      const events = recordEvents(waiter);
      const key = newKey('wait-ran-out');
      const held = await holder.acquire(key);
      // The waiter's process learns the key is busy (and its client connects): its wait queues at once.
      expect(await waiter.tryAcquire(key)).toBeNull();
      const error = await rejectionOf(waiter.acquire(key, { wait: 500 }));
      expect(error).toBeInstanceOf(LockBusyError);
      const record = await s.read(key);
      // It did take a ticket: the one behind the holder's.
      expect(record!.tail! - record!.head!).toBe(2);
      await expectFreeAfterRelease(s, held, third, events, record!.tail! - 1);
    });

    it('its manager closes with the caller in line: close() resolves once it left, and the key is free after the release', async () => {
      const s = setup();
      const [holder, waiter, third] = [s.manager('holder'), s.manager('waiter'), s.manager('third')];
      const events = recordEvents(waiter);
      const key = newKey('shutdown');
      const held = await holder.acquire(key);
      const waiting = rejectionOf(waiter.acquire(key, { wait: '30s' }));
      const ticket = await ticketsTaken(s.read, key, 1);
      await waiter.close();
      const atClose = cleanupsOf(events, key);
      expect(await waiting).toBeInstanceOf(Error);
      await expectFreeAfterRelease(s, held, third, events, ticket);
      // The leave was written before close() resolved (its clean-up is waited for).
      expect(atClose).toEqual(['left']);
    });

    it('gives up just as the holder releases (the release may serve it before its leave lands): the key is free within round trips', async () => {
      const s = setup();
      const [holder, waiter, third] = [s.manager('holder'), s.manager('waiter'), s.manager('third')];
      const key = newKey('race');
      const held = await holder.acquire(key);
      const controller = new AbortController();
      const waiting = rejectionOf(waiter.acquire(key, { wait: '30s', signal: controller.signal }));
      await ticketsTaken(s.read, key, 1);
      controller.abort(new Error('caller gave up'));
      expect(await held.release()).toBe(true);
      const releasedAt = performance.now();
      // Left first: the release passed it. Served first: its leave is refused, and it releases at once.
      const next = await pollTryAcquire(() => third.tryAcquire(key), 2 * CLAIM_LEASE_MS);
      expect(performance.now() - releasedAt).toBeLessThan(CLAIM_LEASE_MS / 2);
      expect((await waiting).message).toBe('caller gave up');
      await next.release();
    }, 20_000);

    it('several in line, the middle ones give up: each release serves the next live waiter, in order, at once', async () => {
      const s = setup();
      const key = newKey('line');
      const { held, events, order, outcomes, tickets } = await lineWithMiddleLeft(s, key);
      let releasedAt = performance.now();
      expect(await held.release()).toBe(true);
      const first = (await outcomes[0]) as Lock;
      // The next waiter learns it is served at its next read (at most maxPollInterval, 1 s, away).
      expect(performance.now() - releasedAt).toBeLessThan(CLAIM_LEASE_MS / 2);
      releasedAt = performance.now();
      expect(await first.release()).toBe(true);
      // The release went straight past both tickets that left: the item serves the last waiter now.
      expect((await s.read(key))?.head).toBe(tickets[3]);
      const last = (await outcomes[3]) as Lock;
      // It learns at its next read: today at most half a claim lease away (the next test asks for less).
      expect(performance.now() - releasedAt).toBeLessThan(CLAIM_LEASE_MS / 2 + 1_000);
      expect(order).toEqual(['w1', 'w4']);
      expect(last.fencingToken).toBeGreaterThan(first.fencingToken);
      expect(await last.release()).toBe(true);
      expect(((await outcomes[1]) as Error).message).toBe('w2 gave up');
      expect(((await outcomes[2]) as Error).message).toBe('w3 gave up');
      expect(events.map((e) => cleanupsOf(e, key))).toEqual([[], ['left'], ['left'], []]);
    }, 30_000);
  });

  describe(`the next live waiter behind tickets that left [${name}]`, () => {
    it('is next in line: it reads within maxPollInterval, so it takes the lock promptly after the release before it', async () => {
      const s = setup();
      const key = newKey('poll');
      const { held, heldAt, outcomes, tickets } = await lineWithMiddleLeft(s, key, { maxPollInterval: POLL_MS });
      // A usual hold of 2 s, written by the release: waiters time their reads by it.
      await sleep(Math.max(0, 2_000 - (performance.now() - heldAt)));
      expect(await held.release()).toBe(true);
      const first = (await outcomes[0]) as Lock;
      // By now w4 has read the item showing w1 holding (it read at most POLL_MS apart so far).
      await sleep(4 * POLL_MS);
      const releasedAt = performance.now();
      expect(await first.release()).toBe(true);
      expect((await s.read(key))?.head).toBe(tickets[3]);
      const last = (await outcomes[3]) as Lock;
      // Nobody live is ahead of w4 but w1: w4 reads at most maxPollInterval apart (plus a round
      // trip), not as if two usual holds were still ahead of it (which sleeps up to half the
      // claim lease, 2.5 s).
      expect(performance.now() - releasedAt).toBeLessThan(POLL_MS + 800);
      await last.release();
    }, 30_000);
  });

  describe(`an acquire whose write landed while its answer was lost [${name}]`, () => {
    it('the caller gets LockUnavailableError; once DynamoDB answers again, the clean-up releases it long before its lease ends', async () => {
      const s = setup();
      const lost = s.faulty('lost');
      const other = s.manager('other');
      const events = recordEvents(lost.manager);
      const key = newKey('lost-answer');
      // Connected, credentials resolved: the faults below are the only failures.
      expect(await lost.manager.inspect(key)).toBeNull();
      const started = performance.now();
      lost.loseAcquireAnswer();
      const error = await rejectionOf(lost.manager.acquire(key, { wait: false, leaseDuration: LOST_LEASE_MS }));
      expect(error).toBeInstanceOf(LockUnavailableError);
      // The write did land: the item is held for that manager, by a token no handle carries.
      expect((await s.read(key))?.owner).toBe('lost');
      expect(await other.tryAcquire(key)).toBeNull();
      await sleep(500);
      const healedAt = performance.now();
      lost.heal();
      // A clean-up retries at least every 2 s (the backoff's cap); one read and one release then.
      const released = await eventually(() => cleanupsOf(events, key).includes('released'), 6_000);
      const next = await other.tryAcquire(key);
      expect(next).not.toBeNull();
      expect(performance.now() - started).toBeLessThan(LOST_LEASE_MS / 2);
      expect(released).toBe(true);
      expect(performance.now() - healedAt).toBeLessThan(6_500);
      expect(cleanupsOf(events, key)).toEqual(['released']);
      await next!.release();
    }, 40_000);
  });
}

describeEachServer('Callers that stop', (server) => {
  const fixture = new LockFixture(server);
  beforeAll(() => fixture.setup());
  afterAll(() => fixture.close());

  stoppingCallersSuite(server.name, () => {
    const store = new DynamoMutexStore(fixture.client, { tableName: fixture.tableName, ttlDays: 0 });
    return {
      manager: (owner, options) => fixture.manager({ ownerName: owner, ...options }),
      read: (key) => store.read(key),
      faulty: (owner) => {
        const manager = fixture.manager({ ownerName: owner });
        const faults = injectFaults(manager.client);
        return {
          manager,
          // Applied, answer lost; then the SDK's retries and every later request fail before they are sent.
          loseAcquireAnswer: () =>
            faults.failNext('UpdateItem', { kind: 'lost-response' }).failNext('*', { kind: 'network-error', times: 1_000_000 }),
          heal: () => faults.clear(),
        };
      },
    };
  });
});

describe('Callers that stop [memory store]', () => {
  const managers: LockManager[] = [];
  const track = (manager: LockManager) => (managers.push(manager), manager);
  afterAll(() => Promise.all(managers.map((m) => m.close())));

  stoppingCallersSuite('memory', () => {
    const store = new MemoryLockStore();
    const mutex = memoryStoresOf(store).mutex;
    return {
      manager: (owner, options) => track(new LockManager({ store, ownerName: owner, logger: new MemoryLogger(), ...options })),
      read: (key) => mutex.read(key),
      faulty: (owner) => {
        const faults = lossyStore(mutex);
        const manager = track(new LockManager({ store: customStores(faults.store), ownerName: owner, logger: new MemoryLogger() }));
        return { manager, loseAcquireAnswer: faults.loseAcquireAnswer, heal: faults.heal };
      },
    };
  });
});

/**
 * The memory store's counterpart of the client middleware of `injectFaults()`: the next `acquire`
 * is applied and its answer lost (a time-out), then every request fails (a reset connection) until
 * `heal()`.
 */
function lossyStore(inner: MutexStorePort): { store: MutexStorePort; loseAcquireAnswer(): void; heal(): void } {
  let mode: 'ok' | 'lose-acquire' | 'fail' = 'ok';
  const store = new Proxy(inner, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]): unknown => {
        if (mode === 'ok') return Reflect.apply(value, target, args);
        if (mode === 'lose-acquire' && property === 'acquire') {
          mode = 'fail';
          return (Reflect.apply(value, target, args) as Promise<unknown>).then(() => {
            throw faultError('lost-response', 'acquire');
          });
        }
        return Promise.reject(faultError('network-error', String(property)));
      };
    },
  });
  return {
    store,
    loseAcquireAnswer: () => void (mode = 'lose-acquire'),
    heal: () => void (mode = 'ok'),
  };
}

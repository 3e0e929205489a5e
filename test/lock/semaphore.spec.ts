/**
 * Counting semaphores (`acquire(key, { limit })`) in one process with several managers (each an
 * "instance"), against DynamoDB Local, dynalite and the memory store: the bound on holders, fencing
 * tokens, fair order, takeover of silent holders on the waiter's monotonic clock, single attempts,
 * inspection and the errors of bad input before any request.
 */
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  LockBusyError,
  LockConfigurationError,
  LockLostError,
  LockManager,
  LockKeyError,
  LockValidationError,
  MemoryLockStore,
  type Lock,
} from '../../lib';
import { SEMAPHORE_KEY_SUFFIX } from '../../lib/store/semaphore/semaphore.record';
import { memoryStoresOf } from '../support/custom-stores';
import { countRequests } from '../support/request-counter';
import { LockFixture, MemoryLogger } from '../support/lock-fixture';
import { describeEachServer } from '../support/servers';

let keySeq = 0;
const newKey = (name: string) => `sem-${name}-${++keySeq}`;
const LEASE_MS = 1_500;

/** `n` managers on one table (or memory store), with `keyPrefix` when given. */
type Managers = (n: number, keyPrefix?: string) => LockManager[];

function semaphoreSuite(name: string, setup: () => Managers): void {
  describe(`counting semaphore [${name}]`, () => {
    it('never lets more than `limit` callers of several managers in, and every caller gets its turns with a fencing token of its own', async () => {
      const managers = setup()(4);
      const key = newKey('bound');
      let inside = 0;
      let most = 0;
      const tokens: number[] = [];
      const turns = new Map<string, number>();
      await Promise.all(
        managers.flatMap((manager, m) =>
          [0, 1].map(async (c) => {
            for (let i = 0; i < 3; i++) {
              await manager.withLock(
                key,
                async (lock) => {
                  inside++;
                  most = Math.max(most, inside);
                  tokens.push(lock.fencingToken);
                  turns.set(`${m}/${c}`, (turns.get(`${m}/${c}`) ?? 0) + 1);
                  await sleep(10);
                  inside--;
                },
                { limit: 3, wait: '60s' },
              );
            }
          }),
        ),
      );
      expect(most).toBeLessThanOrEqual(3);
      expect(tokens).toHaveLength(24);
      // Every grant raises one counter in its conditional write: unique tokens.
      expect(new Set(tokens).size).toBe(24);
      expect([...turns.values()]).toEqual(Array(8).fill(3));
    }, 60_000);

    it('lets `limit` holders in at once, each at its first write, and no more', async () => {
      const managers = setup()(4);
      const key = newKey('full');
      const held = await Promise.all(managers.slice(0, 3).map((m) => m.acquire(key, { limit: 3, wait: false })));
      expect(held.every((lock) => lock.isHeld)).toBe(true);
      expect(await managers[3]!.tryAcquire(key, { limit: 3 })).toBeNull();
      await Promise.all(held.map((lock) => lock.release()));
      const after = await managers[3]!.tryAcquire(key, { limit: 3 });
      expect(after?.fencingToken).toBeGreaterThan(Math.max(...held.map((lock) => lock.fencingToken)));
      await after!.release();
    });

    it('a caller that releases and asks again waits behind the callers already in line', async () => {
      const [a, b, c] = setup()(3);
      const key = newKey('fair');
      const first = await a.acquire(key, { limit: 1 });
      const order: string[] = [];
      const bWaits = b.withLock(key, () => void order.push('b'), { limit: 1, wait: '30s' });
      const cWaits = c.withLock(key, () => void order.push('c'), { limit: 1, wait: '30s' });
      // Both took tickets.
      await waitFor(async () => (await a.inspect(key))?.waiting === 2);
      await first.release();
      const again = a.withLock(key, () => void order.push('a'), { limit: 1, wait: '30s' });
      await Promise.all([bWaits, cWaits, again]);
      expect(order[2]).toBe('a');
      expect(order.slice(0, 2).sort()).toEqual(['b', 'c']);
    });

    it('a holder that stops renewing is passed one lease after a waiter first saw its last version, not before; its signal then says it was taken', async () => {
      const [crashed, other, waiter] = setup()(3);
      const key = newKey('takeover');
      const dead = await crashed.acquire(key, { limit: 2, leaseDuration: LEASE_MS, heartbeat: false });
      const alive = await other.acquire(key, { limit: 2, leaseDuration: LEASE_MS });
      const started = performance.now();
      const lock = await waiter.acquire(key, { limit: 2, leaseDuration: LEASE_MS, wait: '20s' });
      const tookMs = performance.now() - started;
      expect(tookMs).toBeGreaterThanOrEqual(LEASE_MS * 0.95);
      expect(tookMs).toBeLessThan(LEASE_MS + 5_000);
      expect(lock.fencingToken).toBeGreaterThan(alive.fencingToken);
      // The live holder (heartbeats) kept its slot; the silent one lost it.
      expect(alive.isHeld).toBe(true);
      await expect(dead.extend()).rejects.toBeInstanceOf(LockLostError);
      expect(dead.isHeld).toBe(false);
      const info = await other.inspect(key);
      expect(info?.holders?.map((h) => h.fencingToken).sort()).toEqual([alive.fencingToken, lock.fencingToken].sort());
      await Promise.all([lock.release(), alive.release()]);
    });

    it('single attempts: null while full; a later attempt passes a holder this manager saw silent for its lease', async () => {
      const [crashed, prober] = setup()(2);
      const key = newKey('single');
      const dead = await crashed.acquire(key, { limit: 1, leaseDuration: LEASE_MS, heartbeat: false });
      expect(await prober.tryAcquire(key, { limit: 1 })).toBeNull();
      await expect(prober.acquire(key, { limit: 1, wait: false })).rejects.toBeInstanceOf(LockBusyError);
      let lock: Lock | null = null;
      const started = performance.now();
      while (!lock && performance.now() - started < 4 * LEASE_MS) {
        lock = await prober.tryAcquire(key, { limit: 1 });
        if (!lock) await sleep(100);
      }
      const tookMs = performance.now() - started;
      expect(lock).not.toBeNull();
      expect(tookMs).toBeGreaterThanOrEqual(LEASE_MS * 0.9);
      expect(lock!.fencingToken).toBeGreaterThan(dead.fencingToken);
      await lock!.release();
    });

    it('inspect() lists every holder; release frees the slot; a released handle no longer holds', async () => {
      const [a, b] = setup()(2);
      const key = newKey('inspect');
      expect(await a.inspect(key)).toBeNull();
      const one = await a.acquire(key, { limit: 2 });
      const two = await b.acquire(key, { limit: 2 });
      const info = await b.inspect(key);
      expect(info).toMatchObject({ key, limit: 2, waiting: 0, fencingToken: two.fencingToken });
      expect(info?.holders?.map((h) => h.fencingToken)).toEqual([one.fencingToken, two.fencingToken]);
      expect(await b.tryAcquire(key, { limit: 2 })).toBeNull();
      expect(await one.release()).toBe(true);
      expect(one.isHeld).toBe(false);
      expect(one.signal.aborted).toBe(true);
      expect(await one.release()).toBe(false);
      const three = await b.tryAcquire(key, { limit: 2 });
      expect(three?.fencingToken).toBeGreaterThan(two.fencingToken);
      await Promise.all([two.release(), three!.release()]);
      expect(await a.inspect(key)).toBeNull();
    });

    it('list() reports semaphores with holders next to mutexes, each semaphore as inspect() does, and no free one', async () => {
      const [a, b] = setup()(2);
      const key = newKey('list');
      const one = await a.acquire(key, { limit: 3 });
      const two = await b.acquire(key, { limit: 3 });
      const mutex = await a.acquire(`${key}-mutex`);
      const freed = await a.acquire(`${key}-freed`, { limit: 2 });
      await freed.release();
      const listed = await b.list(key);
      expect(listed.map((info) => info.key)).toEqual([key, `${key}-mutex`]);
      expect(listed[0]).toEqual(await a.inspect(key));
      expect(listed[0]).toMatchObject({ key, limit: 3, waiting: 0, fencingToken: two.fencingToken });
      expect(listed[0]!.holders?.map((h) => [h.key, h.owner, h.fencingToken])).toEqual([
        [key, 'instance-0', one.fencingToken],
        [key, 'instance-1', two.fencingToken],
      ]);
      expect(listed[1]).toMatchObject({ key: `${key}-mutex`, owner: 'instance-0', fencingToken: mutex.fencingToken });
      expect(listed[1]!.limit).toBeUndefined();
      await Promise.all([one.release(), two.release(), mutex.release()]);
      expect(await a.list(key)).toEqual([]);
    });

    it('list() with the keyPrefix option: the keys without it, only its own semaphores, and only keys that start with the prefix asked', async () => {
      const key = newKey('prefixed');
      const managers = setup();
      const [tenant] = managers(1, 'tenant-a/');
      const [plain] = managers(1);
      const slot = await tenant.acquire(key, { limit: 2 });
      const mutex = await tenant.acquire(`${key}-mutex`);
      const outside = await plain.acquire(key, { limit: 2 });
      const listed = await tenant.list(key);
      expect(listed.map((info) => [info.key, info.limit])).toEqual([
        [key, 2],
        [`${key}-mutex`, undefined],
      ]);
      expect(listed[0]!.holders?.map((h) => [h.key, h.fencingToken])).toEqual([[key, slot.fencingToken]]);
      // The unprefixed manager sees its own semaphore and, under the full stored name, the tenant's.
      expect((await plain.list(key)).map((info) => info.key)).toEqual([key]);
      expect((await plain.list(`tenant-a/${key}`)).map((info) => info.key)).toEqual([`tenant-a/${key}`, `tenant-a/${key}-mutex`]);
      // A prefix reaching into the stored semaphore key's suffix ("\u001f...") matches no user key.
      expect(await tenant.list(`${key}\u001f`)).toEqual([]);
      expect(await plain.list(`${key}\u001fsem`)).toEqual([]);
      await Promise.all([slot.release(), mutex.release(), outside.release()]);
    });

    it('a different limit for the same key, or the key as a mutex too, is a clear error', async () => {
      const [a, b] = setup()(2);
      const key = newKey('mixed');
      const held = await a.acquire(key, { limit: 2 });
      await expect(b.acquire(key, { limit: 3 })).rejects.toThrow(/has limit 2 in the table, but this call asked for limit 3/);
      await expect(b.acquire(key, { limit: 3 })).rejects.toBeInstanceOf(LockConfigurationError);
      await expect(a.acquire(key)).rejects.toThrow(/in use here as a semaphore/);
      // Nor can it be led: a leader holds the key as a mutex.
      expect(() => a.lead(key)).toThrow(/in use here as a semaphore/);
      const mutex = await b.acquire(`${key}-m`);
      await expect(b.acquire(`${key}-m`, { limit: 2 })).rejects.toThrow(/in use here as a mutex/);
      await Promise.all([held.release(), mutex.release()]);
    });

    it('extend() renews the slot with a new lease; withLock() sees the slot through current()', async () => {
      const [a] = setup()(1);
      const key = newKey('extend');
      await a.withLock(
        key,
        async (lock) => {
          expect(a.current(key)).toBe(lock);
          await lock.extend('20s');
          const info = await a.inspect(key);
          expect(info?.leaseDuration).toBe(20_000);
        },
        { limit: 2 },
      );
      expect(await a.inspect(key)).toBeNull();
    });
  });
}

async function waitFor(check: () => Promise<boolean>, limitMs = 10_000): Promise<void> {
  const started = performance.now();
  while (!(await check())) {
    if (performance.now() - started > limitMs) throw new Error('condition not met in time');
    await sleep(20);
  }
}

describeEachServer('semaphore', (server) => {
  let fixture: LockFixture;
  beforeAll(async () => {
    fixture = await new LockFixture(server).setup();
  });
  afterAll(() => fixture.close());
  semaphoreSuite(
    server.name,
    () => (n, keyPrefix) =>
      Array.from({ length: n }, (_, i) => fixture.manager({ ownerName: `instance-${i}`, maxPollInterval: 200, keyPrefix })),
  );

  it('rejects a bad limit (0, negative, fractional, over 32, not a number) or data with a limit before any request', async () => {
    const manager = fixture.manager();
    const requests = countRequests(manager.client);
    for (const limit of [0, -1, 1.5, 33, Number.NaN, '3']) {
      await expect(manager.acquire('bad-limit', { limit: limit as number })).rejects.toThrow(
        /option "limit" must be a whole number from 1 to 32/,
      );
      await expect(manager.tryAcquire('bad-limit', { limit: limit as number })).rejects.toBeInstanceOf(LockValidationError);
      await expect(manager.withLock('bad-limit', () => undefined, { limit: limit as number })).rejects.toBeInstanceOf(LockValidationError);
    }
    await expect(manager.acquire('bad-limit', { limit: 2, data: { a: 1 } })).rejects.toThrow(
      /"data" cannot be stored with a semaphore slot/,
    );
    // A key that fits as a mutex but not with the semaphore's suffix: a bad key, as a mutex's would be.
    const long = await manager.acquire('k'.repeat(2_040), { limit: 2 }).catch((error: unknown) => error);
    expect(long).toBeInstanceOf(LockKeyError);
    expect(long).toMatchObject({ problem: 'too-long' });
    expect(requests.total()).toBe(0);
  });
});

describe('semaphore [memory store]', () => {
  const managers: LockManager[] = [];
  afterAll(() => Promise.all(managers.map((m) => m.close())));

  it('list() skips semaphores, and still lists mutexes, when the semaphore store has no scanHeld (it is optional)', async () => {
    const store = new MemoryLockStore();
    // A custom semaphore store written before scanHeld existed.
    Object.assign(memoryStoresOf(store).semaphore, { scanHeld: undefined });
    const manager = new LockManager({ store, verifyTable: false, logger: new MemoryLogger() });
    managers.push(manager);
    const slot = await manager.acquire('no-scan', { limit: 2 });
    const mutex = await manager.acquire('no-scan-mutex');
    expect((await manager.list('no-scan')).map((info) => info.key)).toEqual(['no-scan-mutex']);
    expect(await manager.inspect('no-scan')).toMatchObject({ limit: 2 });
    await Promise.all([slot.release(), mutex.release()]);
  });

  it('a slot whose caller gave up while its grant was in flight is given back without writing its near-zero hold', async () => {
    const store = new MemoryLockStore();
    const manager = new LockManager({ store, verifyTable: false, logger: new MemoryLogger() });
    managers.push(manager);
    const semaphores = memoryStoresOf(store).semaphore;
    const itemOf = () => semaphores.read(`quiet-hold${SEMAPHORE_KEY_SUFFIX}`);
    const first = await manager.acquire('quiet-hold', { limit: 2 });
    await sleep(300);
    await first.release();
    const written = (await itemOf())?.lastHoldMs;
    expect(written).toBeGreaterThanOrEqual(250);
    // The next grant write is answered only after its caller gave up.
    let answer!: () => void;
    const grant = semaphores.grant.bind(semaphores);
    let sent = false;
    let answered = false;
    jest.spyOn(semaphores, 'grant').mockImplementationOnce(async (write) => {
      sent = true;
      await new Promise<void>((resolve) => (answer = resolve));
      const result = await grant(write);
      answered = true;
      return result;
    });
    const controller = new AbortController();
    const gaveUp = manager.acquire('quiet-hold', { limit: 2, signal: controller.signal }).catch((error: unknown) => error);
    while (!sent) await sleep(1);
    controller.abort(new Error('caller gone'));
    expect(await gaveUp).toEqual(new Error('caller gone'));
    answer();
    while (!answered) await sleep(1);
    for (let i = 0; i < 200 && (await itemOf())?.holders.length; i++) await sleep(5);
    const item = await itemOf();
    expect(item?.holders).toHaveLength(0);
    // The item still shows the 300 ms hold, not the quiet slot's few milliseconds.
    expect(item?.lastHoldMs).toBe(written);
  });

  semaphoreSuite('memory', () => {
    const store = new MemoryLockStore();
    return (n, keyPrefix) => {
      const created = Array.from(
        { length: n },
        (_, i) =>
          new LockManager({
            store,
            verifyTable: false,
            ownerName: `instance-${i}`,
            maxPollInterval: 200,
            keyPrefix,
            logger: new MemoryLogger(),
          }),
      );
      managers.push(...created);
      return created;
    };
  });
});

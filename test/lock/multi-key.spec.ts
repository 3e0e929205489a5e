import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import { type DynamoLockOptions, LockBusyError, LockKeyError, LockLostError, LockManager, LockValidationError, type Lock } from '../../lib';
import { MemoryLockStore } from '../../lib/store/memory-lock.store';
import { DynamoMutexStore } from '../../lib/store/mutex/mutex.dynamo-store';
import type { LockRecord } from '../../lib/store/mutex/mutex.record';
import { memoryStoresOf } from '../support/custom-stores';
import { LockFixture, MemoryLogger } from '../support/lock-fixture';
import { describeEachServer } from '../support/servers';

let seq = 0;
/** A fresh set of keys for one test: `${name}-${n}-a`, `-b`, ... (sorted as listed). */
const keysFor = (name: string, count: number) => {
  const run = `${name}-${++seq}`;
  return Array.from({ length: count }, (_, i) => `${run}-${String.fromCharCode(97 + i)}`);
};

interface Setup {
  manager(options?: DynamoLockOptions): LockManager;
  /** The mutex item of a key (no key prefix in these tests), strongly consistent. */
  read(key: string): Promise<LockRecord | undefined>;
}

/** An item nobody holds or waits for: no token, the line empty, no ticket left behind. */
function expectFreeAndEmpty(record: LockRecord | undefined): void {
  if (record === undefined) return;
  expect(record.token).toBeUndefined();
  expect(record.head).toBe(record.tail);
  expect(record.left ?? []).toEqual([]);
}

function multiKeySuite(name: string, setup: () => Setup): void {
  describe(`multi-key locks [${name}]`, () => {
    it('deduplicates and orders the keys by stored bytes, whatever order they come in', async () => {
      const manager = setup().manager();
      const [a, b, c] = keysFor('order', 3);
      const lock = await manager.acquire([c, a, b, a, c]);
      expect(lock.keys).toEqual([a, b, c]);
      expect(lock.key).toBe(a);
      expect(lock.fencingTokenOf(a)).toBe(lock.fencingToken);
      expect(() => lock.fencingTokenOf('not-mine')).toThrow(LockValidationError);
      expect(manager.heldCount).toBe(3);
      expect(await lock.release()).toBe(true);
      expect(manager.heldCount).toBe(0);
    });

    it('orders by UTF-8 bytes, not by UTF-16 code units', async () => {
      const manager = setup().manager();
      const [base] = keysFor('utf8', 1);
      // UTF-16 puts U+1F600 (surrogate 0xD83D) before U+FF5E; UTF-8 puts U+FF5E (EF ..) before U+1F600 (F0 ..).
      const astral = `${base}-\u{1F600}`;
      const bmp = `${base}-\uFF5E`;
      const lock = await manager.acquire([astral, bmp]);
      expect(lock.keys).toEqual([bmp, astral]);
      await lock.release();
    });

    it('holds all of the keys or none: a busy key releases those taken and names itself', async () => {
      const { manager, read } = setup();
      const [holder, caller] = [manager({ ownerName: 'holder' }), manager({ ownerName: 'caller' })];
      const [a, b, c] = keysFor('all-or-none', 3);
      const blocking = await holder.acquire(b);
      const error = await caller.acquire([c, b, a], { wait: 300 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockBusyError);
      expect((error as LockBusyError).key).toBe(b);
      expect((error as LockBusyError).message).toContain(b);
      expect(caller.heldCount).toBe(0);
      expectFreeAndEmpty(await read(a));
      expect(await read(c)).toBeUndefined(); // never reached: c sorts after the busy key
      expect((await read(b))?.token).toBe(blocking.leaseId);
      await blocking.release();
      // Nothing of the failed attempt is left in b's line: the next caller gets it at once.
      const lock = await caller.acquire([a, b, c], { wait: false });
      expect(lock.keys).toEqual([a, b, c]);
      await lock.release();
    });

    it('tryAcquire([...]) is all or none and leaves no token, ticket or left entry behind', async () => {
      const { manager, read } = setup();
      const [holder, caller] = [manager({ ownerName: 'holder' }), manager({ ownerName: 'caller' })];
      const [a, b, c, d] = keysFor('try', 4);
      const blocking = await holder.acquire(c);
      const before = await read(c);
      expect(await caller.tryAcquire([d, a, b, c])).toBeNull();
      expect(caller.heldCount).toBe(0);
      for (const key of [a, b]) expectFreeAndEmpty(await read(key));
      expect(await read(d)).toBeUndefined();
      const after = await read(c);
      // The busy key's item is as the holder left it: no ticket taken, nothing in `left`.
      expect(after?.tail).toBe(before?.tail);
      expect(after?.left ?? []).toEqual([]);
      expect(after?.token).toBe(blocking.leaseId);
      await blocking.release();
      const lock = await caller.tryAcquire([a, b, c, d]);
      expect(lock?.keys).toEqual([a, b, c, d]);
      await lock?.release();
    });

    it('callers locking the same keys in opposite orders never deadlock, and never overlap', async () => {
      const { manager } = setup();
      const managers = [manager({ ownerName: 'p0' }), manager({ ownerName: 'p1' }), manager({ ownerName: 'p2' })];
      const [a, b] = keysFor('opposite', 2);
      const inside = new Map<string, number>([
        [a, 0],
        [b, 0],
      ]);
      let overlaps = 0;
      let done = 0;
      const worker = async (m: LockManager, order: string[]) => {
        for (let i = 0; i < 8; i++) {
          await m.withLock(
            order,
            async () => {
              for (const k of order) inside.set(k, inside.get(k)! + 1);
              if ([...inside.values()].some((n) => n > 1)) overlaps++;
              await sleep(5);
              for (const k of order) inside.set(k, inside.get(k)! - 1);
            },
            { wait: '20s' },
          );
          done++;
        }
      };
      await Promise.all([
        worker(managers[0], [a, b]),
        worker(managers[1], [b, a]),
        worker(managers[2], [b, a]),
        worker(managers[0], [b, a]),
      ]);
      expect(done).toBe(32);
      expect(overlaps).toBe(0);
    }, 60_000);

    it('gives each key its own fencing token, larger than the earlier holders of that key', async () => {
      const manager = setup().manager();
      const [a, b] = keysFor('tokens', 2);
      const single = await manager.acquire(b);
      const tokenB = single.fencingToken;
      await single.release();
      const first = await manager.acquire([a, b]);
      expect(first.fencingTokenOf(b)).toBeGreaterThan(tokenB);
      const firstTokens = first.keys.map((k) => first.fencingTokenOf(k));
      await first.release();
      const second = await manager.acquire([b, a]);
      second.keys.forEach((k, i) => expect(second.fencingTokenOf(k)).toBeGreaterThan(firstTokens[i]));
      await second.release();
    });

    it('release() frees every key; extend() renews every key; isHeld covers the set', async () => {
      const { manager } = setup();
      const [owner, other] = [manager({ ownerName: 'owner' }), manager({ ownerName: 'other' })];
      const [a, b, c] = keysFor('release', 3);
      const lock = await owner.acquire([a, b, c], { leaseDuration: 2_000 });
      expect(lock.isHeld).toBe(true);
      await lock.extend(5_000);
      expect((await owner.inspect(b))?.leaseDuration).toBe(5_000);
      expect(await lock.release({ outcome: true })).toBe('released');
      expect(lock.isHeld).toBe(false);
      expect(lock.signal.aborted).toBe(true);
      for (const key of [a, b, c]) {
        const next = await other.tryAcquire(key);
        expect(next).not.toBeNull();
        await next?.release();
      }
      expect(await lock.release()).toBe(false);
    });

    it('aborts the one signal when any key is lost, with a reason naming that key', async () => {
      const { manager } = setup();
      const owner = manager({ ownerName: 'owner', heartbeatInterval: 150, leaseDuration: 3_000 });
      const thief = manager({ ownerName: 'thief' });
      const [a, b, c] = keysFor('lost', 3);
      await owner.withLock([a, b, c], async (lock) => {
        const part = owner.current(b);
        expect(part?.key).toBe(b);
        expect(part?.fencingToken).toBe(lock.fencingTokenOf(b));
        // Another process frees b by its lease id (as `dynamo-lock release` would) and takes it.
        expect(await thief.releaseLease(b, part!.leaseId)).toBe(true);
        const stolen = await thief.acquire(b);
        const deadline = performance.now() + 3_000;
        while (!lock.signal.aborted && performance.now() < deadline) await sleep(50);
        expect(lock.signal.aborted).toBe(true);
        const reason = lock.signal.reason as LockLostError;
        expect(reason).toBeInstanceOf(LockLostError);
        expect(reason.key).toBe(b);
        expect(reason.message).toContain(b);
        expect(lock.isHeld).toBe(false);
        // The other keys are still held until the set is released.
        expect(owner.current(a)?.isHeld).toBe(true);
        await stolen.release();
      });
      expect(owner.heldCount).toBe(0);
    });

    it("inside withLock([...]): current(key) is one key's lock; a nested set or key is re-entrant; a set held in part is refused", async () => {
      const manager = setup().manager();
      const [a, b, c] = keysFor('nested', 3);
      await manager.withLock([b, a], async (lock) => {
        expect(manager.current()).toBe(lock);
        expect(manager.current(a)?.fencingToken).toBe(lock.fencingTokenOf(a));
        const one = await manager.acquire(b);
        expect(one.isReentrant).toBe(true);
        expect(await one.release({ outcome: true })).toBe('reentrant');
        const again = await manager.acquire([a, b]);
        expect(again.isReentrant).toBe(true);
        expect(await again.release({ outcome: true })).toBe('reentrant');
        expect(lock.isHeld).toBe(true);
        await expect(manager.acquire([a, c])).rejects.toThrow(/holds "[^"]*-a" but not "[^"]*-c"/);
      });
      expect(manager.heldCount).toBe(0);
    });

    it('refuses limit, data, fireTime, an empty array, a bad key and too many keys before any request', async () => {
      const manager = setup().manager();
      const keys = keysFor('invalid', 2);
      await expect(manager.acquire(keys, { limit: 2 })).rejects.toThrow(/"limit" cannot be used with an array of keys/);
      await expect(manager.acquire(keys, { data: { x: 1 } })).rejects.toThrow(/"data" cannot be used with an array of keys/);
      await expect(manager.tryAcquire(keys, { fireTime: Date.now() })).rejects.toThrow(/"fireTime" cannot be used/);
      await expect(manager.acquire([])).rejects.toThrow(/array of keys is empty/);
      await expect(manager.acquire([keys[0], ' '])).rejects.toThrow(LockKeyError);
      await expect(manager.acquire([keys[0], ' '])).rejects.toThrow(/key 1 of the array/);
      const many = Array.from({ length: 26 }, (_, i) => `${keys[0]}-${i}`);
      await expect(manager.acquire(many)).rejects.toThrow(/at most 25/);
      // Duplicates count once.
      const lock = await manager.acquire([...many.slice(0, 25), many[0]]);
      expect(lock.keys).toHaveLength(25);
      await lock.release();
    });

    it("the caller's signal stops an ordered acquisition and leaves nothing held", async () => {
      const { manager, read } = setup();
      const [holder, caller] = [manager({ ownerName: 'holder' }), manager({ ownerName: 'caller' })];
      const [a, b] = keysFor('signal', 2);
      const blocking = await holder.acquire(b);
      const stop = new AbortController();
      const attempt = caller.acquire([a, b], { signal: stop.signal, wait: '20s' }).catch((e: unknown) => e);
      await sleep(300);
      stop.abort(new Error('stop'));
      expect(((await attempt) as Error).message).toBe('stop');
      expect(caller.heldCount).toBe(0);
      expectFreeAndEmpty(await read(a));
      await blocking.release();
      await sleep(50);
      expectFreeAndEmpty(await read(b));
    });
  });
}

describeEachServer('Multi-key locks', (server) => {
  const fixture = new LockFixture(server);
  beforeAll(() => fixture.setup());
  afterAll(() => fixture.close());
  multiKeySuite(server.name, () => {
    const store = new DynamoMutexStore(fixture.client, { tableName: fixture.tableName, ttlDays: 0 });
    return { manager: (options) => fixture.manager(options), read: (key) => store.read(key) };
  });
});

describe('Multi-key locks on the memory store', () => {
  const store = new MemoryLockStore();
  const managers: LockManager[] = [];
  afterAll(() => Promise.all(managers.map((m) => m.close())));
  multiKeySuite('memory', () => ({
    manager: (options) => {
      const manager = new LockManager({ store, verifyTable: false, logger: new MemoryLogger(), ...options });
      managers.push(manager);
      return manager;
    },
    read: (key) => memoryStoresOf(store).mutex.read(key),
  }));
});

export type { Lock };

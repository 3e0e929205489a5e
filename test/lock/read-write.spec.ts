/**
 * Read locks (`mode: 'read'`) with writers (every other caller of the key) across several managers
 * (each an "instance"), against DynamoDB Local, dynalite and the memory store: readers share the
 * key and no writer overlaps anyone, writers go first, fencing tokens order readers among writers,
 * silent readers and writers are passed after their lease (single attempts too), nesting in one
 * call chain, and bad input refused before any request.
 */
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import { LockLostError, LockManager, LockValidationError, MemoryLockStore, type Lock } from '../../lib';
import { internalsOf } from '../../lib/core/engine/lock.internals';
import { MemoryReadStore } from '../../lib/store/rw/read.memory-store';
import { countRequests } from '../support/request-counter';
import { LockFixture, MemoryLogger } from '../support/lock-fixture';
import { describeEachServer } from '../support/servers';

let keySeq = 0;
const newKey = (name: string) => `rw-${name}-${++keySeq}`;
const LEASE_MS = 1_500;

/** `n` managers on one table (or memory store). */
type Managers = (n: number) => LockManager[];

/** Whether a single attempt at a read lock is refused (a lock it got is given back at once). */
async function refusedRead(manager: LockManager, key: string): Promise<boolean> {
  const lock = await manager.tryAcquire(key, { mode: 'read' });
  await lock?.release();
  return lock === null;
}

/** Polls `check` every 20 ms until it is true or `ms` passed; returns whether it became true. */
async function eventually(check: () => Promise<boolean> | boolean, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await check()) return true;
    await sleep(20);
  }
  return check();
}

function readWriteSuite(name: string, setup: () => Managers): void {
  describe(`read locks [${name}]`, () => {
    it('readers of several managers hold the key together; no writer ever overlaps a reader or a writer', async () => {
      const managers = setup()(4);
      const key = newKey('overlap');
      let readers = 0;
      let writers = 0;
      let mostReaders = 0;
      const clashes: string[] = [];
      const enter = (mode: 'read' | 'write') => {
        if (mode === 'write' && (readers > 0 || writers > 0)) clashes.push(`writer entered with ${readers} readers, ${writers} writers`);
        if (mode === 'read' && writers > 0) clashes.push('reader entered with a writer');
        if (mode === 'read') mostReaders = Math.max(mostReaders, ++readers);
        else writers++;
      };
      const work = managers.map(async (manager, m) => {
        for (let i = 0; i < 4; i++) {
          const mode = m === 0 && i % 2 === 1 ? 'write' : 'read';
          await manager.withLock(
            key,
            async () => {
              enter(mode);
              await sleep(40);
              if (mode === 'read') readers--;
              else writers--;
            },
            { mode, wait: '20s' },
          );
        }
      });
      await Promise.all(work);
      expect(clashes).toEqual([]);
      expect(mostReaders).toBeGreaterThanOrEqual(2);
    });

    it('a writer waiting behind readers stops new readers: they get in only after the writer released', async () => {
      const [a, b, c, d] = setup()(4);
      const key = newKey('preference');
      const first = await a.acquire(key, { mode: 'read' });
      const second = await b.acquire(key, { mode: 'read' });
      const order: string[] = [];
      const writer = c.acquire(key, { wait: '20s' }).then((lock) => {
        order.push('writer');
        return lock;
      });
      // The writer is in line once a single attempt of a new reader is refused.
      expect(
        await eventually(async () => {
          const info = await d.inspect(key);
          return info?.mode === 'read' && (await refusedRead(d, key));
        }, 5_000),
      ).toBe(true);
      const lateReader = d.acquire(key, { mode: 'read', wait: '20s' }).then((lock) => {
        order.push('late reader');
        return lock;
      });
      await sleep(100);
      expect(order).toEqual([]);
      await first.release();
      await second.release();
      const w = await writer;
      await sleep(100);
      expect(order).toEqual(['writer']);
      expect(w.fencingToken).toBeGreaterThan(first.fencingToken);
      await w.release();
      const late = await lateReader;
      expect(order).toEqual(['writer', 'late reader']);
      // Each writer's token is above every earlier reader's, each reader's above every earlier writer's.
      expect(late.fencingToken).toBeGreaterThan(w.fencingToken);
      await late.release();
    });

    it('inspect() shows the readers; a read lock fences no write; a writer after the readers is a plain holder', async () => {
      const [a, b] = setup()(2);
      const key = newKey('inspect');
      const r1 = await a.acquire(key, { mode: 'read', leaseDuration: '2s' });
      const r2 = await b.acquire(key, { mode: 'read', leaseDuration: '4s' });
      const info = await a.inspect(key);
      expect(info).toMatchObject({ key, owner: 'readers', mode: 'read', leaseDuration: 4_000 });
      expect(info?.holders?.map((h) => h.owner).sort()).toEqual(['instance-0', 'instance-1']);
      await expect(r1.fencedWrite({ Put: { TableName: 'data', Item: { id: { S: '1' } } } })).rejects.toThrow(
        /a read lock is shared by every reader/,
      );
      await r1.release();
      await r2.release();
      const w = await a.acquire(key);
      const written = await b.inspect(key);
      expect(written?.mode).toBeUndefined();
      expect(written?.owner).toBe('instance-0');
      await w.release();
    });

    it('a reader that stops renewing holds writers back one lease at most once the live readers left; its signal says it lost the key', async () => {
      const [a, b, c] = setup()(3);
      const key = newKey('silent-reader');
      const silent = await a.acquire(key, { mode: 'read', heartbeat: false, leaseDuration: LEASE_MS });
      const live = await b.acquire(key, { mode: 'read', leaseDuration: LEASE_MS });
      const started = Date.now();
      const writer = c.acquire(key, { wait: '20s' });
      await sleep(100);
      await live.release();
      const w = await writer;
      // Passed one group lease after the writer first saw the group's version, not before.
      const waited = Date.now() - started;
      expect(waited).toBeGreaterThanOrEqual(LEASE_MS - 50);
      // One group lease after the live reader left, plus reads: far below a second lease's worth of slack.
      expect(waited).toBeLessThan(3 * LEASE_MS + 2_000);
      expect(w.fencingToken).toBeGreaterThan(silent.fencingToken);
      await expect(silent.extend()).rejects.toBeInstanceOf(LockLostError);
      await w.release();
    });

    it("single attempts: a reader's tryAcquire is null while a writer holds; a later one passes a writer silent for its lease", async () => {
      const [a, b] = setup()(2);
      const key = newKey('single');
      const silent = await a.acquire(key, { heartbeat: false, leaseDuration: LEASE_MS });
      expect(await b.tryAcquire(key, { mode: 'read' })).toBeNull();
      await sleep(LEASE_MS + 100);
      const reader = await b.tryAcquire(key, { mode: 'read' });
      expect(reader).not.toBeNull();
      expect(reader!.fencingToken).toBeGreaterThan(silent.fencingToken);
      await expect(silent.extend()).rejects.toBeInstanceOf(LockLostError);
      await reader!.release();
    });

    it('a writer that dies waiting behind readers (its ticket served, never claimed) keeps readers out for its claim lease only', async () => {
      const [a, b] = setup()(2);
      const key = newKey('dead-waiter');
      const reader = await a.acquire(key, { mode: 'read' });
      // A writer of a process that then dies: its ticket, taken behind the group, and nothing more.
      const { mutex } = internalsOf(a).stores;
      const queued = await mutex.enqueue({ key: `${key}`, token: 'f'.repeat(32), claimMs: 1_000 });
      expect(queued.ok).toBe(true);
      expect(await refusedRead(b, key)).toBe(true);
      await reader.release();
      const started = Date.now();
      const next = await b.acquire(key, { mode: 'read', wait: '20s' });
      const waited = Date.now() - started;
      // The served ticket's claim lease (1 s) on the reader's clock, then one pass: not for ever.
      expect(waited).toBeGreaterThanOrEqual(900);
      expect(waited).toBeLessThan(10_000);
      expect(next.fencingToken).toBeGreaterThan(reader.fencingToken);
      await next.release();
    });

    it('a dead reader among live ones is dropped by the readers that wait: the key keeps no dead entry', async () => {
      const [a, b, c] = setup()(3);
      const key = newKey('dead-entry');
      await a.acquire(key, { mode: 'read', heartbeat: false, leaseDuration: LEASE_MS });
      const live = await b.acquire(key, { mode: 'read' });
      // Another reader joins (and sees the silent entry); once that entry stayed the same for its
      // lease, the next reader of that manager drops it.
      const third = await c.acquire(key, { mode: 'read' });
      await third.release();
      await sleep(LEASE_MS + 100);
      const again = await c.tryAcquire(key, { mode: 'read' });
      expect(again).not.toBeNull();
      await again!.release();
      const info = await b.inspect(key);
      expect(info?.holders?.map((h) => h.owner)).toEqual(['instance-1']);
      await live.release();
    });

    it('in one call chain: a read lock inside a write lock of the key is the write lock; a write lock inside a read lock is an error', async () => {
      const [a, b] = setup()(2);
      const key = newKey('nesting');
      await a.withLock(key, async (outer) => {
        const inner = await a.acquire(key, { mode: 'read' });
        expect(inner.fencingToken).toBe(outer.fencingToken);
        await inner.release();
        expect(outer.isHeld).toBe(true);
      });
      await a.withLock(key, () => expect(a.acquire(key)).rejects.toThrow(/is read-locked by this very call chain/), { mode: 'read' });
      // Outside a call chain, readers and writers of one manager wait for each other as those of two do.
      const reader = await a.acquire(key, { mode: 'read' });
      const writer = a.acquire(key, { wait: '10s' });
      expect(await eventually(async () => refusedRead(b, key), 5_000)).toBe(true);
      await reader.release();
      await (await writer).release();
    });

    it('a write set inside a read set of the same keys is refused, not granted as the read locks', async () => {
      const [a, b] = setup()(2);
      const keys = [newKey('nested-set-a'), newKey('nested-set-b')];
      await a.withLock(keys, () => expect(a.acquire(keys)).rejects.toThrow(/is read-locked by this very call chain/), { mode: 'read' });
      // Outside the chain the keys are free again; another manager's reader gets them.
      const reader = await b.tryAcquire(keys, { mode: 'read' });
      expect(reader).not.toBeNull();
      await reader!.release();
    });

    it('a read lock whose lease ran out is freed by its release at once (its entry goes), not left for a lease', async () => {
      const [a, b] = setup()(2);
      const key = newKey('expired-release');
      const reader = await a.acquire(key, { mode: 'read', heartbeat: false, leaseDuration: LEASE_MS });
      await sleep(LEASE_MS + 100);
      expect(reader.isHeld).toBe(false);
      expect(await reader.release({ outcome: true })).toBe('expired');
      // Nobody holds it: a writer's single attempt gets it.
      const writer = await b.tryAcquire(key);
      expect(writer).not.toBeNull();
      expect(writer!.fencingToken).toBeGreaterThan(reader.fencingToken);
      await writer!.release();
    });

    it('inspect() of a free key is null, also while a reader of this manager waits for it', async () => {
      const [a, b] = setup()(2);
      const key = newKey('inspect-free');
      const writer = await b.acquire(key);
      const waiting = a.acquire(key, { mode: 'read', wait: '10s' });
      await sleep(50);
      expect((await a.inspect(key))?.owner).toBe('instance-1');
      await writer.release();
      await (await waiting).release();
      expect(await a.inspect(key)).toBeNull();
    });

    it('an upgradeable reader becomes a writer once the other readers left, with no writer in between', async () => {
      const [a, b, c] = setup()(3);
      const key = newKey('upgrade');
      const upgradeable = await a.acquire(key, { mode: 'upgradeable' });
      const reader = await b.acquire(key, { mode: 'read' });
      // One upgradeable reader at a time; a writer queues behind the group.
      expect(await c.tryAcquire(key, { mode: 'upgradeable' })).toBeNull();
      const order: string[] = [];
      const writer = c.acquire(key, { wait: '20s' }).then((lock) => {
        order.push('writer');
        return lock;
      });
      expect(await eventually(async () => refusedRead(b, key), 5_000)).toBe(true);
      const upgrading = upgradeable.upgrade({ wait: '20s' }).then((lock) => {
        order.push('upgraded');
        return lock;
      });
      await sleep(100);
      expect(order).toEqual([]);
      await reader.release();
      const upgraded = await upgrading;
      expect(upgradeable.isHeld).toBe(false);
      expect(upgraded.isHeld).toBe(true);
      expect(upgraded.fencingToken).toBeGreaterThan(upgradeable.fencingToken);
      expect((await c.inspect(key))?.owner).toBe('instance-0');
      await sleep(100);
      expect(order).toEqual(['upgraded']);
      await upgraded.release();
      const w = await writer;
      expect(w.fencingToken).toBeGreaterThan(upgraded.fencingToken);
      await w.release();
    });

    it('an upgrade that runs out of wait leaves a read lock, and readers may join again; only upgradeable locks upgrade', async () => {
      const [a, b] = setup()(2);
      const key = newKey('upgrade-busy');
      const upgradeable = await a.acquire(key, { mode: 'upgradeable' });
      const reader = await b.acquire(key, { mode: 'read' });
      await expect(upgradeable.upgrade({ wait: '300ms' })).rejects.toThrow(/1 other reader still hold it; gave up after waiting/);
      expect(upgradeable.isHeld).toBe(true);
      const joined = await b.tryAcquire(key, { mode: 'read' });
      expect(joined).not.toBeNull();
      await joined!.release();
      await expect(reader.upgrade()).rejects.toThrow(/only a lock taken with mode: "upgradeable"/);
      await reader.release();
      const upgraded = await upgradeable.upgrade({ wait: false });
      expect(upgraded.isHeld).toBe(true);
      await upgraded.release();
    });

    it('an upgrade passes a reader that went silent for its lease', async () => {
      const [a, b] = setup()(2);
      const key = newKey('upgrade-dead');
      const upgradeable = await a.acquire(key, { mode: 'upgradeable', leaseDuration: LEASE_MS });
      await b.acquire(key, { mode: 'read', heartbeat: false, leaseDuration: LEASE_MS });
      const started = Date.now();
      const upgraded = await upgradeable.upgrade({ wait: '20s' });
      expect(Date.now() - started).toBeGreaterThanOrEqual(LEASE_MS - 100);
      expect(upgraded.isHeld).toBe(true);
      await upgraded.release();
    });

    it('while an upgrade waits, no reader joins (no writer needed for it); a second upgrade of the same lock is refused', async () => {
      const [a, b, c] = setup()(3);
      const key = newKey('upgrade-barrier');
      const upgradeable = await a.acquire(key, { mode: 'upgradeable' });
      const reader = await b.acquire(key, { mode: 'read' });
      expect(await refusedRead(c, key)).toBe(false);
      const upgrading = upgradeable.upgrade({ wait: '20s' });
      await expect(upgradeable.upgrade()).rejects.toThrow(/an upgrade of this lock is already under way/);
      expect(await eventually(async () => refusedRead(c, key), 5_000)).toBe(true);
      await reader.release();
      const upgraded = await upgrading;
      expect(await c.tryAcquire(key, { mode: 'read' })).toBeNull();
      await upgraded.release();
    });

    it('an upgrade aborted by its signal, or by shutdown, leaves no mark, no write lock and nothing held', async () => {
      const [a, b, c] = setup()(3);
      const key = newKey('upgrade-abort');
      const upgradeable = await a.acquire(key, { mode: 'upgradeable' });
      const reader = await b.acquire(key, { mode: 'read' });
      const controller = new AbortController();
      const aborted = upgradeable.upgrade({ wait: '20s', signal: controller.signal }).catch((error: unknown) => error);
      expect(await eventually(async () => refusedRead(c, key), 5_000)).toBe(true);
      controller.abort(new Error('caller gone'));
      expect(await aborted).toEqual(new Error('caller gone'));
      expect(upgradeable.isHeld).toBe(true);
      // The mark went: readers join again.
      expect(await eventually(async () => !(await refusedRead(c, key)), 5_000)).toBe(true);
      // Shutdown during an upgrade: it ends, and the key is free once the reader left too.
      const closing = upgradeable.upgrade({ wait: '20s' }).catch((error: unknown) => error);
      expect(await eventually(async () => refusedRead(c, key), 5_000)).toBe(true);
      await a.close();
      expect(await closing).toBeInstanceOf(Error);
      expect(a.heldCount).toBe(0);
      await reader.release();
      const writer = await c.acquire(key, { wait: '10s' });
      expect(writer.isHeld).toBe(true);
      await writer.release();
    });

    it('inside withLock of an upgradeable lock, after upgrade() a nested write joins the upgraded lock; releaseLease goes through it', async () => {
      const [a, b] = setup()(2);
      const key = newKey('upgrade-nested');
      await a.withLock(
        key,
        async (read) => {
          const upgraded = await read.upgrade();
          const nested = await a.acquire(key, { wait: false });
          expect(nested.fencingToken).toBe(upgraded.fencingToken);
          await nested.release();
          expect(upgraded.isHeld).toBe(true);
          expect(await a.releaseLease(key, upgraded.leaseId)).toBe(true);
          expect(upgraded.isHeld).toBe(false);
        },
        { mode: 'upgradeable' },
      );
      const next = await b.tryAcquire(key);
      expect(next).not.toBeNull();
      await next!.release();
    });

    it('withLock of an upgradeable lock releases the write lock it was upgraded to, also when the work throws', async () => {
      const [a, b] = setup()(2);
      const key = newKey('upgrade-scope');
      const failed = await a
        .withLock(
          key,
          async (read) => {
            await read.upgrade();
            throw new Error('work failed');
          },
          { mode: 'upgradeable' },
        )
        .catch((error: unknown) => error);
      expect(failed).toEqual(new Error('work failed'));
      expect(a.heldCount).toBe(0);
      const next = await b.tryAcquire(key);
      expect(next).not.toBeNull();
      await next!.release();
    });

    it('several keys read-locked at once: two managers hold the same set', async () => {
      const [a, b] = setup()(2);
      const keys = [newKey('set-a'), newKey('set-b')];
      const one = await a.acquire(keys, { mode: 'read' });
      const two = await b.acquire([...keys].reverse(), { mode: 'read', wait: false });
      expect(two.keys).toEqual(one.keys);
      expect(await a.tryAcquire(keys[0])).toBeNull();
      await one.release();
      await two.release();
      const w = await a.acquire(keys);
      await w.release();
    });
  });
}

describeEachServer('read locks', (server) => {
  let fixture: LockFixture;
  beforeAll(async () => {
    fixture = await new LockFixture(server).setup();
  });
  afterAll(() => fixture.close());
  readWriteSuite(
    server.name,
    () => (n) => Array.from({ length: n }, (_, i) => fixture.manager({ ownerName: `instance-${i}`, maxPollInterval: 200 })),
  );

  it('refuses a bad mode, or data, limit or fireTime with mode read, before any request', async () => {
    const manager = fixture.manager();
    const requests = countRequests(manager.client);
    await expect(manager.acquire('bad-mode', { mode: 'shared' as 'read' })).rejects.toThrow(
      /mode must be "read", "upgradeable" or "write", got "shared"/,
    );
    await expect(manager.acquire('bad-mode', { mode: 'read', data: { a: 1 } })).rejects.toThrow(/"data" cannot be used with mode: "read"/);
    await expect(manager.acquire('bad-mode', { mode: 'read', limit: 2 })).rejects.toThrow(/"limit" cannot be used with mode: "read"/);
    await expect(manager.tryAcquire('bad-mode', { mode: 'read', fireTime: Date.now() })).rejects.toBeInstanceOf(LockValidationError);
    await expect(manager.acquire(['bad-a', 'bad-b'], { mode: 'upgradeable' })).rejects.toThrow(/mode: "upgradeable" takes one key/);
    expect(requests.total()).toBe(0);
  });
});

describe('read locks [memory store]', () => {
  const managers: LockManager[] = [];

  it('an upgrade whose mark landed without an answer, given up at once, still removes the mark', async () => {
    const original = MemoryReadStore.prototype.claimUpgrade;
    jest.spyOn(MemoryReadStore.prototype, 'claimUpgrade').mockImplementation(async function (this: MemoryReadStore, key, id) {
      await original.call(this, key, id);
      throw Object.assign(new Error('answer lost'), { name: 'TimeoutError' });
    });
    const store = new MemoryLockStore();
    const a = new LockManager({ store, verifyTable: false, ownerName: 'a', logger: new MemoryLogger() });
    const b = new LockManager({ store, verifyTable: false, ownerName: 'b', logger: new MemoryLogger() });
    managers.push(a, b);
    try {
      const read = await a.acquire('lost-claim', { mode: 'upgradeable' });
      const other = await b.acquire('lost-claim', { mode: 'read' });
      await expect(read.upgrade({ wait: false })).rejects.toThrow(/still hold it; gave up after one attempt/);
      // The mark went: a reader joins.
      const joined = await b.tryAcquire('lost-claim', { mode: 'read' });
      expect(joined).not.toBeNull();
      await joined!.release();
      await other.release();
      await read.release();
    } finally {
      jest.restoreAllMocks();
    }
  });

  it('an upgrade whose converting write landed but whose answer was lost holds the write lock, counted from that write', async () => {
    const original = MemoryReadStore.prototype.convert;
    let lost = false;
    jest.spyOn(MemoryReadStore.prototype, 'convert').mockImplementation(async function (this: MemoryReadStore, key, id, holder) {
      const result = await original.call(this, key, id, holder);
      if (lost || !result.ok) return result;
      lost = true;
      throw Object.assign(new Error('answer lost'), { name: 'TimeoutError' });
    });
    const store = new MemoryLockStore();
    const a = new LockManager({ store, verifyTable: false, ownerName: 'a', logger: new MemoryLogger(), maxPollInterval: 50 });
    const b = new LockManager({ store, verifyTable: false, ownerName: 'b', logger: new MemoryLogger() });
    managers.push(a, b);
    try {
      const read = await a.acquire('lost-convert', { mode: 'upgradeable' });
      const upgraded = await read.upgrade({ wait: '5s' });
      expect(lost).toBe(true);
      expect(upgraded.isHeld).toBe(true);
      expect((await b.inspect('lost-convert'))?.owner).toBe('a');
      expect(await b.tryAcquire('lost-convert')).toBeNull();
      await upgraded.release();
      expect(await b.tryAcquire('lost-convert')).not.toBeNull();
    } finally {
      jest.restoreAllMocks();
    }
  });

  it("a start applied whose answer was lost (the resend refused, showing the reader's entry) counts the lease from the first send", async () => {
    const original = MemoryReadStore.prototype.start;
    let delayed = false;
    jest.spyOn(MemoryReadStore.prototype, 'start').mockImplementation(async function (this: MemoryReadStore, write) {
      const result = await original.call(this, write);
      if (delayed || !result.ok) return result;
      delayed = true;
      // The answer is lost; a resend 1.5 s later is refused and shows the entry the first one wrote.
      await sleep(1_500);
      return { ok: false, current: result.record };
    });
    const store = new MemoryLockStore();
    const a = new LockManager({ store, verifyTable: false, ownerName: 'a', logger: new MemoryLogger() });
    const b = new LockManager({ store, verifyTable: false, ownerName: 'b', maxPollInterval: 50, logger: new MemoryLogger() });
    managers.push(a, b);
    try {
      const pending = a.acquire('lost-start', { mode: 'read', heartbeat: false, leaseDuration: 2_000 });
      await sleep(100);
      const writer = b.acquire('lost-start', { wait: '10s' });
      const reader = await pending;
      const w = await writer;
      // Never both: the reader's lease counted from its first send (it renewed or found itself passed).
      expect(reader.isHeld && w.isHeld).toBe(false);
      await w.release();
      await reader.release();
    } finally {
      jest.restoreAllMocks();
    }
  });

  afterAll(() => Promise.all(managers.map((m) => m.close())));
  readWriteSuite('memory', () => {
    const store = new MemoryLockStore();
    return (n) => {
      const created = Array.from(
        { length: n },
        (_, i) =>
          new LockManager({ store, verifyTable: false, ownerName: `instance-${i}`, maxPollInterval: 200, logger: new MemoryLogger() }),
      );
      managers.push(...created);
      return created;
    };
  });
});

export type { Lock };

/**
 * What the in-memory store promises beyond the shared contract (lock-store.contract.ts):
 * isolation of its records, asynchronous answers, and use under Jest's fake timers.
 */
import { afterEach, describe, expect, it, jest } from '@jest/globals';
import { LockLostError, LockManager, MemoryLockStore } from '../../lib';
import { ticketsWaiting } from '../../lib/store/mutex/mutex.record';
import { memoryStoresOf } from '../support/custom-stores';
import { MemoryLogger } from '../support/lock-fixture';

describe('MemoryLockStore', () => {
  afterEach(() => {
    jest.useRealTimers();
  });

  it("answers asynchronously, after the caller's synchronous code, and applies each write atomically then", async () => {
    const store = new MemoryLockStore();
    const { mutex } = memoryStoresOf(store);
    let settled = false;
    const pending = mutex.acquire({ key: 'k', token: 't1', owner: 'o', leaseMs: 1_000, condition: { kind: 'free' } }).then((r) => {
      settled = true;
      return r;
    });
    expect(settled).toBe(false);
    expect(store.size).toBe(0);
    expect((await pending).ok).toBe(true);
    expect(store.size).toBe(1);
  });

  it('keeps its records to itself: neither the write it was given nor a record it returned can change it', async () => {
    const store = new MemoryLockStore();
    const { mutex } = memoryStoresOf(store);
    const write = {
      key: 'k',
      token: 't1',
      owner: 'o',
      leaseMs: 1_000,
      data: '"x"',
      condition: { kind: 'handover' as const, from: { token: 'nobody' } },
    };
    const pending = mutex.acquire({ ...write, condition: { kind: 'free' } });
    write.data = 'changed after the call';
    const result = await pending;
    expect(result.ok && result.record.data).toBe('"x"');
    const stored = await mutex.read('k');
    const snapshot = structuredClone(stored);
    if (result.ok) Object.assign(result.record, { token: 'intruder', head: 0, tail: 0 });
    Object.assign(stored!, { data: 'intruder', live: 1 });
    expect(await mutex.read('k')).toEqual(snapshot);
    expect(snapshot).toMatchObject({ token: 't1', data: '"x"' });
  });

  it('copies holdings and skip writes too: changing them after the call changes nothing it applies', async () => {
    const store = new MemoryLockStore();
    const { mutex } = memoryStoresOf(store);
    const taken = await mutex.acquire({ key: 'k', token: 't1', owner: 'o', leaseMs: 1_000, condition: { kind: 'free' } });
    const head = taken.ok ? taken.record.head! : Number.NaN;
    await mutex.enqueue({ key: 'k', token: 'w1', claimMs: 1_000 });
    await mutex.enqueue({ key: 'k', token: 'w2', claimMs: 1_000 });
    const holding = { token: 't1', ticket: head };
    const released = mutex.release('k', holding, 1_000);
    holding.token = 'changed after the call';
    expect(await released).toBe(true);
    // w1 stayed silent: w2 passes it and holds from its own ticket.
    const seen = await mutex.read('k');
    const skip = { key: 'k', rvn: seen!.rvn!, live: undefined, target: head + 2, holder: { token: 'w2', owner: 'o2', leaseMs: 500 } };
    const skipped = mutex.skip(skip);
    skip.holder.token = 'changed after the call';
    const result = await skipped;
    expect(result.ok && result.record).toMatchObject({ token: 'w2', owner: 'o2', released: 't1', head: head + 2, tail: head + 3 });
  });

  it('clear() forgets every record', async () => {
    const store = new MemoryLockStore();
    const { mutex } = memoryStoresOf(store);
    await mutex.acquire({ key: 'a', token: 't', owner: 'o', leaseMs: 1_000, condition: { kind: 'free' } });
    expect(store.size).toBe(1);
    store.clear();
    expect(store.size).toBe(0);
    expect(await mutex.read('a')).toBeUndefined();
  });

  it('works under fake timers: locks are taken and released without advancing the clock', async () => {
    jest.useFakeTimers();
    const manager = new LockManager({ store: new MemoryLockStore(), verifyTable: false, logger: new MemoryLogger() });
    expect(await manager.withLock('job', (lock) => lock.fencingToken)).toEqual(expect.any(Number));
    await manager.close();
  });

  it('under fake timers, advancing the clock lets a waiter take over a holder that stopped heartbeating', async () => {
    jest.useFakeTimers();
    const store = new MemoryLockStore();
    const m1 = new LockManager({ store, verifyTable: false, ownerName: 'm1', logger: new MemoryLogger() });
    const m2 = new LockManager({ store, verifyTable: false, ownerName: 'm2', logger: new MemoryLogger() });
    const silent = await m1.acquire('job', { leaseDuration: '30s', heartbeat: false });
    let heir: Awaited<ReturnType<LockManager['acquire']>> | undefined;
    void m2.acquire('job', { wait: '2m' }).then((lock) => (heir = lock));
    await jest.advanceTimersByTimeAsync(29_000);
    expect(heir).toBeUndefined();
    expect(silent.isHeld).toBe(false); // its own clock says the lease (less a safety margin) ran out
    expect((silent.signal.reason as LockLostError).reason).toBe('expired');
    await jest.advanceTimersByTimeAsync(2_000);
    expect(heir?.fencingToken).toBe(silent.fencingToken + 1);
    await Promise.all([m1.close(), m2.close()]);
  });
  it('under fake timers, serves the waiters of other instances in the order they took their tickets', async () => {
    jest.useFakeTimers();
    const store = new MemoryLockStore();
    const { mutex } = memoryStoresOf(store);
    const instance = (ownerName: string) => new LockManager({ store, verifyTable: false, ownerName, logger: new MemoryLogger() });
    const managers = [instance('m1'), instance('m2'), instance('m3')] as const;
    const [m1, m2, m3] = managers;
    const first = await m1.acquire('job');
    const order: string[] = [];
    const waitFor = (manager: LockManager, name: string) =>
      manager.acquire('job', { wait: '1m' }).then((lock) => {
        order.push(name);
        return lock;
      });
    const second = waitFor(m2, 'm2');
    await jest.advanceTimersByTimeAsync(100);
    const third = waitFor(m3, 'm3');
    await jest.advanceTimersByTimeAsync(100);
    expect(ticketsWaiting(await mutex.read('job'))).toBe(2);
    expect(await first.release()).toBe(true);
    await jest.advanceTimersByTimeAsync(5_000);
    const lock2 = await second;
    expect(order).toEqual(['m2']);
    expect(lock2.fencingToken).toBe(first.fencingToken + 1);
    expect(await lock2.release()).toBe(true);
    await jest.advanceTimersByTimeAsync(5_000);
    const lock3 = await third;
    expect(order).toEqual(['m2', 'm3']);
    expect(lock3.fencingToken).toBe(first.fencingToken + 2);
    expect(await lock3.release()).toBe(true);
    expect(await mutex.read('job')).toMatchObject({ token: undefined, head: expect.any(Number) });
    expect(ticketsWaiting(await mutex.read('job'))).toBe(0);
    await Promise.all(managers.map((manager) => manager.close()));
  });
});

/**
 * What the in-memory store promises beyond the shared contract (lock-store.contract.ts):
 * isolation of its records, asynchronous answers, and use under Jest's fake timers.
 */
import { afterEach, describe, expect, it, jest } from '@jest/globals';
import { LockLostError, LockManager, MemoryLockStore } from '../../lib';
import { MemoryLogger } from '../support/lock-fixture';

describe('MemoryLockStore', () => {
  afterEach(() => {
    jest.useRealTimers();
  });

  it("answers asynchronously, after the caller's synchronous code, and applies each write atomically then", async () => {
    const store = new MemoryLockStore();
    let settled = false;
    const pending = store.acquire({ key: 'k', token: 't1', owner: 'o', leaseMs: 1_000, condition: { kind: 'free' } }).then((r) => {
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
    const write = {
      key: 'k',
      token: 't1',
      owner: 'o',
      leaseMs: 1_000,
      data: '"x"',
      condition: { kind: 'handover' as const, fromToken: 'nobody' },
    };
    const pending = store.acquire({ ...write, condition: { kind: 'free' } });
    write.data = 'changed after the call';
    const result = await pending;
    expect(result.ok && result.record.data).toBe('"x"');
    if (result.ok) result.record.queue.push({ token: 'intruder' });
    expect((await store.read('k'))?.queue).toEqual([]);
  });

  it('clear() forgets every record', async () => {
    const store = new MemoryLockStore();
    await store.acquire({ key: 'a', token: 't', owner: 'o', leaseMs: 1_000, condition: { kind: 'free' } });
    expect(store.size).toBe(1);
    store.clear();
    expect(store.size).toBe(0);
    expect(await store.read('a')).toBeUndefined();
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
});

/**
 * The locks a manager holds, on fake timers (which move `performance.now()`) and a real in-memory
 * store: `hold()` makes the `Lock` handle, heartbeats renew its lease or find it taken or gone,
 * `extend()` renews it at once, and `release()` stops it and aborts its signal.
 */
import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { KeyHistory } from '../../../../lib/core/engine/key-history';
import { LeaseKeeper } from '../../../../lib/core/engine/lease.keeper';
import type { Lock } from '../../../../lib/core/engine/lock';
import type { HeldLease } from '../../../../lib/core/engine/lock-state';
import { LockLostError } from '../../../../lib/errors/lock.errors';
import { LOCK_RELEASED } from '../../../../lib/errors/lock.messages';
import type { AcquireOptions } from '../../../../lib/interfaces/acquire-options.interface';
import type { DynamoLockOptions } from '../../../../lib/interfaces/dynamo-lock-options.interface';
import { MemoryMutexStore } from '../../../../lib/store/mutex/mutex.memory-store';
import { engineOptions, eventsOf, newCaller } from '../support/engine.fixture';

const KEY = 'ledger';
const LEASE = 900;

/** A keeper over a real store; its `Lock` handles release through it. */
function setup(overrides: DynamoLockOptions = {}) {
  const { options, seen, events } = engineOptions({ leaseDuration: LEASE, ...overrides });
  const store = new MemoryMutexStore();
  const history = new KeyHistory();
  const lost = jest.fn<(lease: HeldLease) => void>();
  const keeper: LeaseKeeper = new LeaseKeeper({
    options,
    store,
    history,
    events,
    lockHost: {
      release: async (lock) => (keeper.release(lock) !== undefined ? 'released' : 'not-held'),
      extend: (lock, leaseDuration) => keeper.extend(lock, leaseDuration),
      checkHeld: (lock) => keeper.checkHeld(lock),
      // Fenced writes are tested in test/fencing, with stores.
      transact: () => Promise.reject(new Error('no fenced writes in this fixture')),
      fencedWrite: () => Promise.reject(new Error('no fenced writes in this fixture')),
    },
    onLost: lost,
  });
  const heartbeats = jest.spyOn(store, 'heartbeat');
  /** A caller takes the free item, and the keeper starts holding it. */
  const take = async (acquire: AcquireOptions = {}, key = KEY) => {
    const { waiter } = newCaller(options, key, acquire);
    const sentAt = performance.now();
    const result = await store.acquire({
      key,
      token: waiter.token,
      owner: waiter.owner,
      leaseMs: waiter.leaseMs,
      condition: { kind: 'free' },
    });
    if (!result.ok) throw new Error('the item was not free');
    const lease = keeper.hold(waiter, result.record, sentAt, 'free', waiter.leaseMs);
    return { waiter, record: result.record, lease, lock: lease.lock };
  };
  /** Another process takes the item once this holder's token is gone from it. */
  const takenBy = async (token: string, owner: string) => {
    const result = await store.acquire({ key: KEY, token, owner, leaseMs: LEASE, condition: { kind: 'free' } });
    if (!result.ok) throw new Error('the item was not free');
  };
  return { options, seen, store, history, keeper, lost, heartbeats, take, takenBy };
}

describe('LeaseKeeper', () => {
  beforeEach(() => {
    jest.useFakeTimers({ now: 1_700_000_000_000 });
  });
  afterEach(() => {
    jest.useRealTimers();
  });

  it('hold() makes a Lock with the record’s fencing token and the caller’s token as its lease id', async () => {
    const { keeper, seen, take } = setup();
    const { waiter, record, lease, lock } = await take();
    expect(record.fencingToken).toBeGreaterThan(0);
    expect(lock.fencingToken).toBe(record.fencingToken);
    expect(lock.leaseId).toBe(waiter.token);
    expect(lock.key).toBe(KEY);
    expect(lock.owner).toBe('this-process');
    expect(lock.isHeld).toBe(true);
    expect(lock.signal.aborted).toBe(false);
    expect(keeper.get(lock)).toBe(lease);
    expect(keeper.size).toBe(1);
    // Its token is in the item: it holds by the token alone, its writes carry no ticket clause.
    expect(lease).toMatchObject({ storedKey: KEY, token: waiter.token, ticket: undefined, rvn: record.rvn, state: 'held' });
    // A third of the lease between heartbeats.
    expect(lease.heartbeatMs).toBe(LEASE / 3);
    expect(eventsOf(seen, 'acquired')).toEqual([expect.objectContaining({ key: KEY, fencingToken: record.fencingToken, via: 'free' })]);
    keeper.close();
  });

  it('a promoted waiter (its token not yet in the item) holds by its ticket until its first heartbeat writes the token', async () => {
    const { keeper, store, heartbeats, take } = setup();
    const { waiter, record, lock } = await take();
    keeper.release(lock);
    // The same item seen as a promoted waiter sees it: its ticket served, no token written yet.
    const promoted = keeper.hold(waiter, { ...record, token: undefined }, performance.now(), 'promotion', waiter.leaseMs);
    expect(promoted.ticket).toBe(record.head);
    await jest.advanceTimersByTimeAsync(LEASE / 3 + 10);
    expect(heartbeats.mock.calls[0][0].holding).toEqual({ token: waiter.token, ticket: record.head });
    expect(promoted.ticket).toBeUndefined();
    await jest.advanceTimersByTimeAsync(LEASE / 3 + 10);
    expect(heartbeats.mock.calls[1][0].holding).toEqual({ token: waiter.token, ticket: undefined });
    expect(promoted.lock.isHeld).toBe(true);
    expect((await store.read(KEY))?.token).toBe(waiter.token);
    keeper.close();
  });

  it('renews the lease with heartbeats for as long as it is held', async () => {
    const { keeper, store, heartbeats, take } = setup();
    const { lock, record } = await take();
    await jest.advanceTimersByTimeAsync(3 * LEASE);
    expect(heartbeats.mock.calls.length).toBeGreaterThanOrEqual(6);
    expect(lock.isHeld).toBe(true);
    const now = await store.read(KEY);
    expect(now?.token).toBe(lock.leaseId);
    expect(now?.rvn).not.toBe(record.rvn);
    expect(keeper.get(lock)?.rvn).toBe(now?.rvn);
    keeper.close();
  });

  it('marks a lease lost when a heartbeat finds the lock taken: the signal aborts with reason "taken"', async () => {
    const { keeper, store, seen, lost, take, takenBy } = setup();
    const { lock, lease } = await take();
    // Its token left the item (say, it was passed while this process was paused) and another owner took it.
    await store.release(KEY, { token: lock.leaseId }, LEASE);
    await takenBy('thief-token', 'thief-host:7');
    expect(lock.isHeld).toBe(true);
    await jest.advanceTimersByTimeAsync(LEASE / 3);
    expect(lock.signal.aborted).toBe(true);
    const reason = lock.signal.reason as LockLostError;
    expect(reason).toBeInstanceOf(LockLostError);
    expect(reason.reason).toBe('taken');
    expect(reason.key).toBe(KEY);
    expect(reason.message).toContain('"thief-host:7"');
    expect(lock.isHeld).toBe(false);
    expect(lease.state).toBe('lost');
    expect(keeper.size).toBe(0);
    expect(lost).toHaveBeenCalledWith(lease);
    expect(eventsOf(seen, 'lost')).toEqual([expect.objectContaining({ key: KEY, reason: 'taken', fencingToken: lock.fencingToken })]);
    keeper.close();
  });

  it('marks a lease lost with reason "gone" when a heartbeat finds nobody holding', async () => {
    const { keeper, store, lost, take } = setup();
    const { lock } = await take();
    await store.release(KEY, { token: lock.leaseId }, LEASE);
    await jest.advanceTimersByTimeAsync(LEASE / 3);
    expect((lock.signal.reason as LockLostError).reason).toBe('gone');
    expect(lost).toHaveBeenCalledTimes(1);
    keeper.close();
  });

  it('lets a lease that is not renewed run out on the local clock, a safety margin early', async () => {
    const { keeper, heartbeats, lost, take } = setup();
    const { lock } = await take({ heartbeat: false });
    // The margin is a tenth of the lease (at most a second): 90 ms of 900.
    await jest.advanceTimersByTimeAsync(LEASE - 91);
    expect(lock.isHeld).toBe(true);
    await jest.advanceTimersByTimeAsync(2);
    expect(lock.isHeld).toBe(false);
    expect((lock.signal.reason as LockLostError).reason).toBe('expired');
    expect(heartbeats).not.toHaveBeenCalled();
    expect(lost).toHaveBeenCalledTimes(1);
    keeper.close();
  });

  it('extend() renews at once with a new lease, which later heartbeats keep', async () => {
    const { keeper, store, seen, heartbeats, take } = setup();
    const { lock, lease } = await take();
    await keeper.extend(lock, 3_000);
    expect(heartbeats).toHaveBeenCalledTimes(1);
    expect(heartbeats.mock.calls[0][0]).toMatchObject({ key: KEY, holding: { token: lock.leaseId }, leaseMs: 3_000 });
    expect((await store.read(KEY))?.leaseMs).toBe(3_000);
    expect(lease.leaseMs).toBe(3_000);
    expect(lease.heartbeatMs).toBe(1_000);
    expect(eventsOf(seen, 'extended')).toEqual([expect.objectContaining({ key: KEY, leaseMs: 3_000 })]);
    // Past the old lease, on the new one.
    await jest.advanceTimersByTimeAsync(2 * LEASE);
    expect(lock.isHeld).toBe(true);
    expect(heartbeats.mock.calls.at(-1)?.[0].leaseMs).toBe(3_000);
    keeper.close();
  });

  it('a heartbeat that waited in the queue while extend() renewed its lease sends nothing, and the next one comes an interval after the extend', async () => {
    // A heartbeat every 7 s of a 10 s lease (valid 9 s after a write was sent); 60 locks due 1 ms
    // apart, on a server that answers one write at a time in 15 ms: their heartbeats queue.
    const { keeper, store, heartbeats, take } = setup({ leaseDuration: 10_000, heartbeatInterval: 7_000 });
    const answer = MemoryMutexStore.prototype.heartbeat.bind(store);
    let freeAt = 0;
    heartbeats.mockImplementation(async (write) => {
      const now = performance.now();
      freeAt = Math.max(now, freeAt) + 15;
      await new Promise((resolve) => setTimeout(resolve, freeAt - now));
      return answer(write);
    });
    const locks: Lock[] = [];
    const start = performance.now();
    for (let i = 0; i < 60; i++) {
      locks.push((await take({}, `held-${i}`)).lock);
      await jest.advanceTimersByTimeAsync(1);
    }
    const last = locks[59];
    const writesOfLast = () => heartbeats.mock.calls.filter(([write]) => write.key === last.key).length;
    // Every heartbeat fell due; the last lock's waits behind the others when it is extended.
    await jest.advanceTimersByTimeAsync(start + 7_070 - performance.now());
    const extended = last.extend();
    await jest.advanceTimersByTimeAsync(1_000);
    await extended;
    expect(writesOfLast()).toBe(1);
    expect(keeper.get(last)?.beat).toBe('idle');
    // Its next heartbeat is 7 s after the extend, within the lease the extend gave (not 14 s after).
    await jest.advanceTimersByTimeAsync(start + 14_000 - performance.now());
    expect(writesOfLast()).toBe(1);
    await jest.advanceTimersByTimeAsync(1_000);
    expect(writesOfLast()).toBe(2);
    await jest.advanceTimersByTimeAsync(10_000);
    expect(locks.every((lock) => lock.isHeld)).toBe(true);
    keeper.close();
  });

  it('extend() of a lost lock throws, and its handle throws why it was lost', async () => {
    const { keeper, store, heartbeats, take, takenBy } = setup();
    const { lock } = await take();
    await store.release(KEY, { token: lock.leaseId }, LEASE);
    await takenBy('thief-token', 'thief-host:7');
    await jest.advanceTimersByTimeAsync(LEASE / 3);
    const sent = heartbeats.mock.calls.length;
    // The keeper forgot the lease; the handle's signal still tells why it went.
    await expect(keeper.extend(lock)).rejects.toBeInstanceOf(LockLostError);
    await expect(lock.extend()).rejects.toBe(lock.signal.reason);
    await expect(lock.extend()).rejects.toMatchObject({ reason: 'taken' });
    expect(heartbeats).toHaveBeenCalledTimes(sent);
    keeper.close();
  });

  it('release() stops the heartbeats and aborts the signal with reason "released", once', async () => {
    const { keeper, heartbeats, lost, take } = setup();
    const { lock, lease } = await take();
    expect(keeper.release(lock)).toBe(lease);
    expect(lease.state).toBe('released');
    expect(lock.signal.aborted).toBe(true);
    const reason = lock.signal.reason as LockLostError;
    expect(reason).toBeInstanceOf(LockLostError);
    expect(reason).toMatchObject({ key: KEY, reason: 'released', message: LOCK_RELEASED(KEY) });
    expect(lock.isHeld).toBe(false);
    expect(keeper.size).toBe(0);
    expect(keeper.release(lock)).toBeUndefined();
    expect(lock.signal.reason).toBe(reason);
    await jest.advanceTimersByTimeAsync(3 * LEASE);
    expect(heartbeats).not.toHaveBeenCalled();
    expect(lost).not.toHaveBeenCalled();
    await expect(lock.extend()).rejects.toBe(reason);
    keeper.close();
  });
});

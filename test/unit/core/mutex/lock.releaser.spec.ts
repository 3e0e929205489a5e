/**
 * Release of a held mutex, wired as the mutex wires it (a real `LeaseKeeper` and `KeyQueues` over
 * an in-memory store), on fake timers: one write that serves the next ticket of another process,
 * or a hand-over to the next caller of this process when nobody else is in line.
 */
import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { LockLostError } from '../../../../lib/errors/lock.errors';
import { RELEASE_NOT_HELD } from '../../../../lib/errors/lock.messages';
import { eventsOf, hasSettled, mutexEngine } from '../support/engine.fixture';

const KEY = 'settlement';
const LEASE = 900;

/** An engine whose first caller holds {@link KEY}. */
async function holding() {
  const engine = mutexEngine({ leaseDuration: LEASE });
  const { lock } = await engine.acquire(KEY).outcome;
  if (!lock) throw new Error('the first caller did not get the lock');
  const lease = engine.keeper.get(lock)!;
  const release = jest.spyOn(engine.store, 'release');
  const acquire = jest.spyOn(engine.store, 'acquire');
  return { engine, lock, lease, release, acquire };
}

describe('LockReleaser', () => {
  beforeEach(() => {
    jest.useFakeTimers({ now: 1_700_000_000_000 });
  });
  afterEach(() => {
    jest.useRealTimers();
  });

  it('releases with one write, frees the item, and records how long it was held', async () => {
    const { engine, lock, release, acquire } = await holding();
    await jest.advanceTimersByTimeAsync(250);
    expect(await lock.release()).toBe(true);
    expect(release).toHaveBeenCalledTimes(1);
    expect(release.mock.calls[0][0]).toBe(KEY);
    expect(release.mock.calls[0][1]).toMatchObject({ token: lock.leaseId });
    expect(acquire).not.toHaveBeenCalled();
    const item = await engine.store.read(KEY);
    expect(item?.token).toBeUndefined();
    expect(item?.head).toBe(item?.tail);
    expect(item?.lastHoldMs).toBe(250);
    expect(engine.history.holdEstimate(KEY)).toBe(250);
    expect((lock.signal.reason as LockLostError).reason).toBe('released');
    expect(eventsOf(engine.seen, 'released')).toEqual([expect.objectContaining({ key: KEY, handedOver: false, heldMs: 250 })]);
    // Once: a second release finds nothing to release and writes nothing.
    expect(await lock.release()).toBe(false);
    expect(release).toHaveBeenCalledTimes(1);
    await engine.close();
  });

  it('hands the lock to the next caller of this process in one write when no other process is in line', async () => {
    const { engine, lock, release, acquire } = await holding();
    const next = engine.acquire(KEY, { wait: '30s' });
    await jest.advanceTimersByTimeAsync(10);
    expect(await lock.release()).toBe(true);
    const { lock: handed } = await next.outcome;
    expect(handed?.isHeld).toBe(true);
    expect(acquire).toHaveBeenCalledTimes(1);
    expect(acquire.mock.calls[0][0]).toMatchObject({
      key: KEY,
      token: handed!.leaseId,
      condition: { kind: 'handover', from: { token: lock.leaseId } },
    });
    expect(release).not.toHaveBeenCalled();
    expect(handed!.fencingToken).toBe(lock.fencingToken + 1);
    expect((await engine.store.read(KEY))?.token).toBe(handed!.leaseId);
    expect(lock.isHeld).toBe(false);
    expect((lock.signal.reason as LockLostError).reason).toBe('released');
    expect(eventsOf(engine.seen, 'released')).toEqual([expect.objectContaining({ fencingToken: lock.fencingToken, handedOver: true })]);
    expect(eventsOf(engine.seen, 'acquired').at(-1)).toMatchObject({ fencingToken: handed!.fencingToken, via: 'handover' });
    await engine.close();
  });

  it('serves the next ticket of another process with its release write, ahead of the callers of this process', async () => {
    const { engine, lock, lease, release, acquire } = await holding();
    // Another process takes a ticket behind the holder; the next heartbeat shows it.
    const queued = await engine.store.enqueue({ key: KEY, token: 'remote-waiter', claimMs: 5_000 });
    if (!queued.ok) throw new Error('no ticket taken');
    const remoteTicket = queued.record.tail! - 1;
    const local = engine.acquire(KEY, { wait: '30s' });
    await jest.advanceTimersByTimeAsync(LEASE / 3 + 10);
    expect(lease.queuedElsewhere).toBe(1);

    expect(await lock.release()).toBe(true);
    expect(release).toHaveBeenCalledTimes(1);
    expect(release.mock.calls[0][1]).toEqual({ token: lock.leaseId, ticket: lease.ticket });
    expect(acquire).not.toHaveBeenCalled();
    const item = await engine.store.read(KEY);
    expect(item?.head).toBe(remoteTicket);
    expect(item?.token).toBeUndefined();
    expect(eventsOf(engine.seen, 'released')).toEqual([expect.objectContaining({ handedOver: true })]);
    // The local caller was not handed the lock: it queues behind the remote ticket.
    await jest.advanceTimersByTimeAsync(50);
    expect(await hasSettled(local.outcome)).toBe(false);
    expect((await engine.store.read(KEY))?.tailToken).toBe(local.waiter.token);
    await engine.close();
  });

  it('reports a lock that was no longer held: false, a release-failed event and a warning', async () => {
    const { engine, lock, release } = await holding();
    // Its token left the item behind its back, and another owner took it.
    await engine.store.release(KEY, { token: lock.leaseId }, LEASE);
    await engine.store.acquire({ key: KEY, token: 'thief', owner: 'thief-host:7', leaseMs: LEASE, condition: { kind: 'free' } });
    release.mockClear();
    expect(await lock.release()).toBe(false);
    expect(release).toHaveBeenCalledTimes(1);
    expect((await engine.store.read(KEY))?.token).toBe('thief');
    expect(eventsOf(engine.seen, 'release-failed')).toEqual([expect.objectContaining({ outcome: 'not-held' })]);
    expect(eventsOf(engine.seen, 'released')).toEqual([]);
    expect(engine.logger.warn).toHaveBeenCalledWith(RELEASE_NOT_HELD(KEY));
    await engine.close();
  });
});

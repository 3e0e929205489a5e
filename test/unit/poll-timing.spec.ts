/**
 * When a waiter polls, on fake timers and the in-memory store (the timing is the waiter's own
 * logic; the store only answers): it sleeps until the holder's release is expected from how long
 * this key's holders usually keep it, polls a round trip and a few ms apart while the release is
 * overdue, and never waits longer than `maxPollInterval` between polls.
 */
import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { LockBusyError, LockManager } from '../../lib';
import { MemoryLockStore } from '../../lib/store/memory-lock.store';
import { memoryStoresOf } from '../support/custom-stores';
import { MemoryLogger } from '../support/lock-fixture';

/** Two managers (two "processes") on one store; `reads` lists when the waiter read the item. */
function setup(maxPollInterval = 1_000) {
  const store = new MemoryLockStore();
  const holder = new LockManager({ store, ownerName: 'holder', logger: new MemoryLogger() });
  const waiterStore = new MemoryLockStore();
  const shared = memoryStoresOf(store);
  const own = memoryStoresOf(waiterStore);
  // The waiter's reads go to the shared store, timestamped on the fake clock.
  const reads: number[] = [];
  const read = shared.mutex.read.bind(shared.mutex);
  jest.spyOn(own.mutex, 'read').mockImplementation((key) => {
    reads.push(performance.now());
    return read(key);
  });
  for (const name of ['acquire', 'enqueue', 'skip', 'markAlive', 'heartbeat', 'release', 'scanHeld'] as const) {
    jest
      .spyOn(own.mutex, name)
      .mockImplementation(((...args: never[]) => (shared.mutex[name] as (...a: never[]) => unknown)(...args)) as never);
  }
  jest.spyOn(own, 'prepare').mockImplementation((create) => shared.prepare(create));
  const waiter = new LockManager({ store: waiterStore, ownerName: 'waiter', logger: new MemoryLogger(), maxPollInterval });
  return { holder, waiter, reads, store, close: () => Promise.all([holder.close(), waiter.close()]) };
}

/**
 * The holder takes the key and keeps it 1 s while the waiter waits for it.
 * @returns the waiter's reads in the first 900 ms, and in all until it held the lock.
 */
async function waitThroughOneSecondHold({ holder, waiter, reads }: ReturnType<typeof setup>) {
  const held = await holder.acquire('job');
  reads.length = 0;
  const waiting = waiter.acquire('job', { wait: '10s' });
  await jest.advanceTimersByTimeAsync(900);
  const early = reads.length;
  await jest.advanceTimersByTimeAsync(100);
  await held.release();
  await jest.advanceTimersByTimeAsync(50);
  const lock = await waiting;
  expect(lock.isHeld).toBe(true);
  await lock.release();
  return { early, all: reads.length };
}

describe('poll timing of a waiter', () => {
  beforeEach(() => {
    jest.useFakeTimers({ now: 0 });
  });
  afterEach(() => {
    jest.useRealTimers();
  });

  it('sleeps until the usual hold is over instead of polling on a fixed timer', async () => {
    const { holder, waiter, reads, close } = setup();
    // The waiter learns from its own hold that this key is held for about 1 s.
    const own = await waiter.acquire('job');
    await jest.advanceTimersByTimeAsync(1_000);
    await own.release();
    const held = await holder.acquire('job');
    const start = performance.now();
    reads.length = 0;
    const waiting = waiter.acquire('job', { wait: '10s' });
    await jest.advanceTimersByTimeAsync(900);
    // No poll while the release is not due yet.
    expect(reads.filter((at) => at > start)).toEqual([]);
    await jest.advanceTimersByTimeAsync(100);
    await held.release();
    await jest.advanceTimersByTimeAsync(50);
    const lock = await waiting;
    expect(lock.isHeld).toBe(true);
    // One or two reads around the expected release, not one every few milliseconds.
    expect(reads.length).toBeGreaterThanOrEqual(1);
    expect(reads.length).toBeLessThanOrEqual(4);
    await lock.release();
    await close();
  });

  it('a waiter that never held the key times its reads by the hold the last holder wrote', async () => {
    const line = setup();
    // The holder keeps the key 1 s, then takes it again free: the item shows that hold, and no release since.
    const first = await line.holder.acquire('job');
    await jest.advanceTimersByTimeAsync(1_000);
    await first.release();
    const reads = await waitThroughOneSecondHold(line);
    // One read to find it held, then none until about 1 s in (not one every 100 ms).
    expect(reads.early).toBeLessThanOrEqual(2);
    expect(reads.all).toBeLessThanOrEqual(4);
    await line.close();
  });

  it('callers that gave up and were served later do not make the key look instantly released', async () => {
    const line = setup();
    const { holder, waiter, store } = line;
    // The waiter's process learns from its own holds that this key is kept about 1 s.
    for (let i = 0; i < 2; i++) {
      const own = await waiter.acquire('job');
      await jest.advanceTimersByTimeAsync(1_000);
      await own.release();
    }
    // Three of its callers give up behind the holder; each ticket is served later and given back at once.
    for (let i = 0; i < 3; i++) {
      const held = await holder.acquire('job');
      const gaveUp = waiter.acquire('job', { wait: '50ms' }).catch((error: unknown) => error);
      await jest.advanceTimersByTimeAsync(100);
      expect(await gaveUp).toBeInstanceOf(LockBusyError);
      await jest.advanceTimersByTimeAsync(900);
      await held.release();
      await jest.advanceTimersByTimeAsync(300);
      // The quiet release wrote no hold time (the holder's 1 s would otherwise stand for it).
      const item = await memoryStoresOf(store).mutex.read('job');
      expect(item?.head).toBe(item?.tail);
      expect(item?.lastHoldMs).toBeUndefined();
    }
    // Still about 1 s a hold: one read to find it held, then none until the release is due.
    expect((await waitThroughOneSecondHold(line)).early).toBeLessThanOrEqual(2);
    await line.close();
  });

  it('next in line, reads a round trip and 5 ms apart at most for two seconds of an overdue release, then 100 ms apart', async () => {
    const { holder, waiter, reads, close } = setup(200);
    const held = await holder.acquire('slow');
    reads.length = 0;
    const started = Date.now();
    const waiting = waiter.acquire('slow', { wait: '10s' });
    await jest.advanceTimersByTimeAsync(3_000);
    // With no hold known, the release is overdue from the start: pauses of a round trip (none
    // here) and 5 ms at most for two seconds (plus the fake clock's rounding), whatever
    // maxPollInterval; then growing to 100 ms, never to the 200 ms cap.
    const gaps = reads.slice(1).map((at, i) => ({ at: reads[i] - started, gap: at - reads[i] }));
    const close2s = gaps.filter(({ at }) => at < 1_990);
    const later = gaps.filter(({ at }) => at > 2_100);
    expect(Math.max(...close2s.map(({ gap }) => gap))).toBeLessThanOrEqual(6);
    expect(close2s.length).toBeGreaterThan(1_990 / 6);
    expect(Math.max(...later.map(({ gap }) => gap))).toBeLessThanOrEqual(101);
    expect(Math.max(...later.map(({ gap }) => gap))).toBeGreaterThan(50);
    expect(later.length).toBeLessThan(40);
    await held.release();
    await jest.advanceTimersByTimeAsync(250);
    await (await waiting).release();
    await close();
  });
});

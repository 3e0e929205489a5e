/**
 * What waiting in line costs, on fake timers and the in-memory store (requests answer at once, so
 * this is the engine's own timing, without a network): separate managers (as separate instances
 * would be) loop on one key with 20 ms holds. Writes and reads per acquisition stay flat in the
 * number of waiters: a ticket, a release, and a few reads timed by the place in line.
 */
import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { LockManager } from '../../lib';
import { MemoryLockStore } from '../../lib/store/memory-lock.store';
import { memoryStoresOf } from '../support/custom-stores';
import { MemoryLogger } from '../support/lock-fixture';

const HOLD_MS = 20;

/** `n` managers looping acquire → 20 ms → release on one key for `ms` of fake time. */
async function runLine(n: number, ms: number) {
  const store = new MemoryLockStore();
  const { mutex } = memoryStoresOf(store);
  const counts = { reads: 0, writes: 0 };
  const read = mutex.read.bind(mutex);
  // Read units as DynamoDB bills an item under 4 KB: 1 a strongly consistent read, 0.5 an eventually consistent one.
  jest.spyOn(mutex, 'read').mockImplementation((key, consistency) => {
    counts.reads += consistency === 'eventual' ? 0.5 : 1;
    return read(key, consistency);
  });
  for (const name of ['acquire', 'enqueue', 'skip', 'markAlive', 'heartbeat', 'release'] as const) {
    const original = (mutex[name] as (...args: never[]) => Promise<unknown>).bind(mutex);
    jest.spyOn(mutex, name).mockImplementation(((...args: never[]) => {
      counts.writes++;
      return original(...args);
    }) as never);
  }
  const managers = Array.from({ length: n }, (_, i) => new LockManager({ store, ownerName: `m${i}`, logger: new MemoryLogger() }));
  const grants = new Array<number>(n).fill(0);
  let inside = 0;
  let overlaps = 0;
  let stop = false;
  const loops = managers.map(async (manager, i) => {
    while (!stop) {
      const lock = await manager.acquire('line', { wait: '1m' });
      if (++inside > 1) overlaps++;
      grants[i]!++;
      await new Promise((resolve) => setTimeout(resolve, HOLD_MS));
      inside--;
      await lock.release();
    }
  });
  // Settle (every manager learns the usual hold), then count over the window.
  await jest.advanceTimersByTimeAsync(2 * n * HOLD_MS + 500);
  const before = { ...counts, grants: grants.reduce((a, b) => a + b, 0) };
  const firstGrants = [...grants];
  await jest.advanceTimersByTimeAsync(ms);
  const acquisitions = grants.reduce((a, b) => a + b, 0) - before.grants;
  const shares = grants.map((g, i) => g - firstGrants[i]!);
  stop = true;
  await jest.advanceTimersByTimeAsync(n * 100);
  await Promise.all(loops);
  await Promise.all(managers.map((m) => m.close()));
  return {
    acquisitions,
    perSecond: acquisitions / (ms / 1000),
    readUnitsPerAcquisition: (counts.reads - before.reads) / acquisitions,
    writesPerAcquisition: (counts.writes - before.writes) / acquisitions,
    smallestShare: Math.min(...shares) / (acquisitions / n),
    overlaps,
  };
}

describe('the cost of waiting in line', () => {
  beforeEach(() => {
    jest.useFakeTimers({ now: 0 });
  });
  afterEach(() => {
    jest.useRealTimers();
  });

  // Beyond a wait of a quarter of the claim lease (64 × 20 ms here), a waiter reads once more
  // strongly near its turn, so that the lease it is promoted to counts without a write.
  it.each([
    [4, 3],
    [16, 3],
    [64, 4],
  ])(
    '%i waiters: two writes and at most %d read units per acquisition, fair, nearly a hand-over per hold',
    async (n, maxReadUnits) => {
      const line = await runLine(n, 10_000);
      expect(line.overlaps).toBe(0);
      // A ticket and a release: nothing grows with the number of waiters. (The n tickets taken in
      // the window by waiters served after it are counted too.)
      expect(line.writesPerAcquisition).toBeGreaterThanOrEqual(1.9);
      expect(line.writesPerAcquisition).toBeLessThanOrEqual(2.02 + n / line.acquisitions);
      expect(line.readUnitsPerAcquisition).toBeLessThanOrEqual(maxReadUnits);
      expect(line.smallestShare).toBeGreaterThanOrEqual(0.8);
      // Requests answer at once here: the line moves a ticket per hold, give or take a timer tick.
      expect(line.perSecond).toBeGreaterThan(0.85 * (1000 / HOLD_MS));
    },
    60_000,
  );
});

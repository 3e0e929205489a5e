/**
 * The heartbeat scheduler on fake timers (Jest's, which also move `performance.now()`): one timer
 * for every lease, expiry before renewal, coalescing and spreading of due heartbeats.
 */
import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { HeartbeatScheduler, type ScheduledLease } from '../../lib/core/engine/heartbeat.scheduler';

interface TestLease extends ScheduledLease {
  name: string;
}

/** A scheduler whose callbacks record what they were called with, and renew like the manager does. */
function scheduler(renewEveryMs = 100, leaseMs = 300) {
  const beats: string[] = [];
  const expired: string[] = [];
  const s: HeartbeatScheduler<TestLease> = new HeartbeatScheduler<TestLease>(
    (lease) => {
      beats.push(lease.name);
      // A heartbeat in flight: answered 10 ms later, renewing the lease from when it was sent.
      lease.busy = true;
      const sentAt = performance.now();
      setTimeout(() => {
        lease.busy = false;
        lease.nextBeatAt = sentAt + renewEveryMs;
        lease.validUntil = sentAt + leaseMs;
        s.touch(lease);
      }, 10);
    },
    (lease) => expired.push(lease.name),
  );
  const lease = (name: string, nextBeatAt: number, validUntil = nextBeatAt + 200): TestLease => ({
    name,
    nextBeatAt,
    validUntil,
    busy: false,
  });
  return { s, beats, expired, lease };
}

describe('HeartbeatScheduler', () => {
  beforeEach(() => {
    jest.useFakeTimers({ now: 0 });
  });
  afterEach(() => {
    jest.useRealTimers();
  });

  it('renews a lease when its heartbeat is due, and again after each renewal', async () => {
    const { s, beats, lease } = scheduler();
    s.add(lease('a', 100));
    await jest.advanceTimersByTimeAsync(99);
    expect(beats).toEqual([]);
    await jest.advanceTimersByTimeAsync(1);
    expect(beats).toEqual(['a']);
    // Renewed at 100 (sent then): next heartbeat at 200, then 300.
    await jest.advanceTimersByTimeAsync(200);
    expect(beats).toEqual(['a', 'a', 'a']);
    s.close();
  });

  it('reports a lease whose validity ran out before renewing anything, and never renews it', async () => {
    const { s, beats, expired, lease } = scheduler();
    // Due for a heartbeat and run out at the same wake-up (as after a pause): the loss comes first.
    s.add(lease('paused', 100, 100));
    s.add(lease('alive', 100));
    await jest.advanceTimersByTimeAsync(100);
    expect(beats).toEqual(['alive']);
    expect(expired).toEqual(['paused']);
    await jest.advanceTimersByTimeAsync(500);
    expect(expired).toEqual(['paused']);
    expect(beats.filter((name) => name === 'paused')).toEqual([]);
    s.close();
  });

  it('sends heartbeats due within a few milliseconds of each other in one wake-up', async () => {
    const { s, beats, lease } = scheduler();
    s.add(lease('a', 100));
    s.add(lease('b', 104));
    await jest.advanceTimersByTimeAsync(100);
    expect(beats).toEqual(['a', 'b']);
    s.close();
  });

  it('starts at most 200 heartbeats per wake-up and the rest a few milliseconds later', async () => {
    const { s, beats, lease } = scheduler();
    for (let i = 0; i < 250; i++) s.add(lease(`l${i}`, 100));
    await jest.advanceTimersByTimeAsync(100);
    expect(beats).toHaveLength(200);
    await jest.advanceTimersByTimeAsync(10);
    expect(beats).toHaveLength(250);
    s.close();
  });

  it('leaves a lease alone while a write of it is in flight, and stops when the last lease goes', async () => {
    const { s, beats, lease } = scheduler();
    const busy = { ...lease('busy', 100), busy: true };
    s.add(busy);
    await jest.advanceTimersByTimeAsync(150);
    expect(beats).toEqual([]);
    s.delete(busy);
    expect(s.size).toBe(0);
    expect(jest.getTimerCount()).toBe(0);
  });
});

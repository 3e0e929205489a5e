/**
 * The heartbeat scheduler on fake timers (Jest's, which also move `performance.now()`): one timer
 * for every lease, expiry before renewal, coalescing of due heartbeats, and their pacing: a few in
 * flight at once, as many as the server answers without queueing, and one warning when it cannot
 * take them all in time.
 */
import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import type { FallingBehind } from '../../lib/core/engine/heartbeat.pacer';
import { HeartbeatScheduler, type ScheduledLease } from '../../lib/core/engine/heartbeat.scheduler';

interface TestLease extends ScheduledLease {
  name: string;
}

/**
 * A scheduler whose callbacks record what they were called with, and renew like the manager does:
 * each heartbeat is answered `answerMs` later (or when `answerMs()` says: a {@link server} that
 * queues), renewing the lease from when it was sent.
 */
function scheduler(renewEveryMs = 100, leaseMs = 300, answerMs: number | (() => number) = 10) {
  const beats: string[] = [];
  const expired: string[] = [];
  const warnings: FallingBehind[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const s: HeartbeatScheduler<TestLease> = new HeartbeatScheduler<TestLease>(
    (lease) => {
      beats.push(lease.name);
      lease.busy = true;
      maxInFlight = Math.max(maxInFlight, ++inFlight);
      const sentAt = performance.now();
      return new Promise<boolean>((resolve) =>
        setTimeout(
          () => {
            inFlight--;
            lease.busy = false;
            lease.nextBeatAt = sentAt + renewEveryMs;
            lease.validUntil = sentAt + leaseMs;
            s.touch(lease);
            resolve(true);
          },
          typeof answerMs === 'number' ? answerMs : answerMs(),
        ),
      );
    },
    (lease) => expired.push(lease.name),
    (behind) => warnings.push(behind),
  );
  const lease = (name: string, nextBeatAt: number, validUntil = nextBeatAt + 200): TestLease => ({
    name,
    nextBeatAt,
    validUntil,
    busy: false,
    heartbeatMs: renewEveryMs,
    slot: -1,
    beat: 'idle',
  });
  return { s, beats, expired, warnings, lease, maxInFlight: () => maxInFlight, resetMax: () => (maxInFlight = inFlight) };
}

/** A server with `workers` working `serviceMs` on each request, first come first served: the answer time of a request sent now. */
function server(workers: number, serviceMs: number): () => number {
  const freeAt = new Array<number>(workers).fill(0);
  return () => {
    const now = performance.now();
    const worker = freeAt.indexOf(Math.min(...freeAt));
    freeAt[worker] = Math.max(now, freeAt[worker]) + serviceMs;
    return freeAt[worker] - now;
  };
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

  it('starts 250 heartbeats due together a few at a time, each as an answer comes back, and renews each once', async () => {
    const { s, beats, lease, maxInFlight } = scheduler(1_000, 3_000);
    for (let i = 0; i < 250; i++) s.add(lease(`l${i}`, 100, 3_000));
    await jest.advanceTimersByTimeAsync(100);
    // Not 250 requests at once: they would queue behind the HTTP agent's sockets, their time limits running.
    expect(beats.length).toBeLessThanOrEqual(8);
    await jest.advanceTimersByTimeAsync(900);
    expect(new Set(beats).size).toBe(250);
    expect(beats).toHaveLength(250);
    expect(maxInFlight()).toBeLessThanOrEqual(32);
    s.close();
  });

  it('sends more at once while answers come back fast, fewer while they queue at the server', async () => {
    // 60 leases due together, then every 10 s; one server answers in 10 ms, the other works one at a
    // time (a burst's answers spread the next round's heartbeats over a few answer times).
    const fast = scheduler(10_000, 30_000, 10);
    const slow = scheduler(10_000, 30_000, server(1, 10));
    for (let i = 0; i < 60; i++) {
      fast.s.add(fast.lease(`l${i}`, 100, 30_000));
      slow.s.add(slow.lease(`l${i}`, 100, 30_000));
    }
    await jest.advanceTimersByTimeAsync(40_000);
    fast.resetMax();
    slow.resetMax();
    await jest.advanceTimersByTimeAsync(10_000);
    expect(fast.maxInFlight()).toBeGreaterThanOrEqual(8);
    expect(slow.maxInFlight()).toBeLessThanOrEqual(3);
    expect(fast.warnings).toEqual([]);
    expect(slow.warnings).toEqual([]);
    expect(fast.beats).toHaveLength(300);
    expect(slow.beats).toHaveLength(300);
    fast.s.close();
    slow.s.close();
  });

  it('keeps every lease when the server answers fewer than are due, and says so once, naming the rate it answers', async () => {
    // 400 leases, one heartbeat each every second (400 per s); the server answers 4 at a time in 20 ms (200 per s).
    const { s, beats, expired, warnings, lease, maxInFlight } = scheduler(1_000, 3_000, server(4, 20));
    for (let i = 0; i < 400; i++) s.add(lease(`l${i}`, 1_000 + Math.floor(i / 4), 3_000));
    await jest.advanceTimersByTimeAsync(8_000);
    expect(expired).toEqual([]);
    expect(warnings).toHaveLength(1);
    expect(warnings[0].answeredPerSecond).toBeGreaterThan(180);
    expect(warnings[0].answeredPerSecond).toBeLessThan(220);
    expect(warnings[0].lateMs).toBeGreaterThan(500);
    // The most in flight while that rate was counted; never past the hard cap (32 + 8 urgent).
    expect(warnings[0].inFlight).toBeGreaterThan(0);
    expect(warnings[0].inFlight).toBeLessThanOrEqual(40);
    expect(maxInFlight()).toBeLessThanOrEqual(40);
    // Every lease was renewed, about every two seconds (7 s of 200 per s).
    expect(new Set(beats).size).toBe(400);
    expect(beats.length).toBeGreaterThan(1_300);
    s.close();
  });

  it('starts a waiting heartbeat past the limit once its lease is half spent, on a timer, and still reports lost a lease whose write never ends', async () => {
    // Answers take 2 s (writes hang past every lease); 12 leases due at 100, valid until 400: urgent from 250.
    const { s, beats, expired, lease } = scheduler(100, 300, 2_000);
    for (let i = 0; i < 12; i++) s.add(lease(`l${i}`, 100, 400));
    await jest.advanceTimersByTimeAsync(100);
    expect(beats).toHaveLength(8);
    // No write ends before then: only a timer can start the other four.
    await jest.advanceTimersByTimeAsync(149);
    expect(beats).toHaveLength(8);
    await jest.advanceTimersByTimeAsync(1);
    expect(beats).toHaveLength(12);
    await jest.advanceTimersByTimeAsync(149);
    expect(expired).toEqual([]);
    // Their writes never came back in time: each is reported lost at its deadline.
    await jest.advanceTimersByTimeAsync(1);
    expect(expired).toHaveLength(12);
    s.close();
  });

  it('never has more than 8 heartbeats in flight past the limit, however many are urgent', async () => {
    // 30 leases due at 100, valid until 400; writes hang for 2 s. The limit is 8 at first: 16 at most.
    const { s, beats, expired, lease, maxInFlight } = scheduler(100, 300, 2_000);
    for (let i = 0; i < 30; i++) s.add(lease(`l${i}`, 100, 400));
    await jest.advanceTimersByTimeAsync(400);
    expect(beats).toHaveLength(16);
    expect(maxInFlight()).toBe(16);
    expect(expired).toHaveLength(30);
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

/**
 * The lock engine's cross-process semantics with the in-memory store: two `LockManager`s
 * sharing one `MemoryLockStore` behave like two processes sharing one DynamoDB table.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import { type DynamoLockOptions, LockLostError, LockManager, MemoryLockStore } from '../../lib';
import { isHeld, ticketsWaiting } from '../../lib/store/mutex/mutex.record';
import type { MemoryMutexStore } from '../../lib/store/mutex/mutex.memory-store';
import { memoryStoresOf } from '../support/custom-stores';
import { MemoryLogger } from '../support/lock-fixture';

let seq = 0;
const newKey = (name: string) => `${name}-${++seq}`;

/** Polls `check` every few milliseconds until it returns true (or fails after `ms`). */
async function until(check: () => boolean | Promise<boolean>, ms = 3_000): Promise<void> {
  const deadline = performance.now() + ms;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error('condition not met in time');
    await sleep(5);
  }
}

describe('LockManager on a shared MemoryLockStore', () => {
  let store: MemoryLockStore;
  /** The mutex items of `store`, as its managers write them. */
  let mutex: MemoryMutexStore;
  let managers: LockManager[];
  let send: ReturnType<typeof jest.spyOn>;

  const manager = (ownerName: string, options: DynamoLockOptions = {}) => {
    const m = new LockManager({ store, verifyTable: false, ownerName, logger: new MemoryLogger(), ...options });
    managers.push(m);
    return m;
  };

  beforeEach(() => {
    store = new MemoryLockStore();
    mutex = memoryStoresOf(store).mutex;
    managers = [];
    send = jest.spyOn(DynamoDBClient.prototype, 'send');
  });
  afterEach(async () => {
    await Promise.all(managers.map((m) => m.close()));
    expect(send).not.toHaveBeenCalled();
  });

  it('never lets two managers inside one key at the same time; fencing tokens rise in entry order', async () => {
    const [m1, m2] = [manager('m1'), manager('m2')];
    const key = newKey('exclusive');
    let inside = 0;
    let maxInside = 0;
    const tokens: number[] = [];
    await Promise.all(
      [m1, m2].map(async (m) => {
        for (let i = 0; i < 5; i++) {
          await m.withLock(
            key,
            async (lock) => {
              maxInside = Math.max(maxInside, ++inside);
              tokens.push(lock.fencingToken);
              await sleep(3);
              inside--;
            },
            { wait: '10s' },
          );
        }
      }),
    );
    expect(maxInside).toBe(1);
    expect(tokens).toHaveLength(10);
    for (let i = 1; i < tokens.length; i++) expect(tokens[i]).toBeGreaterThan(tokens[i - 1]!);
  });

  it('gives a waiter of the other manager a ticket; the release serves it in the same write; the releaser cannot jump the line', async () => {
    const [m1, m2] = [manager('m1'), manager('m2')];
    const key = newKey('promote');
    const order: string[] = [];
    const first = await m1.acquire(key);
    const remote = m2.acquire(key, { wait: '10s' });
    await until(async () => ticketsWaiting(await mutex.read(key)) === 1);
    const queued = (await mutex.read(key))!;
    // The item names no waiter: only the next ticket to hand out moved on.
    expect(queued).toMatchObject({ token: first.leaseId, tail: queued.head! + 2 });
    // A second caller of the holder's own manager arrives after m2's waiter.
    const local = m1.acquire(key, { wait: '10s' }).then(async (lock) => {
      order.push('m1 again');
      return lock;
    });
    await first.extend(); // the holder learns who waits (a heartbeat does the same)
    expect(await first.release()).toBe(true);
    // One write handed it over: the next ticket is served before m2 even looked.
    const handed = (await mutex.read(key))!;
    expect(handed).toMatchObject({ head: queued.head! + 1, released: first.leaseId, fencingToken: first.fencingToken + 1 });
    expect(handed.token).toBeUndefined();
    const second = await remote;
    order.push('m2');
    expect(second.fencingToken).toBe(first.fencingToken + 1);
    await sleep(50);
    expect(order).toEqual(['m2']); // m1's own caller still waits behind m2
    await second.release();
    const third = await local;
    expect(order).toEqual(['m2', 'm1 again']);
    expect(third.fencingToken).toBe(second.fencingToken + 1);
    await third.release();
    const free = (await mutex.read(key))!;
    expect(isHeld(free)).toBe(false);
    expect(free.head).toBe(free.tail);
  });

  it('takes over a holder that stopped heartbeating one lease after first seeing its record', async () => {
    const [m1, m2] = [manager('m1'), manager('m2')];
    const key = newKey('takeover');
    const dead = await m1.acquire(key, { leaseDuration: 400, heartbeat: false });
    const started = performance.now();
    const heir = await m2.acquire(key, { wait: '5s' });
    const waited = performance.now() - started;
    expect(waited).toBeGreaterThanOrEqual(390);
    expect(waited).toBeLessThan(2_000);
    expect(heir.fencingToken).toBe(dead.fencingToken + 1);
    // The silent holder's own clock already told it: its lease ran out.
    expect(dead.isHeld).toBe(false);
    expect((dead.signal.reason as LockLostError).reason).toBe('expired');
    expect(await dead.release()).toBe(false);
    expect((await mutex.read(key))?.token).toBe(heir.leaseId);
    await heir.release();
  });

  it('signals a holder that its lock was taken (reason "taken", naming the new owner) at its next heartbeat', async () => {
    const m1 = manager('m1', { leaseDuration: 600, heartbeatInterval: 50 });
    const key = newKey('taken');
    const lock = await m1.acquire(key);
    const seen = (await mutex.read(key))!;
    // Another process takes a ticket and passes the holder to it (as if m1 had been silent for a lease).
    const ticket = (await mutex.enqueue({ key, token: 'rogue-token', claimMs: 5_000 })).ok ? (await mutex.read(key))!.tail! - 1 : -1;
    const rogue = await mutex.skip({
      key,
      rvn: seen.rvn!,
      live: undefined,
      target: ticket,
      holder: { token: 'rogue-token', owner: 'rogue', leaseMs: 5_000 },
    });
    expect(rogue.ok).toBe(true);
    await until(() => lock.signal.aborted);
    const reason = lock.signal.reason as LockLostError;
    expect(reason).toBeInstanceOf(LockLostError);
    expect(reason.reason).toBe('taken');
    expect(reason.message).toContain('"rogue"');
    expect(lock.isHeld).toBe(false);
    expect(await lock.release()).toBe(false);
    expect((await mutex.read(key))?.token).toBe('rogue-token');
  });

  // Regression: a stale lease id that promoted the lock away must not release the promoted holder.
  it('a stale lease id that promoted the lock away releases nothing again (the promoted holder keeps it)', async () => {
    const [m1, m2] = [manager('m1'), manager('m2')];
    const key = newKey('stale-after-promote');
    const first = await m1.acquire(key);
    const remote = m2.acquire(key, { wait: '10s' });
    await until(async () => ticketsWaiting(await mutex.read(key)) === 1);
    await first.extend();
    expect(await first.release()).toBe(true);
    const second = await remote;
    // Its release is done already (true, as for any repeated release): nothing is written again.
    const before = await mutex.read(key);
    expect(await m1.releaseLease(key, first.leaseId)).toBe(true);
    expect(await mutex.read(key)).toEqual(before);
    expect(isHeld(await mutex.read(key))).toBe(true);
    expect(second.isHeld).toBe(true);
    await second.release();
  });

  it('keeps the item small whatever the number of waiters and their data; refuses data over 1 KB before any write', async () => {
    const holderManager = manager('holder');
    const key = newKey('small');
    const holder = await holderManager.acquire(key, { data: 'x'.repeat(1_000) });
    await expect(manager('big').acquire(key, { data: 'y'.repeat(1_100) })).rejects.toThrow(/at most 1024 bytes/);
    const waiting = Array.from({ length: 40 }, (_, i) => manager(`waiter-${i}`).acquire(key, { wait: '10s', data: 'd'.repeat(1_000) }));
    await until(async () => ticketsWaiting(await mutex.read(key)) === 40);
    // The holder's data and two counters: nothing of the 40 waiters.
    expect(JSON.stringify(await mutex.read(key)).length).toBeLessThan(1_500);
    expect(await holder.release()).toBe(true);
    // Each waiter gets the lock in turn with its own data (release as soon as held).
    for (const outcome of waiting) {
      const lock = await outcome;
      expect((await mutex.read(key))?.data).toBe(JSON.stringify('d'.repeat(1_000)));
      await lock.release();
    }
    expect(isHeld(await mutex.read(key))).toBe(false);
  });

  it('signals "gone" when its lease id is released elsewhere, and the other manager can take the key at once', async () => {
    const [m1, m2] = [manager('m1', { leaseDuration: 600, heartbeatInterval: 50 }), manager('m2')];
    const key = newKey('gone');
    const lock = await m1.acquire(key);
    expect(await m2.releaseLease(key, lock.leaseId)).toBe(true);
    await until(() => lock.signal.aborted);
    expect((lock.signal.reason as LockLostError).reason).toBe('gone');
    const next = await m2.acquire(key, { wait: false });
    expect(next.fencingToken).toBe(lock.fencingToken + 1);
    await next.release();
  });
});

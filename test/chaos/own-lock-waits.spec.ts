/**
 * What the chaos suite reported as "waiting on own orphaned/stale lock": a process found a lock
 * item holding a token of its own, one none of its callers holds any more. Both are deterministic here (faults injected into one client, see
 * `test/support/fault-injection.ts`).
 *
 * Regressions: the engine remembers such tokens and takes the lock back at once (one write).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { LockBusyError } from '../../lib';
import { injectFaults } from '../support/fault-injection';
import { LockFixture } from '../support/lock-fixture';
import { describeEachServer } from '../support/servers';

const LEASE_MS = 3_000;
let keySeq = 0;
const newKey = (name: string) => `own-${name}-${++keySeq}`;

describeEachServer('own orphaned or stale lock', (server) => {
  const fixture = new LockFixture(server);
  beforeAll(() => fixture.setup(), 30_000);
  afterAll(() => fixture.close());

  it("a waiter that gave up leaves the line: the holder's release serves the next waiter at once", async () => {
    const key = newKey('gave-up');
    const holder = fixture.manager({ ownerName: 'holder', leaseDuration: LEASE_MS });
    const mine = fixture.manager({ ownerName: 'mine', leaseDuration: LEASE_MS });
    const other = fixture.manager({ ownerName: 'other', leaseDuration: LEASE_MS });
    const cleanups: string[] = [];
    mine.subscribe((event) => {
      if (event.type === 'cleanup') cleanups.push(event.outcome);
    });
    const held = await holder.acquire(key);
    // A waiter takes a ticket, then gives up; a waiter of another process queues behind it.
    expect(await mine.acquire(key, { wait: 300 }).catch((error: unknown) => error)).toBeInstanceOf(LockBusyError);
    const next = other.acquire(key, { wait: 2 * LEASE_MS });
    await sleep(200);
    expect(cleanups).toEqual(['left']);
    const released = performance.now();
    await held.release();
    // The ticket nobody waits for is passed by the release itself: not after a claim lease.
    const lock = await next;
    const tookMs = performance.now() - released;
    expect(lock.isHeld).toBe(true);
    expect(mine.heldCount).toBe(0);
    await lock.release();
    expect(tookMs).toBeLessThan(1_000);
  }, 20_000);

  it('a later caller of the same process, queued before the first one gave up, takes over its place in line', async () => {
    const key = newKey('adopted');
    const holder = fixture.manager({ ownerName: 'holder', leaseDuration: LEASE_MS });
    const mine = fixture.manager({ ownerName: 'mine', leaseDuration: LEASE_MS });
    const other = fixture.manager({ ownerName: 'other', leaseDuration: LEASE_MS });
    const held = await holder.acquire(key);
    const first = mine.acquire(key, { wait: 300 });
    const again = mine.acquire(key, { wait: 2 * LEASE_MS });
    expect(await first.catch((error: unknown) => error)).toBeInstanceOf(LockBusyError);
    const behind = other.acquire(key, { wait: 2 * LEASE_MS });
    await sleep(100);
    const order: string[] = [];
    void behind.then(() => order.push('other'));
    await held.release();
    const lock = await again;
    order.push('mine');
    await sleep(50);
    expect(order).toEqual(['mine']);
    await lock.release();
    await (await behind).release();
    expect(order).toEqual(['mine', 'other']);
  }, 20_000);

  it('a caller arriving after a waiter of another process, once its own process left the line, queues behind that waiter', async () => {
    const key = newKey('anew');
    const holder = fixture.manager({ ownerName: 'holder', leaseDuration: LEASE_MS });
    const mine = fixture.manager({ ownerName: 'mine', leaseDuration: LEASE_MS });
    const other = fixture.manager({ ownerName: 'other', leaseDuration: LEASE_MS });
    const held = await holder.acquire(key);
    expect(await mine.acquire(key, { wait: 300 }).catch((error: unknown) => error)).toBeInstanceOf(LockBusyError);
    const behind = other.acquire(key, { wait: 2 * LEASE_MS });
    await sleep(100);
    const again = mine.acquire(key, { wait: 2 * LEASE_MS });
    await sleep(100);
    const order: string[] = [];
    void again.then(() => order.push('mine'));
    await held.release();
    const lock = await behind;
    order.push('other');
    await sleep(50);
    expect(order).toEqual(['other']);
    await lock.release();
    await (await again).release();
    expect(order).toEqual(['other', 'mine']);
  }, 20_000);

  it('after its release failed with a transient error, the same process takes its own stale lock back at once', async () => {
    const key = newKey('stale');
    const mine = fixture.manager({ ownerName: 'mine-stale', leaseDuration: LEASE_MS }, { maxAttempts: 1 });
    const faults = injectFaults(mine.client);
    const lock = await mine.acquire(key);
    faults.failNext('UpdateItem', { kind: 'server-error', reachServer: false });
    await lock.release().catch(() => undefined);
    faults.clear();
    expect((await mine.inspect(key))?.owner).toBe('mine-stale');

    const started = performance.now();
    const again = await mine.acquire(key, { wait: 2 * LEASE_MS });
    const tookMs = performance.now() - started;
    await again.release();
    expect(tookMs).toBeLessThan(LEASE_MS / 3);
  }, 20_000);
});

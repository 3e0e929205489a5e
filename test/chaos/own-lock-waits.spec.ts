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

  it('a waiter that gave up while its queue exit failed is promoted later: its own process takes the lock back at once', async () => {
    const key = newKey('orphan');
    const holder = fixture.manager({ ownerName: 'holder', leaseDuration: LEASE_MS });
    const mine = fixture.manager({ ownerName: 'mine', leaseDuration: LEASE_MS }, { maxAttempts: 1 });
    const faults = injectFaults(mine.client);
    const held = await holder.acquire(key);

    // A waiter queues itself in the item, gives up, and its exit from the queue is throttled.
    const gaveUp = mine.acquire(key, { wait: 400 }).catch((error: unknown) => error);
    await sleep(200);
    faults.failNext('UpdateItem', { kind: 'throttling', times: 5 });
    expect(await gaveUp).toBeInstanceOf(LockBusyError);
    // The holder's next heartbeat learns of the queue; its release promotes the abandoned waiter.
    await sleep(1_300);
    faults.clear();
    await held.release();
    expect((await mine.inspect(key))?.owner).toBe('mine');

    // The same process wants the lock again: the item shows one of its own tokens, nobody's.
    const started = performance.now();
    const lock = await mine.acquire(key, { wait: 2 * LEASE_MS });
    const tookMs = performance.now() - started;
    await lock.release();
    expect(tookMs).toBeLessThan(LEASE_MS / 3);
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

/**
 * Many locks held by one manager: heartbeats go out a few at a time, as fast as the server answers
 * them, one per lock per interval; when the server cannot take that many, one warning says so and
 * names the rate it reaches, and no lock is lost while the leases allow the slower round. On the
 * memory store and on every test server.
 */
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Lock, LockManager, MemoryLockStore } from '../../lib';
import { memoryStoresOf } from '../support/custom-stores';
import { LockFixture, MemoryLogger } from '../support/lock-fixture';
import { ServerCapacity } from '../support/server-capacity';
import { describeEachServer } from '../support/servers';

jest.setTimeout(40_000);

/** How many locks a suite holds, and the options of its manager: one heartbeat per lock per second. */
interface Profile {
  held: number;
  options: { leaseDuration: number; heartbeatInterval: number; requestTimeout: number };
}

/**
 * The memory store: 300 locks (300 writes per second); a lease of 4 s, so each lock stays valid
 * 3.6 s after its last heartbeat was sent, 2.6 s after its next one was due. Its answers cost
 * next to nothing, so the timing is strict.
 */
const MEMORY: Profile = { held: 300, options: { leaseDuration: 4_000, heartbeatInterval: 1_000, requestTimeout: 1_500 } };
/**
 * A test server runs on the test machine, often loaded (measured: dynalite, in the Jest process,
 * answered 33 to 60 writes per second with two other processes spinning on two cores): 30 locks,
 * and a lease of 8 s (valid 7.2 s after a heartbeat was sent, 6.2 s after the next was due), so a
 * slow machine costs no lock. A request may wait at the held-back server for the whole limit in
 * flight (40 × 133 ms / 2 workers = 2.7 s on half capacity): a request limit of 4 s.
 */
const SERVER: Profile = { held: 30, options: { leaseDuration: 8_000, heartbeatInterval: 1_000, requestTimeout: 4_000 } };
const BEHIND =
  /Heartbeats are falling behind: this process holds (\d+) locks, whose heartbeats need about (\d+) writes per second, and the lock store answers about (\d+) per second/;

interface Setup {
  manager: LockManager;
  logger: MemoryLogger;
  capacity: ServerCapacity;
}

async function acquireAll(manager: LockManager, prefix: string, held: number): Promise<Lock[]> {
  const locks: Lock[] = [];
  // 10 at a time: a test server on a loaded machine answers 50 at once slower than the request limit.
  for (let i = 0; i < held; i += 10) {
    locks.push(...(await Promise.all(Array.from({ length: Math.min(10, held - i) }, (_, j) => manager.acquire(`${prefix}-${i + j}`)))));
  }
  return locks;
}

/**
 * The suite for `profile.held` locks (one heartbeat each per second), on a server held to a
 * capacity of `workers` requests at once, `serviceMs` each: 2 × held answers per second (room for
 * every heartbeat), then held / 2 (half of them). A manager is closed even when its test fails, so
 * its heartbeats do not load the server under the next test.
 */
function manyHeldSuite(
  { held, options }: Profile,
  setup: (workers: number, serviceMs: number, options: Profile['options']) => Setup,
): void {
  it(`renews each of ${held} locks once per interval, a few heartbeats in flight at a time, and warns of nothing`, async () => {
    const { manager, logger, capacity } = setup(4, 2_000 / held, options);
    try {
      const locks = await acquireAll(manager, 'enough', held);
      capacity.on = true;
      await sleep(1_200);
      capacity.reset();
      await sleep(3_000);
      expect(locks.every((lock) => lock.isHeld)).toBe(true);
      // 3 intervals of heartbeats (each lock once per interval; a loaded test server answers some late).
      expect(capacity.answered).toBeGreaterThan(3 * held * 0.8);
      expect(capacity.answered).toBeLessThan(3 * held * 1.1);
      expect(capacity.maxInFlight).toBeLessThanOrEqual(32);
      expect(logger.at('warn')).toEqual([]);
    } finally {
      await manager.close();
    }
  });

  it(`keeps ${held} locks when the server answers only half their heartbeats on time, and says so in one warning naming its rate`, async () => {
    // Each lock is renewed about every 2 s (the first round too, all due at once), within its slack.
    const { manager, logger, capacity } = setup(2, 4_000 / held, options);
    try {
      const locks = await acquireAll(manager, 'behind', held);
      capacity.on = true;
      await sleep(6_000);
      expect(locks.every((lock) => lock.isHeld)).toBe(true);
      const warnings = logger.at('warn');
      expect(warnings).toHaveLength(1);
      const [, holds, needed, answered] = BEHIND.exec(warnings[0])?.map(Number) ?? [];
      expect(holds).toBe(held);
      expect(needed).toBe(held);
      expect(answered).toBeGreaterThan((held / 2) * 0.66);
      expect(answered).toBeLessThan((held / 2) * 1.33);
      // The waiting happens in the library's queue, not at the server, where request limits run:
      // at most the limit (32) and 8 urgent ones in flight.
      expect(capacity.maxInFlight).toBeLessThanOrEqual(40);
    } finally {
      await manager.close();
    }
  });
}

describeEachServer('Many locks held', { shortRunOn: 'dynalite' }, (server) => {
  const fixture = new LockFixture(server);
  beforeAll(() => fixture.setup());
  afterAll(() => fixture.close());
  manyHeldSuite(SERVER, (workers, serviceMs, options) => {
    const capacity = new ServerCapacity(workers, serviceMs);
    const client = fixture.newClient();
    capacity.gateUpdates(client);
    const logger = new MemoryLogger();
    const manager = new LockManager({ tableName: fixture.tableName, client, logger, ...options });
    return { manager, logger, capacity };
  });
});

describe('Many locks held [memory store]', () => {
  manyHeldSuite(MEMORY, (workers, serviceMs, options) => {
    const capacity = new ServerCapacity(workers, serviceMs);
    const store = new MemoryLockStore();
    const mutex = memoryStoresOf(store).mutex;
    const heartbeat = mutex.heartbeat.bind(mutex);
    mutex.heartbeat = (request) => capacity.through(() => heartbeat(request));
    const logger = new MemoryLogger();
    const manager = new LockManager({ store, logger, ...options });
    return { manager, logger, capacity };
  });
});

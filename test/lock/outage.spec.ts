import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import { LockBusyError, type LockEvent, LockLostError, LockTableError, LockUnavailableError, LockManager, Lock } from '../../lib';
import { type HungServer, startHungServer, startStallingProxy, type StallingProxy } from '../support/hung-server';
import { LockFixture, MemoryLogger } from '../support/lock-fixture';
import { findFreePort } from '../../tools/free-port.mjs';
import { rejectionOf } from '../support/rejection';
import {
  createLockTable,
  createTestClient,
  deleteTable,
  deleteTableAndWait,
  describeEachServer,
  testClientConfig,
  uniqueTableName,
} from '../support/servers';

let keySeq = 0;
const newKey = (name: string) => `${name}-${++keySeq}`;

/** Time limit of each request in these tests: small, so outages end fast. */
const LIMIT_MS = 300;

/** How long `promise` takes to settle, and how. */
async function timed<T>(promise: Promise<T>): Promise<{ ms: number; value?: T; error?: unknown }> {
  const started = performance.now();
  try {
    const value = await promise;
    return { ms: performance.now() - started, value };
  } catch (error) {
    return { ms: performance.now() - started, error };
  }
}

describeEachServer('An outage is never contention', (server) => {
  const fixture = new LockFixture(server);
  let hung: HungServer;
  const proxies: StallingProxy[] = [];
  const proxy = async (mode?: StallingProxy['mode']) => {
    const started = await startStallingProxy(server.endpoint, mode);
    proxies.push(started);
    return started;
  };
  beforeAll(async () => {
    await fixture.setup();
    hung = await startHungServer();
  });
  afterAll(async () => {
    await fixture.close();
    await Promise.all([hung.close(), ...proxies.map((p) => p.close())]);
  });

  describe('DynamoDB hung (connections accepted, never answered)', () => {
    const onHung = (options: ConstructorParameters<typeof LockManager>[0] = {}) =>
      fixture.manager({ requestTimeout: LIMIT_MS, ...options }, { endpoint: hung.endpoint });

    it('tryAcquire() rejects with LockUnavailableError within about one request limit, not null and not a lock', async () => {
      const manager = onHung();
      const { ms, value, error } = await timed(manager.tryAcquire(newKey('try')));
      expect(value).toBeUndefined();
      expect(error).toBeInstanceOf(LockUnavailableError);
      expect(error).not.toBeInstanceOf(LockBusyError);
      const unavailable = error as LockUnavailableError;
      expect(unavailable.cause).toMatchObject({ name: 'TimeoutError' });
      expect(String((unavailable.cause as Error).message)).toContain(`${LIMIT_MS} ms`);
      expect(unavailable.requestTimeoutMs).toBe(LIMIT_MS);
      expect(unavailable.message).toContain('not a busy lock');
      expect(ms).toBeGreaterThanOrEqual(LIMIT_MS - 5);
      expect(ms).toBeLessThan(LIMIT_MS + 2_000);
      expect(hung.connections).toBeGreaterThan(0);
    });

    it('callers of this process queued behind one that only got time-outs are in the same outage: unavailable, never busy', async () => {
      const manager = onHung();
      const key = newKey('behind');
      const head = manager.acquire(key, { wait: '3s' });
      // Let the head's first request time out, so it knows of an error and of no holder.
      await sleep(LIMIT_MS + 150);
      const behind = await rejectionOf(manager.acquire(key, { wait: 200 }));
      expect(behind).toBeInstanceOf(LockUnavailableError);
      expect((behind as LockUnavailableError).cause).toMatchObject({ name: 'TimeoutError' });
      await expect(manager.tryAcquire(key)).rejects.toBeInstanceOf(LockUnavailableError);
      expect(await rejectionOf(head)).toBeInstanceOf(LockUnavailableError);
    });

    it('acquire({ wait }) ends by wait + one request limit with LockUnavailableError carrying the DynamoDB error, never LockBusyError', async () => {
      const manager = onHung();
      const events: LockEvent[] = [];
      manager.subscribe((event) => events.push(event));
      const { ms, error } = await timed(manager.acquire(newKey('wait'), { wait: '1s' }));
      expect(error).toBeInstanceOf(LockUnavailableError);
      expect((error as LockUnavailableError).cause).toMatchObject({ name: 'TimeoutError' });
      expect((error as LockUnavailableError).waitedMs).toBeGreaterThanOrEqual(990);
      expect(ms).toBeGreaterThanOrEqual(990);
      expect(ms).toBeLessThan(1_000 + LIMIT_MS + 2_000);
      // Retried within the wait, and no `busy` event: nobody was seen holding the key.
      expect(events.filter((e) => e.type === 'retry').length).toBeGreaterThanOrEqual(2);
      expect(events.some((e) => e.type === 'busy')).toBe(false);
    });

    it('a heartbeat that hangs mid-hold ends in time: the lease runs out with reason "expired" and the time-out as cause', async () => {
      const through = await proxy();
      const manager = fixture.manager(
        { leaseDuration: 1_500, heartbeatInterval: 300, requestTimeout: 200 },
        { endpoint: through.endpoint },
      );
      const events: LockEvent[] = [];
      manager.subscribe((event) => events.push(event));
      const lock = await manager.acquire(newKey('beat'));
      through.mode = { kind: 'hang' };
      const started = performance.now();
      const lost = await new Promise<unknown>((resolve) => lock.signal.addEventListener('abort', () => resolve(lock.signal.reason)));
      const ms = performance.now() - started;
      expect(lost).toBeInstanceOf(LockLostError);
      expect((lost as LockLostError).reason).toBe('expired');
      expect((lost as LockLostError).cause).toMatchObject({ name: 'TimeoutError' });
      expect(ms).toBeLessThan(1_500);
      // Each hung heartbeat was given up and retried within the lease.
      expect(events.filter((e) => e.type === 'retry' && e.operation === 'heartbeat').length).toBeGreaterThanOrEqual(2);
      expect(await timed(lock.release())).toMatchObject({ value: false });
    });
  });

  describe('connections reset (Node names it TimeoutError; under Jest the SDK keeps only its text)', () => {
    it("acquire({ wait }) and tryAcquire() reject with LockUnavailableError, not the SDK's plain Error", async () => {
      const resetting = await proxy({ kind: 'reset' });
      const manager = fixture.manager({ requestTimeout: '2s' }, { endpoint: resetting.endpoint, maxAttempts: 1 });
      const waited = await rejectionOf(manager.acquire(newKey('reset'), { wait: 300 }));
      expect(waited).toBeInstanceOf(LockUnavailableError);
      expect(String((waited as LockUnavailableError).cause)).toMatch(/socket hang up|ECONNRESET/);
      await expect(manager.tryAcquire(newKey('reset-try'))).rejects.toBeInstanceOf(LockUnavailableError);
    });
  });

  describe('a slow DynamoDB', () => {
    it('an answer slower than wait on a free key gives the lock, not LockBusyError', async () => {
      const slow = await proxy({ kind: 'delay', ms: 700 });
      const manager = fixture.manager({ requestTimeout: '2s' }, { endpoint: slow.endpoint });
      const key = newKey('slow-free');
      const { ms, value, error } = await timed(manager.acquire(key, { wait: 200 }));
      expect(error).toBeUndefined();
      expect(value).toBeInstanceOf(Lock);
      expect(ms).toBeGreaterThanOrEqual(650);
      expect(ms).toBeLessThan(200 + 2_000 + 1_000);
      const lock = value as Lock;
      expect(await fixture.manager().inspect(key)).toMatchObject({ fencingToken: lock.fencingToken });
      slow.mode = { kind: 'pass' };
      expect(await lock.release()).toBe(true);
    });

    it('an answer slower than wait and than the request limit is LockUnavailableError, not LockBusyError', async () => {
      const slow = await proxy({ kind: 'delay', ms: 1_500 });
      const manager = fixture.manager({ requestTimeout: LIMIT_MS }, { endpoint: slow.endpoint });
      const { ms, error } = await timed(manager.acquire(newKey('slower'), { wait: 200 }));
      expect(error).toBeInstanceOf(LockUnavailableError);
      expect(ms).toBeLessThan(200 + LIMIT_MS + 2_000);
    });
  });

  describe('contention is still contention', () => {
    it('a key another owner holds is null for tryAcquire() and LockBusyError naming the holder for acquire({ wait })', async () => {
      const key = newKey('held');
      const holder = fixture.manager({ ownerName: 'the-holder' });
      const lock = await holder.acquire(key);
      const other = fixture.manager({ requestTimeout: LIMIT_MS });
      expect(await other.tryAcquire(key)).toBeNull();
      const error = await rejectionOf(other.acquire(key, { wait: 300 }));
      expect(error).toBeInstanceOf(LockBusyError);
      expect((error as LockBusyError).holder?.owner).toBe('the-holder');
      await lock.release();
    });

    it('a caller of this process ahead in the queue makes a late waiter busy, not unavailable', async () => {
      const key = newKey('local');
      const holder = fixture.manager({ ownerName: 'remote-holder' });
      const lock = await holder.acquire(key);
      const manager = fixture.manager({ requestTimeout: LIMIT_MS });
      const first = manager.acquire(key, { wait: 600 });
      const second = await rejectionOf(manager.acquire(key, { wait: 300 }));
      expect(second).toBeInstanceOf(LockBusyError);
      expect(await rejectionOf(first)).toBeInstanceOf(LockBusyError);
      await lock.release();
    });
  });

  describe('the table deleted under a running app', () => {
    it('acquire rejects with LockTableError, problem "missing"', async () => {
      const client = createTestClient(server);
      const tableName = uniqueTableName('gone');
      try {
        await createLockTable(client, tableName);
        const manager = new LockManager({ tableName, clientConfig: testClientConfig(server), logger: new MemoryLogger() });
        try {
          const lock = await manager.acquire(newKey('before'));
          await lock.release();
          await deleteTableAndWait(client, tableName);
          const error = await rejectionOf(manager.acquire(newKey('after'), { wait: 500 }));
          expect(error).toBeInstanceOf(LockTableError);
          expect(error).toMatchObject({ problem: 'missing', tableName });
        } finally {
          await manager.close();
        }
      } finally {
        client.destroy();
      }
    });

    it('says where it looked (region, endpoint) and, with createTable off, how a LockManager creates it', async () => {
      const client = createTestClient(server);
      const tableName = uniqueTableName('gone');
      const { region } = testClientConfig(server);
      const manager = new LockManager({
        tableName,
        clientConfig: testClientConfig(server),
        verifyTable: false,
        logger: new MemoryLogger(),
      });
      try {
        const error = (await rejectionOf(manager.acquire(newKey('never'), { wait: 300 }))) as LockTableError;
        expect(error).toBeInstanceOf(LockTableError);
        expect(error.location).toEqual({ region, endpoint: server.endpoint });
        expect(error.message).toContain(
          `DynamoDB table "${tableName}" for locks does not exist in region ${String(region)} at "${server.endpoint}" (from the clientConfig.endpoint option).`,
        );
        expect(error.message).toContain('Create it with `createTable: true` in the LockManager options');
        expect(error.message).not.toContain('DynamoLockModule');
      } finally {
        await manager.close();
        client.destroy();
      }
    });

    it('with createTable on, says that init() (or a restart) creates it, not to turn the option on; and init() does', async () => {
      const client = createTestClient(server);
      const tableName = uniqueTableName('gone');
      const manager = new LockManager({ tableName, clientConfig: testClientConfig(server), createTable: true, logger: new MemoryLogger() });
      try {
        await manager.init();
        await deleteTableAndWait(client, tableName);
        const error = (await rejectionOf(manager.acquire(newKey('after'), { wait: 300 }))) as LockTableError;
        expect(error).toBeInstanceOf(LockTableError);
        expect(error).toMatchObject({ problem: 'missing', tableName });
        expect(error.message).toMatch(/createTable is on, but it creates a missing table only at start-up/);
        expect(error.message).toMatch(/Call init\(\) again \(or restart\) to create it\./);
        expect(error.message).not.toMatch(/Create it with `createTable: true`/);
        await manager.init();
        const lock = await manager.acquire(newKey('recreated'));
        expect(await lock.release()).toBe(true);
      } finally {
        await manager.close();
        await deleteTable(client, tableName);
        client.destroy();
      }
    });
  });

  afterEach(() => {
    for (const p of proxies) p.mode = { kind: 'pass' };
  });
});

describe("DynamoDB not listening (a closed loopback port), in a Jest test as in a user's own suite", () => {
  let endpoint: string;
  const managers: LockManager[] = [];
  beforeAll(async () => {
    endpoint = `http://127.0.0.1:${await findFreePort()}`; // nothing listens on it
  });
  afterAll(() => Promise.all(managers.map((m) => m.close())));
  const manager = () => {
    const m = new LockManager({
      tableName: 'locks-refused',
      requestTimeout: '2s',
      verifyTable: false,
      clientConfig: { endpoint, region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } },
      logger: new MemoryLogger(),
    });
    managers.push(m);
    return m;
  };

  it('acquire({ wait }) rejects with LockUnavailableError whose cause tells the refused connection', async () => {
    const { ms, error } = await timed(manager().acquire(newKey('refused'), { wait: 300 }));
    expect(error).toBeInstanceOf(LockUnavailableError);
    expect(String((error as LockUnavailableError).cause)).toContain('ECONNREFUSED');
    expect((error as LockUnavailableError).message).toContain('ECONNREFUSED');
    expect(ms).toBeLessThan(300 + 2_000 + 1_000);
  });

  it('tryAcquire() rejects with LockUnavailableError, and so does a semaphore', async () => {
    const locks = manager();
    await expect(locks.tryAcquire(newKey('refused-try'))).rejects.toBeInstanceOf(LockUnavailableError);
    await expect(locks.acquire(newKey('refused-sem'), { limit: 2, wait: 200 })).rejects.toBeInstanceOf(LockUnavailableError);
  });
});

/**
 * Locks in the app's own table (single-table design: options `partitionKey` and `sortKey`), on
 * DynamoDB Local and dynalite, in a `PK`/`SK` table (lock items at `SK = LOCK`) and in a `pk`-only
 * table (lock keys under `LOCK#`), each shared with the app's items: some under the locks' own
 * partition keys, some with attributes named as a lock's (`token`, `head`, `holderCount`...). Mutex
 * calls, waiting and fencing order, semaphores, leadership and `withLock` work there; `list()`
 * shows lock items only; the app's items are byte for byte as they were put; a lock whose key is
 * an app item's fails without writing to it. The memory store takes the same options.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import { LockConfigurationError, LockManager, MemoryLockStore, type DynamoLockOptions } from '../../lib';
import { createDataTable, put, readData } from '../fencing/data-table';
import { MemoryLogger } from '../support/lock-fixture';
import { createTestClient, deleteTable, describeEachServer, testClientConfig } from '../support/servers';
import { SHARED_LAYOUTS, SharedTable } from '../support/shared-table';

const LEASE_MS = 3_000;

/** The lock keys the suite uses, so the app's items can be put around them first. */
const KEYS = { mutex: 'deploy', wait: 'migrate', sem: 'exports', leader: 'scheduler', with: 'report', unused: 'never-locked' } as const;

describeEachServer('locks in a table shared with the app', (server) => {
  for (const layout of SHARED_LAYOUTS) {
    describe(layout.label, () => {
      const table = new SharedTable(server, layout);
      const managers: LockManager[] = [];
      /** A manager on the shared table, with its own client. */
      const manager = (options: DynamoLockOptions = {}) => {
        const created = new LockManager({
          tableName: table.tableName,
          partitionKey: layout.keys.partitionKey,
          sortKey: layout.keys.sortKey,
          keyPrefix: layout.keyPrefix,
          clientConfig: testClientConfig(server),
          leaseDuration: LEASE_MS,
          logger: new MemoryLogger(),
          ...options,
        });
        managers.push(created);
        return created;
      };

      beforeAll(async () => {
        await table.create();
        await table.putAppItems(Object.values(KEYS), KEYS.unused);
      });
      afterAll(async () => {
        await Promise.all(managers.map((m) => m.close()));
        await table.close();
      });

      it('passes the start-up check of the configured keys', async () => {
        await expect(manager().init()).resolves.toBeUndefined();
      });

      it('acquires, refuses another owner, extends, inspects and releases a lock whose item sits at the configured keys', async () => {
        const [a, b] = [manager({ ownerName: 'a' }), manager({ ownerName: 'b' })];
        const lock = await a.acquire(KEYS.mutex, { data: { step: 1 } });
        expect(await b.tryAcquire(KEYS.mutex)).toBeNull();
        const item = await table.readLockItem(layout.keyPrefix + KEYS.mutex);
        expect(item).toMatchObject({ owner: { S: 'a' }, data: { S: '{"step":1}' } });
        expect(item?.[layout.keys.partitionKey]).toEqual({ S: layout.keyPrefix + KEYS.mutex });
        if (layout.keys.sortKey) expect(item?.[layout.keys.sortKey.name]).toEqual({ S: layout.keys.sortKey.value });
        // No item under the library's own partition key name.
        expect(item?.key).toBeUndefined();
        expect(item?.rvn?.S).toEqual(expect.any(String));
        await lock.extend(LEASE_MS * 2);
        expect(await b.inspect(KEYS.mutex)).toMatchObject({ key: KEYS.mutex, owner: 'a', leaseDuration: LEASE_MS * 2, data: { step: 1 } });
        expect(await lock.release()).toBe(true);
        expect(await b.inspect(KEYS.mutex)).toBeNull();
        const again = await b.tryAcquire(KEYS.mutex);
        expect(again?.fencingToken).toBeGreaterThan(lock.fencingToken);
        await again?.release();
      });

      it('serves a waiter of another manager when the holder releases, with a larger fencing token each time', async () => {
        const [a, b, c] = [manager({ ownerName: 'a' }), manager({ ownerName: 'b' }), manager({ ownerName: 'c' })];
        const first = await a.acquire(KEYS.wait);
        const tokens = [first.fencingToken];
        const waiting = [b, c].map((m) =>
          m.withLock(KEYS.wait, (lock) => {
            tokens.push(lock.fencingToken);
            return sleep(20);
          }),
        );
        await sleep(300);
        expect(await first.release()).toBe(true);
        await Promise.all(waiting);
        expect(tokens).toHaveLength(3);
        expect([...tokens].sort((x, y) => x - y)).toEqual(tokens);
        expect(new Set(tokens).size).toBe(3);
      });

      it('keeps a semaphore there: at most `limit` holders across managers, inspected and listed with its holders', async () => {
        const [a, b, c] = [manager({ ownerName: 'a' }), manager({ ownerName: 'b' }), manager({ ownerName: 'c' })];
        const one = await a.acquire(KEYS.sem, { limit: 2 });
        const two = await b.acquire(KEYS.sem, { limit: 2 });
        expect(await c.tryAcquire(KEYS.sem, { limit: 2 })).toBeNull();
        const info = await c.inspect(KEYS.sem);
        expect(info).toMatchObject({ key: KEYS.sem, limit: 2 });
        expect(info?.holders?.map((h) => h.owner).sort()).toEqual(['a', 'b']);
        const listed = await c.list();
        expect(listed.find((l) => l.key === KEYS.sem)).toMatchObject({ limit: 2 });
        await one.release();
        const three = await c.tryAcquire(KEYS.sem, { limit: 2 });
        expect(three?.fencingToken).toBeGreaterThan(two.fencingToken);
        await Promise.all([two.release(), three?.release()]);
      });

      it('elects one leader there, and the follower takes over after the leader resigns', async () => {
        const [a, b] = [manager({ ownerName: 'a' }), manager({ ownerName: 'b' })];
        const leaderA = a.lead(KEYS.leader, { watchInterval: 200 });
        const lockA = await leaderA.whenLeader();
        const leaderB = b.lead(KEYS.leader, { watchInterval: 200 });
        await sleep(400);
        expect([leaderA.isLeader, leaderB.isLeader]).toEqual([true, false]);
        expect(await b.inspect(KEYS.leader)).toMatchObject({ owner: 'a' });
        await leaderA.resign();
        const lockB = await leaderB.whenLeader();
        expect(lockB.fencingToken).toBeGreaterThan(lockA.fencingToken);
        await leaderB.resign();
      });

      it('lists only lock items: none of the app items, whatever attributes they have', async () => {
        const [a, b] = [manager({ ownerName: 'a' }), manager({ ownerName: 'b' })];
        const mutex = await a.withLock(KEYS.with, async () => {
          const sem = await b.acquire(KEYS.sem, { limit: 2 });
          const listed = await b.list();
          await sem.release();
          return listed;
        });
        expect(mutex.map((info) => info.key).sort()).toEqual([KEYS.sem, KEYS.with]);
        expect(mutex.find((info) => info.key === KEYS.with)).toMatchObject({ owner: 'a' });
        expect(await b.list()).toEqual([]);
      });

      it('refuses a lock whose key is an app item, without writing to it', async () => {
        const m = manager();
        const appItem = table.item(`${layout.keyPrefix}USER#7`, layout.keys.sortKey?.value ?? '', { name: { S: 'Ada' } });
        await table.putAppItem(appItem);
        const tried = await m.tryAcquire('USER#7').catch((error: unknown) => error);
        expect(tried).toBeInstanceOf(LockConfigurationError);
        expect((tried as Error).message).toContain('that is not a lock item: one of your items has the key this lock needs');
        const waited = await m.acquire('USER#7', { wait: 1_000 }).catch((error: unknown) => error);
        expect(waited).toBeInstanceOf(LockConfigurationError);
        const sem = await m.tryAcquire('USER#7', { limit: 2 }).catch((error: unknown) => error);
        // The semaphore's item is another one (`USER#7` + its suffix): nothing of the app's is there.
        expect(sem).not.toBeInstanceOf(Error);
        await (sem as { release(): Promise<boolean> }).release();
        await expect(m.inspect('USER#7')).rejects.toBeInstanceOf(LockConfigurationError);
      });

      if (server.name !== 'dynalite') {
        it("fences a transaction with a ConditionCheck of the lock item at the configured keys (DynamoDB's transactions)", async () => {
          const client = createTestClient(server);
          const dataTable = await createDataTable(client, 'shared-data');
          try {
            const [a, b] = [manager({ ownerName: 'a' }), manager({ ownerName: 'b' })];
            const lock = await a.acquire(KEYS.mutex);
            await lock.transact([put(dataTable, 'invoice-1', 'paid')]);
            expect(await readData(client, dataTable, 'invoice-1')).toMatchObject({ value: { S: 'paid' } });
            await lock.release();
            // A released lock's check fails: the transaction writes nothing.
            await expect(lock.transact([put(dataTable, 'invoice-1', 'stale')])).rejects.toThrow();
            const next = await b.acquire(KEYS.mutex);
            await next.transact([put(dataTable, 'invoice-1', 'refunded')]);
            expect(await readData(client, dataTable, 'invoice-1')).toMatchObject({ value: { S: 'refunded' } });
            await next.release();
          } finally {
            await deleteTable(client, dataTable);
            client.destroy();
          }
        });
      }

      it('leaves every app item as it was put, and writes lock items only at the configured keys', async () => {
        await Promise.all(managers.splice(0).map((m) => m.close()));
        await table.expectAppItemsUntouched();
        const locks = await table.lockItems();
        expect(locks.length).toBeGreaterThan(0);
        for (const item of locks) {
          const stored = item[layout.keys.partitionKey]?.S ?? '';
          expect(stored.startsWith(layout.keyPrefix)).toBe(true);
          if (layout.keys.sortKey) expect(item[layout.keys.sortKey.name]).toEqual({ S: layout.keys.sortKey.value });
          expect(Object.keys(item)).not.toContain('key');
          expect(item.fence).toBeDefined();
        }
      });
    });
  }
});

describe('locks in a shared table, memory store', () => {
  it('takes partitionKey and sortKey (a memory store has no table: the options are checked and locks work as usual)', async () => {
    const store = new MemoryLockStore();
    const options = { store, verifyTable: false, partitionKey: 'PK', sortKey: { name: 'SK', value: 'LOCK' }, keyPrefix: 'LOCK#' };
    const [a, b] = [new LockManager({ ...options, ownerName: 'a' }), new LockManager({ ...options, ownerName: 'b' })];
    try {
      const lock = await a.acquire('deploy');
      expect(await b.tryAcquire('deploy')).toBeNull();
      expect((await b.list()).map((info) => info.key)).toEqual(['deploy']);
      const sem = await b.acquire('exports', { limit: 2 });
      expect((await a.inspect('exports'))?.holders).toHaveLength(1);
      await Promise.all([lock.release(), sem.release()]);
      expect(() => new LockManager({ store, partitionKey: 'token' })).toThrow(LockConfigurationError);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});

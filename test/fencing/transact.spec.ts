/**
 * `lock.transact(items)`: the caller's writes and a check of the lock item in one
 * TransactWriteItems, on DynamoDB Local (the reference for transactions); dynalite, which has
 * none, answers with a clear error; the memory store checks the lock and hands the items to its hook.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  LockConfigurationError,
  LockLostError,
  LockManager,
  LockTransactionError,
  LockValidationError,
  MAX_TRANSACT_ITEMS,
  MemoryLockStore,
  type MemoryWrite,
} from '../../lib';
import { DynamoMutexStore } from '../../lib/store/mutex/mutex.dynamo-store';
import { LockFixture, MemoryLogger } from '../support/lock-fixture';
import { countRequests } from '../support/request-counter';
import { rejectionOf } from '../support/rejection';
import { describeEachServer } from '../support/servers';
import { createDataTable, newKey, put, putData, readData } from './data-table';

describeEachServer('lock.transact()', (server) => {
  const fixture = new LockFixture(server);
  let data: string;
  beforeAll(async () => {
    await fixture.setup();
    data = await createDataTable(fixture.client);
  });
  afterAll(() => fixture.close());

  if (server.name === 'dynalite') {
    it('fails at once with a clear error naming the limit and pointing to fencedWrite(); nothing is written', async () => {
      const lock = await fixture.manager().acquire(newKey('no-tx'));
      const id = newKey('item');
      const error = await rejectionOf(lock.transact([put(data, id, 'a'), put(data, newKey('other'), 'b')]));
      expect(error).toBeInstanceOf(LockConfigurationError);
      expect(error.message).toMatch(/UnknownOperationException/);
      expect(error.message).toMatch(/limit is 0 items per transaction where DynamoDB's is 100/);
      expect(error.message).toMatch(/lock\.fencedWrite\(item\)/);
      expect(await readData(fixture.client, data, id)).toBeUndefined();
      // A configuration error says nothing about the lock: still held.
      expect(lock.isHeld).toBe(true);
      await lock.release();
    });
    return;
  }

  it('writes every item while the lock is held, and reports the capacity when asked', async () => {
    const lock = await fixture.manager().acquire(newKey('held'));
    const [a, b] = [newKey('a'), newKey('b')];
    const result = await lock.transact([put(data, a, 'one'), put(data, b, 'two')], { returnConsumedCapacity: 'TOTAL' });
    expect((await readData(fixture.client, data, a))?.value).toEqual({ S: 'one' });
    expect((await readData(fixture.client, data, b))?.value).toEqual({ S: 'two' });
    expect(result.consumedCapacity?.length).toBeGreaterThan(0);
    expect(lock.isHeld).toBe(true);
    await lock.release();
  });

  it('a holder taken over gets LockLostError taken, writes nothing, and its signal aborts with the same error', async () => {
    const [first, second] = [fixture.manager({ ownerName: 'A' }), fixture.manager({ ownerName: 'B' })];
    const key = newKey('taken');
    const id = newKey('item');
    await putData(fixture.client, data, { id: { S: id }, value: { S: 'before' } });
    const a = await first.acquire(key, { leaseDuration: '20s' });
    // What a takeover after a pause of A looks like, without waiting a lease: B frees A's lease by its id and takes the lock.
    expect(await second.releaseLease(key, a.leaseId)).toBe(true);
    const b = await second.acquire(key);
    const error = await rejectionOf(a.transact([put(data, id, 'stale')]));
    expect(error).toBeInstanceOf(LockLostError);
    expect((error as LockLostError).reason).toBe('taken');
    expect(error.message).toMatch(/"B"/);
    expect((await readData(fixture.client, data, id))?.value).toEqual({ S: 'before' });
    expect(a.signal.aborted).toBe(true);
    expect(a.signal.reason).toBe(error);
    expect(a.isHeld).toBe(false);
    await b.transact([put(data, id, 'fresh')]);
    expect((await readData(fixture.client, data, id))?.value).toEqual({ S: 'fresh' });
    await b.release();
  });

  it('a holder whose lock was released by someone else gets LockLostError gone', async () => {
    const [first, second] = [fixture.manager(), fixture.manager()];
    const key = newKey('gone');
    const a = await first.acquire(key, { leaseDuration: '20s' });
    await second.releaseLease(key, a.leaseId);
    const id = newKey('item');
    const error = await rejectionOf(a.transact([put(data, id, 'stale')]));
    expect((error as LockLostError).reason).toBe('gone');
    expect(await readData(fixture.client, data, id)).toBeUndefined();
  });

  it('a lease that ran out (B took over after it) rejects with its signal reason, expired, before any request', async () => {
    const [first, second] = [fixture.manager(), fixture.manager()];
    const key = newKey('expired');
    const a = await first.acquire(key, { leaseDuration: 300, heartbeat: false });
    let b = await second.tryAcquire(key, { leaseDuration: 300 });
    const until = performance.now() + 3_000;
    while (!b && performance.now() < until) {
      await sleep(50);
      b = await second.tryAcquire(key, { leaseDuration: 300 });
    }
    expect(b).not.toBeNull();
    const requests = countRequests(first.client);
    const id = newKey('item');
    const error = await rejectionOf(a.transact([put(data, id, 'stale')]));
    expect((error as LockLostError).reason).toBe('expired');
    expect(requests.total()).toBe(0);
    expect(await readData(fixture.client, data, id)).toBeUndefined();
    await b?.release();
  });

  it("the items' own failed condition is a LockTransactionError with the reasons, not a lost lock; nothing is written", async () => {
    const lock = await fixture.manager().acquire(newKey('own-condition'));
    const [id, other] = [newKey('exists'), newKey('other')];
    await putData(fixture.client, data, { id: { S: id }, value: { S: 'kept' } });
    const error = await rejectionOf(
      lock.transact([
        put(data, other, 'never'),
        {
          Put: {
            TableName: data,
            Item: { id: { S: id }, value: { S: 'over' } },
            ConditionExpression: 'attribute_not_exists(id)',
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          },
        },
      ]),
    );
    expect(error).toBeInstanceOf(LockTransactionError);
    const { reasons } = error as LockTransactionError;
    expect(reasons).toHaveLength(2);
    expect(reasons[0]).toMatchObject({ index: 0, code: 'None' });
    expect(reasons[1]).toMatchObject({ index: 1, code: 'ConditionalCheckFailed', item: { id: { S: id }, value: { S: 'kept' } } });
    expect(error.message).toMatch(/item 1: ConditionalCheckFailed/);
    expect(await readData(fixture.client, data, other)).toBeUndefined();
    expect(lock.isHeld).toBe(true);
    expect(lock.signal.aborted).toBe(false);
    await lock.release();
  });

  it('takes items in the document form (plain values), and shows cancelled items in it', async () => {
    const lock = await fixture.manager().acquire(newKey('document'));
    const id = newKey('doc');
    await lock.transact(
      [
        { Put: { TableName: data, Item: { id, amount: 42, tags: ['a'], paid: false } } },
        {
          Update: {
            TableName: data,
            Key: { id: newKey('upd') },
            UpdateExpression: 'SET amount = :a',
            ExpressionAttributeValues: { ':a': 7 },
          },
        },
      ],
      { form: 'document' },
    );
    expect(await readData(fixture.client, data, id)).toEqual({
      id: { S: id },
      amount: { N: '42' },
      tags: { L: [{ S: 'a' }] },
      paid: { BOOL: false },
    });
    const error = await rejectionOf(
      lock.transact(
        [
          {
            ConditionCheck: {
              TableName: data,
              Key: { id },
              ConditionExpression: 'paid = :t',
              ExpressionAttributeValues: { ':t': true },
              ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
            },
          },
        ],
        { form: 'document' },
      ),
    );
    expect((error as LockTransactionError).reasons[0]?.item).toEqual({ id, amount: 42, tags: ['a'], paid: false });
    await lock.release();
  });

  it(`takes up to ${MAX_TRANSACT_ITEMS} items, and refuses 100 before any request`, async () => {
    const manager = fixture.manager();
    const lock = await manager.acquire(newKey('limits'));
    const ids = Array.from({ length: MAX_TRANSACT_ITEMS }, (_, i) => newKey(`many${i}`));
    await lock.transact(ids.map((id) => put(data, id, 'x')));
    expect(await readData(fixture.client, data, ids[98] as string)).toBeDefined();
    const requests = countRequests(manager.client);
    const error = await rejectionOf(lock.transact([...ids, 'one-more'].map((id) => put(data, id, 'y'))));
    expect(error).toBeInstanceOf(LockValidationError);
    expect(error.message).toMatch(/at most 99 items.*got 100/);
    expect(requests.total()).toBe(0);
    expect((await readData(fixture.client, data, ids[0] as string))?.value).toEqual({ S: 'x' });
    await lock.release();
  });

  it('works from a nested handle and from current(), under the outer lock', async () => {
    const manager = fixture.manager();
    const key = newKey('nested');
    const id = newKey('item');
    await manager.withLock(key, async (outer) => {
      await manager.withLock(key, async (inner) => {
        expect(inner.isReentrant).toBe(true);
        await inner.transact([put(data, id, 'inner')]);
        await manager.current(key)!.transact([put(data, id, 'current')]);
      });
      expect(outer.isHeld).toBe(true);
    });
    expect((await readData(fixture.client, data, id))?.value).toEqual({ S: 'current' });
  });

  it('a waiter promoted by a release writes by its ticket before its first heartbeat', async () => {
    const [first, second] = [fixture.manager(), fixture.manager()];
    const key = newKey('promoted');
    const a = await first.acquire(key);
    const waiting = second.acquire(key, { wait: '10s', leaseDuration: '20s' });
    await sleep(300);
    await a.release();
    const b = await waiting;
    // Promoted by A's release: the item serves B's ticket, and B's token is not written yet.
    const record = await new DynamoMutexStore(fixture.client, { tableName: fixture.tableName, ttlDays: 0 }).read(key);
    expect(record?.token).toBeUndefined();
    const id = newKey('item');
    await b.transact([put(data, id, 'promoted')]);
    expect((await readData(fixture.client, data, id))?.value).toEqual({ S: 'promoted' });
    await b.release();
  });

  it('rejects on a semaphore lock with a clear error', async () => {
    const lock = await fixture.manager().acquire(newKey('sem'), { limit: 2 });
    const error = await rejectionOf(lock.transact([put(data, newKey('x'), 'x')]));
    expect(error).toBeInstanceOf(LockValidationError);
    expect(error.message).toMatch(/semaphore/);
    await lock.release();
  });
});

describe('lock.transact() [memory]', () => {
  it('checks the lock as DynamoDB would and hands the items to onWrite; a lost lock writes nothing', async () => {
    const writes: MemoryWrite[] = [];
    const store = new MemoryLockStore({ onWrite: (write) => void writes.push(write) });
    const [first, second] = [
      new LockManager({ store, ownerName: 'A', logger: new MemoryLogger() }),
      new LockManager({ store, ownerName: 'B', logger: new MemoryLogger() }),
    ];
    try {
      const key = 'memory-taken';
      const a = await first.acquire(key, { leaseDuration: '20s' });
      await a.transact([put('invoices', '1', 'paid')]);
      expect(writes).toEqual([{ kind: 'transact', key, fencingToken: a.fencingToken, items: [put('invoices', '1', 'paid')] }]);
      await second.releaseLease(key, a.leaseId);
      const b = await second.acquire(key);
      const error = await rejectionOf(a.transact([put('invoices', '1', 'stale')]));
      expect((error as LockLostError).reason).toBe('taken');
      expect(writes).toHaveLength(1);
      await b.transact([put('invoices', '1', 'fresh')], { form: 'attribute-value' });
      expect(writes).toHaveLength(2);
      await b.release();
    } finally {
      await Promise.all([first.close(), second.close()]);
    }
  });

  it('an onWrite that throws fails the call with its error; without onWrite the items are checked and dropped', async () => {
    const refused = new LockTransactionError('refused', 'k', []);
    const throwing = new LockManager({ store: new MemoryLockStore({ onWrite: () => Promise.reject(refused) }) });
    const plain = new LockManager({ store: new MemoryLockStore() });
    try {
      const lock = await throwing.acquire('k');
      expect(await rejectionOf(lock.transact([put('t', '1', 'x')]))).toBe(refused);
      expect(lock.isHeld).toBe(true);
      const other = await plain.acquire('k');
      await expect(other.transact([{ Put: { TableName: 't', Item: { id: '1' } } }], { form: 'document' })).resolves.toEqual({});
    } finally {
      await Promise.all([throwing.close(), plain.close()]);
    }
  });
});

/**
 * `lock.fencedWrite(item)`: one write stamped with the lock's fencing token, refused when the item
 * carries a newer one; on DynamoDB Local, dynalite (no ALL_OLD: one read tells the fence from the
 * caller's condition) and the memory store.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { FencedWriteItem } from '../../lib';
import { LockFencedError, LockLostError, LockManager, LockValidationError, MemoryLockStore, type MemoryWrite } from '../../lib';
import { LockFixture, MemoryLogger } from '../support/lock-fixture';
import { countRequests } from '../support/request-counter';
import { rejectionOf } from '../support/rejection';
import { describeEachServer } from '../support/servers';
import { createDataTable, newKey, put, putData, readData } from './data-table';

describeEachServer('lock.fencedWrite()', (server) => {
  const fixture = new LockFixture(server);
  let data: string;
  beforeAll(async () => {
    await fixture.setup();
    data = await createDataTable(fixture.client);
  });
  afterAll(() => fixture.close());

  /** A holder A and B, who took the lock over from A (A's lease freed by its id, as after a pause). */
  async function takeover(key: string) {
    const [first, second] = [fixture.manager({ ownerName: 'A' }), fixture.manager({ ownerName: 'B' })];
    const a = await first.acquire(key, { leaseDuration: '20s' });
    await second.releaseLease(key, a.leaseId);
    const b = await second.acquire(key);
    return { a, b, first };
  }

  it('stamps a Put with the fencing token, and returns what the write returned', async () => {
    const lock = await fixture.manager().acquire(newKey('put'));
    const id = newKey('item');
    await putData(fixture.client, data, { id: { S: id }, value: { S: 'old' } });
    const result = await lock.fencedWrite(put(data, id, 'new'), { returnValues: 'ALL_OLD', returnConsumedCapacity: 'TOTAL' });
    expect(result.attributes).toEqual({ id: { S: id }, value: { S: 'old' } });
    expect(await readData(fixture.client, data, id)).toEqual({
      id: { S: id },
      value: { S: 'new' },
      lockFence: { N: String(lock.fencingToken) },
    });
    await lock.release();
  });

  it("a stale holder's write after its successor's is refused with LockFencedError naming the newer token; nothing is written", async () => {
    const key = newKey('stale');
    const id = newKey('item');
    const { a, b, first } = await takeover(key);
    await b.fencedWrite(put(data, id, 'by B'));
    const requests = countRequests(first.client);
    const error = await rejectionOf(a.fencedWrite(put(data, id, 'by A')));
    expect(error).toBeInstanceOf(LockFencedError);
    const fenced = error as LockFencedError;
    expect(fenced.newerToken).toBe(b.fencingToken);
    expect(fenced.fencingToken).toBe(a.fencingToken);
    expect(fenced.tableName).toBe(data);
    expect(error.message).toContain(`fencing token ${b.fencingToken}, newer than this lock's ${a.fencingToken}`);
    expect(await readData(fixture.client, data, id)).toEqual({
      id: { S: id },
      value: { S: 'by B' },
      lockFence: { N: String(b.fencingToken) },
    });
    // Servers without ALL_OLD (dynalite) need one read to tell the fence from the item's own condition.
    expect(requests.total()).toBe(server.name === 'dynalite' ? 3 : 1);
    // The refusal is not how A learns it lost the lock (its heartbeat tells): a token from another key may be higher.
    expect(a.signal.aborted).toBe(false);
    await b.release();
  });

  it('a write refused by the token of another lock key does not mark this lock lost: it still releases', async () => {
    const id = newKey('shared-item');
    const manager = fixture.manager();
    const older = await manager.acquire(newKey('k1'));
    // A key whose item is created later has higher tokens (its counter starts from the clock).
    await new Promise((resolve) => setTimeout(resolve, 5));
    const newer = await manager.acquire(newKey('k2'));
    expect(newer.fencingToken).toBeGreaterThan(older.fencingToken);
    await newer.fencedWrite(put(data, id, 'by k2'));
    const error = await rejectionOf(older.fencedWrite(put(data, id, 'by k1')));
    expect(error).toBeInstanceOf(LockFencedError);
    expect(older.signal.aborted).toBe(false);
    expect(older.isHeld).toBe(true);
    expect(await older.release()).toBe(true);
    expect(await newer.release()).toBe(true);
  });

  it('a stale holder still writes an item its successor never wrote (the fence is per item)', async () => {
    const { a, b } = await takeover(newKey('unwritten'));
    const id = newKey('item');
    await a.fencedWrite(put(data, id, 'by A'));
    expect((await readData(fixture.client, data, id))?.value).toEqual({ S: 'by A' });
    await b.release();
  });

  it("the item's own failed condition is rethrown as the server's ConditionalCheckFailedException, not a fence", async () => {
    const lock = await fixture.manager().acquire(newKey('own'));
    const id = newKey('item');
    await putData(fixture.client, data, { id: { S: id }, value: { S: 'kept' } });
    const item: FencedWriteItem = {
      Put: { ...put(data, id, 'over').Put, ConditionExpression: 'attribute_not_exists(id)' },
    } as FencedWriteItem;
    const error = await rejectionOf(lock.fencedWrite(item));
    expect(error.name).toBe('ConditionalCheckFailedException');
    expect(error).not.toBeInstanceOf(LockFencedError);
    expect(lock.isHeld).toBe(true);
    expect((await readData(fixture.client, data, id))?.value).toEqual({ S: 'kept' });
    await lock.release();
  });

  it('Update: adds a SET clause, inserts into an existing one, keeps REMOVE, merges names, values and condition', async () => {
    const lock = await fixture.manager().acquire(newKey('update'));
    const id = newKey('item');
    await putData(fixture.client, data, { id: { S: id }, value: { S: 'v' }, gone: { S: 'x' }, n: { N: '1' } });
    const key = { id: { S: id } };
    await lock.fencedWrite({
      Update: { TableName: data, Key: key, UpdateExpression: 'REMOVE gone ADD n :one', ExpressionAttributeValues: { ':one': { N: '1' } } },
    });
    expect(await readData(fixture.client, data, id)).toEqual({
      id: { S: id },
      value: { S: 'v' },
      n: { N: '2' },
      lockFence: { N: String(lock.fencingToken) },
    });
    const result = await lock.fencedWrite(
      {
        Update: {
          TableName: data,
          Key: key,
          UpdateExpression: 'remove #n set #v = :v',
          ConditionExpression: '#v = :old OR attribute_not_exists(#v)',
          ExpressionAttributeNames: { '#v': 'value', '#n': 'n' },
          ExpressionAttributeValues: { ':v': { S: 'w' }, ':old': { S: 'v' } },
        },
      },
      { returnValues: 'ALL_NEW' },
    );
    expect(result.attributes).toEqual({ id: { S: id }, value: { S: 'w' }, lockFence: { N: String(lock.fencingToken) } });
    await lock.release();
  });

  it('Delete is fenced by the condition alone', async () => {
    const key = newKey('delete');
    const id = newKey('item');
    const { a, b } = await takeover(key);
    await b.fencedWrite(put(data, id, 'by B'));
    const error = await rejectionOf(a.fencedWrite({ Delete: { TableName: data, Key: { id: { S: id } } } }));
    expect(error).toBeInstanceOf(LockFencedError);
    expect(await readData(fixture.client, data, id)).toBeDefined();
    await b.fencedWrite({ Delete: { TableName: data, Key: { id: { S: id } } } });
    expect(await readData(fixture.client, data, id)).toBeUndefined();
    await b.release();
  });

  it('the document form, with a fence attribute of its own name', async () => {
    const lock = await fixture.manager().acquire(newKey('document'));
    const id = newKey('item');
    await lock.fencedWrite(
      { Put: { TableName: data, Item: { id, amount: 42, paid: false } } },
      { form: 'document', fenceAttribute: 'fence' },
    );
    const result = await lock.fencedWrite(
      { Update: { TableName: data, Key: { id }, UpdateExpression: 'SET paid = :t', ExpressionAttributeValues: { ':t': true } } },
      { form: 'document', fenceAttribute: 'fence', returnValues: 'ALL_NEW' },
    );
    expect(result.attributes).toEqual({ id, amount: 42, paid: true, fence: lock.fencingToken });
    await lock.release();
  });

  it('refuses, before any request, placeholders that clash with the fence and a Put that sets the fence attribute', async () => {
    const manager = fixture.manager();
    const lock = await manager.acquire(newKey('clash'));
    const requests = countRequests(manager.client);
    const base = {
      TableName: data,
      Key: { id: { S: 'x' } },
      UpdateExpression: 'SET a = :a',
      ExpressionAttributeValues: { ':a': { S: 'a' } },
    };
    const clashes: FencedWriteItem[] = [
      { Update: { ...base, ExpressionAttributeNames: { '#dynamoLockFence': 'a' } } },
      { Update: { ...base, ExpressionAttributeValues: { ':a': { S: 'a' }, ':dynamoLockFence': { N: '1' } } } },
      { Update: { ...base, ConditionExpression: 'attribute_exists(#dynamoLockFence)' } },
    ];
    for (const item of clashes) {
      const error = await rejectionOf(lock.fencedWrite(item));
      expect(error).toBeInstanceOf(LockValidationError);
      expect(error.message).toMatch(/placeholder (#|:)dynamoLockFence/);
    }
    const own = await rejectionOf(lock.fencedWrite({ Put: { TableName: data, Item: { id: { S: 'x' }, lockFence: { N: '1' } } } }));
    expect(own.message).toMatch(/attribute "lockFence", which the item already sets/);
    expect(requests.total()).toBe(0);
    await lock.release();
  });

  it('a lock known lost rejects with its signal reason before any request', async () => {
    const manager = fixture.manager();
    const lock = await manager.acquire(newKey('expired'), { leaseDuration: 200, heartbeat: false });
    await sleep(300);
    const requests = countRequests(manager.client);
    const error = await rejectionOf(lock.fencedWrite(put(data, newKey('item'), 'late')));
    expect((error as LockLostError).reason).toBe('expired');
    expect(requests.total()).toBe(0);
  });
});

describe('lock.fencedWrite() [memory]', () => {
  it('keeps the last token per item: a stale write is refused, the writes that pass go to onWrite with the token', async () => {
    const writes: MemoryWrite[] = [];
    const store = new MemoryLockStore({ onWrite: (write) => void writes.push(write), tableKeys: { invoices: ['id'] } });
    const logger = new MemoryLogger();
    const [first, second] = [new LockManager({ store, logger }), new LockManager({ store, logger })];
    try {
      const key = 'memory-fence';
      const a = await first.acquire(key, { leaseDuration: '20s' });
      await a.fencedWrite(put('invoices', '1', 'by A'));
      await second.releaseLease(key, a.leaseId);
      const b = await second.acquire(key);
      await b.fencedWrite({
        Update: {
          TableName: 'invoices',
          Key: { id: { S: '1' } },
          UpdateExpression: 'SET v = :v',
          ExpressionAttributeValues: { ':v': { S: 'B' } },
        },
      });
      const error = await rejectionOf(a.fencedWrite(put('invoices', '1', 'stale')));
      expect((error as LockFencedError).newerToken).toBe(b.fencingToken);
      expect(writes).toHaveLength(2);
      const last = writes[1] as Extract<MemoryWrite, { kind: 'fencedWrite' }>;
      expect(last.fencingToken).toBe(b.fencingToken);
      expect('Update' in last.item && last.item.Update.UpdateExpression).toBe('SET #dynamoLockFence = :dynamoLockFence, v = :v');
      const values: Record<string, AttributeValue> | undefined =
        'Update' in last.item ? last.item.Update.ExpressionAttributeValues : undefined;
      expect(values?.[':dynamoLockFence']).toEqual({ N: String(b.fencingToken) });
      // The refusal does not mark A's lock lost (a token of another key may be the newer one).
      expect(a.signal.aborted).toBe(false);
      await b.release();
    } finally {
      await Promise.all([first.close(), second.close()]);
    }
  });

  it('a Put to a table whose key it cannot tell is a clear error', async () => {
    const manager = new LockManager({ store: new MemoryLockStore() });
    try {
      const lock = await manager.acquire('k');
      const error = await rejectionOf(lock.fencedWrite(put('invoices', '1', 'x')));
      expect(error.message).toMatch(/tableKeys: \{ 'invoices'/);
    } finally {
      await manager.close();
    }
  });
});

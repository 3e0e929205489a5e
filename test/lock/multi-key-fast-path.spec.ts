import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { type AttributeValue, type DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { LockManager } from '../../lib';
import { MemoryLockStore } from '../../lib/store/memory-lock.store';
import { memoryStoresOf } from '../support/custom-stores';
import { injectFaults } from '../support/fault-injection';
import { LockFixture, MemoryLogger } from '../support/lock-fixture';
import { countRequests } from '../support/request-counter';
import { describeEachServer } from '../support/servers';

let seq = 0;
/** Fresh keys for one test, sorted as listed. */
const keysFor = (name: string, count: number) => {
  const run = `fast-${name}-${++seq}`;
  return Array.from({ length: count }, (_, i) => `${run}-${String.fromCharCode(97 + i)}`);
};

/** The raw item of a key (no key prefix), strongly consistent. */
async function rawItem(client: DynamoDBClient, tableName: string, key: string): Promise<Record<string, AttributeValue> | undefined> {
  const output = await client.send(new GetItemCommand({ TableName: tableName, Key: { key: { S: key } }, ConsistentRead: true }));
  return output.Item;
}

const num = (value: AttributeValue | undefined) => Number(value?.N);

/** The ClientRequestToken of every TransactWriteItems a client sends (each send and each SDK retry). */
function recordRequestTokens(client: DynamoDBClient): string[] {
  const tokens: string[] = [];
  client.middlewareStack.add(
    (next, context) => (args) => {
      if (context.commandName === 'TransactWriteItemsCommand')
        tokens.push((args.input as { ClientRequestToken: string }).ClientRequestToken);
      return next(args);
    },
    { step: 'finalizeRequest', name: `requestTokens-${++seq}` },
  );
  return tokens;
}

describeEachServer('Multi-key fast path', (server) => {
  const fixture = new LockFixture(server);
  beforeAll(() => fixture.setup());
  afterAll(() => fixture.close());
  const item = (key: string) => rawItem(fixture.client, fixture.tableName, key);

  if (server.name === 'dynalite') {
    it('takes the ordered path: the server has no transactions, asked once per manager', async () => {
      const manager = fixture.manager();
      const counter = countRequests(manager.client);
      const [a, b] = keysFor('dynalite', 2);
      const lock = await manager.acquire([b, a]);
      expect(counter.count('TransactWriteItems', 'UnknownOperationException')).toBe(1);
      expect(counter.count('UpdateItem', 'ok')).toBe(2);
      await lock.release();
      counter.reset();
      const again = await manager.acquire([a, b]);
      expect(counter.count('TransactWriteItems')).toBe(0);
      expect(again.fencingTokenOf(a)).toBeGreaterThan(lock.fencingTokenOf(a));
      await again.release();
    });
    return;
  }

  it('takes a free set in ONE TransactWriteItems, no UpdateItem, writing the items single free acquires write', async () => {
    const manager = fixture.manager({ ownerName: 'fast' });
    const counter = countRequests(manager.client);
    const [a, b, single] = keysFor('one-request', 3);
    const lock = await manager.acquire([b, a], { leaseDuration: '20s' });
    expect(counter.snapshot()).toEqual({ TransactWriteItemsCommand: { ok: 1 } });
    const one = await manager.acquire(single, { leaseDuration: '20s' });
    const [itemA, itemB, itemSingle] = await Promise.all([item(a), item(b), item(single)]);
    for (const [key, written] of [
      [a, itemA],
      [b, itemB],
    ] as const) {
      // Attribute for attribute, times and random values aside.
      expect(Object.keys(written!).sort()).toEqual(Object.keys(itemSingle!).sort());
      for (const name of ['owner', 'leaseMs']) expect(written![name]).toEqual(itemSingle![name]);
      expect(written!.token?.S).toEqual(expect.any(String));
      expect(written!.tailToken).toEqual(written!.token);
      expect(num(written!.fence)).toBe(lock.fencingTokenOf(key));
      expect(num(written!.head)).toBe(num(written!.fence));
      expect(num(written!.tail)).toBe(num(written!.head) + 1);
      for (const name of Object.keys(written!)) expect(Object.keys(written![name])).toEqual(Object.keys(itemSingle![name]));
    }
    await Promise.all([lock.release(), one.release()]);
  });

  it('tokens rise: a later set pins the counter each release left (one request), another manager learns it from the refusal', async () => {
    const first = fixture.manager({ ownerName: 'first' });
    const second = fixture.manager({ ownerName: 'second' });
    const [a, b] = keysFor('tokens', 2);
    const one = await first.acquire([a, b]);
    await one.release();
    const counter = countRequests(first.client);
    const two = await first.acquire([a, b]);
    expect(counter.snapshot()).toEqual({ TransactWriteItemsCommand: { ok: 1 } });
    for (const key of [a, b]) expect(two.fencingTokenOf(key)).toBe(one.fencingTokenOf(key) + 1);
    await two.release();
    // `second` never saw these items: its guess (no counter) is refused, nothing written, and it
    // sends again with the counters the refusal showed.
    const other = countRequests(second.client);
    const three = await second.acquire([b, a]);
    expect(other.count('TransactWriteItems', 'TransactionCanceledException')).toBe(1);
    expect(other.count('TransactWriteItems', 'ok')).toBe(1);
    expect(other.count('UpdateItem')).toBe(0);
    for (const key of [a, b]) expect(three.fencingTokenOf(key)).toBe(two.fencingTokenOf(key) + 1);
    await three.release();
  });

  it('a busy key cancels the transaction, nothing is written: tryAcquire → null, acquire → the ordered path', async () => {
    const holder = fixture.manager({ ownerName: 'holder' });
    const caller = fixture.manager({ ownerName: 'caller' });
    const [a, b] = keysFor('busy', 2);
    const blocking = await holder.acquire(b);
    const counter = countRequests(caller.client);
    expect(await caller.tryAcquire([a, b])).toBeNull();
    expect(counter.snapshot()).toEqual({ TransactWriteItemsCommand: { TransactionCanceledException: 1 } });
    expect(await item(a)).toBeUndefined();
    expect((await item(b))?.token).toEqual({ S: blocking.leaseId });
    // Busy: the caller goes ordered, takes a, queues on b and gets it when the holder leaves.
    counter.reset();
    const waiting = caller.acquire([a, b], { wait: '5s' });
    setTimeout(() => void blocking.release(), 300);
    const lock = await waiting;
    expect(lock.keys).toEqual([a, b]);
    expect(counter.count('UpdateItem')).toBeGreaterThan(0);
    await lock.release();
    const [itemA, itemB] = await Promise.all([item(a), item(b)]);
    for (const written of [itemA, itemB]) {
      expect(written?.token).toBeUndefined();
      expect(written?.head).toEqual(written?.tail);
    }
  });

  it('a lost answer: the same command is resent with its ClientRequestToken, and the set is granted once', async () => {
    const client = fixture.newClient();
    const manager = new LockManager({ tableName: fixture.tableName, client, logger: new MemoryLogger() });
    const tokens = recordRequestTokens(client);
    const attempts = countRequests(client, { level: 'attempt' });
    injectFaults(client).failNext('TransactWriteItems', { kind: 'lost-response' });
    const [a, b] = keysFor('lost', 2);
    try {
      const lock = await manager.acquire([a, b], { wait: '5s' });
      expect(attempts.count('TransactWriteItems')).toBeGreaterThanOrEqual(2);
      expect(tokens.length).toBeGreaterThanOrEqual(2);
      expect(new Set(tokens).size).toBe(1);
      expect(attempts.count('UpdateItem')).toBe(0);
      for (const key of [a, b]) {
        const written = await item(key);
        // One grant: one ticket taken, the counter the lock's.
        expect(num(written?.tail)).toBe(num(written?.head) + 1);
        expect(num(written?.fence)).toBe(lock.fencingTokenOf(key));
      }
      expect(await lock.release()).toBe(true);
      for (const key of [a, b]) expect((await item(key))?.token).toBeUndefined();
    } finally {
      await manager.close();
    }
  });
});

describe('Multi-key fast path on the memory store', () => {
  for (const transactions of [true, false]) {
    it(`transactions: ${transactions} → ${transactions ? 'one all-or-none write' : 'the ordered path'}; busy → null, nothing left`, async () => {
      const store = new MemoryLockStore({ transactions });
      const { mutex } = memoryStoresOf(store);
      const acquireAll = jest.spyOn(mutex, 'acquireAll');
      const acquire = jest.spyOn(mutex, 'acquire');
      const [holder, caller] = [1, 2].map(
        (i) => new LockManager({ store, verifyTable: false, ownerName: `m${i}`, logger: new MemoryLogger() }),
      );
      try {
        const [a, b] = keysFor(`memory-${transactions}`, 2);
        const lock = await caller.acquire([b, a]);
        expect(acquireAll).toHaveBeenCalledTimes(1);
        expect(acquire).toHaveBeenCalledTimes(transactions ? 0 : 2);
        const first = lock.fencingTokenOf(a);
        await lock.release();
        const again = await caller.acquire([a, b]);
        expect(again.fencingTokenOf(a)).toBe(first + 1);
        await again.release();
        const blocking = await holder.acquire(b);
        expect(await caller.tryAcquire([a, b])).toBeNull();
        const [itemA, itemB] = await Promise.all([mutex.read(`${a}`), mutex.read(`${b}`)]);
        expect(itemA?.token).toBeUndefined();
        expect(itemA?.head).toBe(itemA?.tail);
        expect(itemB?.token).toBe(blocking.leaseId);
        expect(caller.heldCount).toBe(0);
        await blocking.release();
      } finally {
        await Promise.all([holder.close(), caller.close()]);
      }
    });
  }
});

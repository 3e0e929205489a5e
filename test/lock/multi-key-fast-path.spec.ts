import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { type AttributeValue, type DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Lock, LockBusyError, type LockEvent, LockManager, LockUnavailableError } from '../../lib';
import { MemoryLockStore } from '../../lib/store/memory-lock.store';
import { type AcquireAllResult, type AcquireAllWrite, grantedRecord } from '../../lib/store/mutex/mutex-store.protocol';
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
  it('a replayed grant after another process passed the silent holder: each key is confirmed, fn never runs while the other holds', async () => {
    // The first send is applied and its answer lost; resends fail until another process has
    // passed this silent holder (lease 1 s) and holds a key; then the resend is answered as a
    // success (DynamoDB replays an applied request by its ClientRequestToken, whatever the items are now).
    const client = fixture.newClient();
    let sent = 0;
    let blocked = true;
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName !== 'TransactWriteItemsCommand') return next(args);
        if (++sent === 1) {
          await next(args);
          throw Object.assign(new Error('lost'), { name: 'TimeoutError' });
        }
        if (blocked) throw Object.assign(new Error('reset'), { code: 'ECONNRESET' });
        return next(args);
      },
      { step: 'finalizeRequest', name: `replay-${++seq}` },
    );
    const p1 = new LockManager({ tableName: fixture.tableName, client, ownerName: 'p1', logger: new MemoryLogger(), leaseDuration: '1s' });
    const p2 = fixture.manager({ ownerName: 'p2', leaseDuration: '5s' });
    const [a, b] = keysFor('replay-ddb', 2);
    let other: Lock | undefined;
    const overlaps: boolean[] = [];
    try {
      const first = p1.withLock(
        [a, b],
        async (lock) => {
          overlaps.push(other?.isHeld === true);
          return lock.fencingTokenOf(a);
        },
        { wait: '20s' },
      );
      await sleep(100);
      other = await p2.acquire(a, { wait: '10s' });
      blocked = false;
      setTimeout(() => void other?.release(), 1500);
      const token = await first;
      expect(overlaps).toEqual([false]);
      expect(token).toBeGreaterThan(other.fencingToken);
    } finally {
      await Promise.all([p1.close(), p2.close()]);
      client.destroy();
    }
  }, 30_000);

  it('a ValidationException saying the table takes no transactions (multi-Region strong consistency): the ordered path', async () => {
    const client = fixture.newClient();
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName !== 'TransactWriteItemsCommand') return next(args);
        throw Object.assign(new Error('Transactions are not supported for multi-Region strongly consistent tables'), {
          name: 'ValidationException',
          $metadata: { httpStatusCode: 400 },
        });
      },
      { step: 'finalizeRequest', name: `mrsc-${++seq}` },
    );
    const manager = new LockManager({ tableName: fixture.tableName, client, logger: new MemoryLogger() });
    const counter = countRequests(client);
    const [a, b] = keysFor('mrsc', 2);
    try {
      const lock = await manager.acquire([a, b]);
      expect(counter.count('UpdateItem', 'ok')).toBe(2);
      await lock.release();
      counter.reset();
      // Remembered: not asked again.
      await (await manager.acquire([a, b])).release();
      expect(counter.count('TransactWriteItems')).toBe(0);
    } finally {
      await manager.close();
      client.destroy();
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

/** A memory store whose all-or-none write is replaced by `acquireAll(write, original)`. */
function storeWith(
  acquireAll: (write: AcquireAllWrite, original: (write: AcquireAllWrite) => Promise<AcquireAllResult>) => Promise<AcquireAllResult>,
) {
  const store = new MemoryLockStore();
  const { mutex } = memoryStoresOf(store);
  const original = mutex.acquireAll.bind(mutex);
  mutex.acquireAll = (write: AcquireAllWrite) => acquireAll(write, original);
  return { store, mutex };
}

const timeoutError = () => Object.assign(new Error('lost'), { name: 'TimeoutError' });

describe('Multi-key fast path: lost answers, shutdown, give-ups (memory store)', () => {
  it('a replayed grant after another process passed the silent holder: confirmed key by key, fn never runs while the other holds', async () => {
    const applied = new Set<string>();
    let blocked = true;
    // DynamoDB's ClientRequestToken: a replay of an applied request within 10 minutes is answered
    // as a success, with no effect, whatever the items are now.
    const { store } = storeWith(async (write, original) => {
      if (applied.has(write.requestToken)) {
        if (blocked) throw timeoutError();
        return { kind: 'granted', records: write.parts.map((part) => grantedRecord(write, part)) };
      }
      const result = await original(write);
      if (result.kind === 'granted') applied.add(write.requestToken);
      throw timeoutError();
    });
    const options = { store, verifyTable: false, logger: new MemoryLogger(), leaseDuration: '1s' } as const;
    const p1 = new LockManager({ ...options, ownerName: 'p1', requestTimeout: '200ms' });
    const p2 = new LockManager({ ...options, ownerName: 'p2' });
    const [a, b] = keysFor('replay', 2);
    let other: Lock | undefined;
    const overlaps: boolean[] = [];
    try {
      const first = p1.withLock(
        [a, b],
        async (lock) => {
          overlaps.push(other?.isHeld === true);
          expect(lock.isHeld).toBe(true);
          return lock.fencingTokenOf(a);
        },
        { wait: '10s' },
      );
      await sleep(100);
      other = await p2.acquire(a, { wait: '10s' });
      blocked = false;
      setTimeout(() => void other?.release(), 500);
      const token = await first;
      expect(overlaps).toEqual([false]);
      expect(token).toBeGreaterThan(other.fencingToken);
      expect(p1.heldCount).toBe(0);
    } finally {
      await Promise.all([p1.close(), p2.close()]);
    }
  }, 20_000);

  it('close() while the transaction is in flight waits for it and leaves nothing held, no heartbeats after', async () => {
    const { store, mutex } = storeWith(async (write, original) => {
      await sleep(300);
      return original(write);
    });
    const beats: string[] = [];
    const heartbeat = mutex.heartbeat.bind(mutex);
    mutex.heartbeat = (write) => {
      beats.push(write.key);
      return heartbeat(write);
    };
    const manager = new LockManager({ store, verifyTable: false, logger: new MemoryLogger(), leaseDuration: '600ms' });
    const [a, b] = keysFor('close', 2);
    const pending = manager.acquire([a, b], { wait: '5s' }).then(
      () => undefined,
      (error: unknown) => error,
    );
    await sleep(50);
    await manager.close();
    const after = beats.length;
    expect(await pending).toBeInstanceOf(Error);
    for (const key of [a, b]) expect((await mutex.read(key))?.token).toBeUndefined();
    await sleep(700);
    expect(beats.length).toBe(after);
  });

  it("the caller's signal aborted while the transaction is in flight: its reason, and the keys released", async () => {
    const { store, mutex } = storeWith(async (write, original) => {
      await sleep(200);
      return original(write);
    });
    const manager = new LockManager({ store, verifyTable: false, logger: new MemoryLogger() });
    const events: LockEvent[] = [];
    manager.subscribe((event) => void events.push(event));
    const [a, b] = keysFor('abort', 2);
    const controller = new AbortController();
    const reason = new Error('caller gave up');
    try {
      const pending = manager.acquire([a, b], { wait: '5s', signal: controller.signal });
      await sleep(20);
      controller.abort(reason);
      await expect(pending).rejects.toBe(reason);
      expect(manager.heldCount).toBe(0);
      await sleep(100);
      for (const key of [a, b]) expect((await mutex.read(key))?.token).toBeUndefined();
      expect(
        events
          .filter((event) => event.type === 'cleanup')
          .map((event) => event.key)
          .sort(),
      ).toEqual([a, b]);
      // Free for the next caller at once.
      await (await manager.acquire([a, b], { wait: false })).release();
    } finally {
      await manager.close();
    }
  });

  it('TransactionInProgressException (a resend while the first still runs): the outcome is unknown, resent after a pause', async () => {
    let sends = 0;
    const { store } = storeWith(async (write, original) => {
      if (++sends === 1) throw timeoutError();
      if (sends === 2)
        throw Object.assign(new Error('Transaction is ongoing for the idempotency token'), {
          name: 'TransactionInProgressException',
          $metadata: { httpStatusCode: 400 },
        });
      return original(write);
    });
    const manager = new LockManager({ store, verifyTable: false, logger: new MemoryLogger() });
    try {
      const lock = await manager.acquire(keysFor('in-progress', 2), { wait: '5s' });
      expect(sends).toBe(3);
      await lock.release();
    } finally {
      await manager.close();
    }
  });

  it('a permanent error of the transaction is a LockUnavailableError with it as the cause', async () => {
    const denied = Object.assign(new Error('not authorized to perform dynamodb:TransactWriteItems'), {
      name: 'AccessDeniedException',
      $metadata: { httpStatusCode: 400 },
    });
    const { store } = storeWith(() => Promise.reject(denied));
    const manager = new LockManager({ store, verifyTable: false, logger: new MemoryLogger() });
    try {
      const error = await manager.acquire(keysFor('denied', 2), { wait: '5s' }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockUnavailableError);
      expect((error as Error).cause).toBe(denied);
    } finally {
      await manager.close();
    }
  });

  it('a single attempt on a key reserved by a set in flight is busy at once (no wait for the request limit)', async () => {
    const { store } = storeWith(async (write, original) => {
      await sleep(500);
      return original(write);
    });
    const manager = new LockManager({ store, verifyTable: false, logger: new MemoryLogger(), requestTimeout: '3s' });
    const [a, b] = keysFor('reserved', 2);
    try {
      const set = manager.acquire([a, b]);
      await sleep(20);
      const started = performance.now();
      await expect(manager.acquire(a, { wait: false })).rejects.toBeInstanceOf(LockBusyError);
      expect(await manager.tryAcquire(b)).toBeNull();
      expect(performance.now() - started).toBeLessThan(200);
      await (await set).release();
    } finally {
      await manager.close();
    }
  });

  it("a clean-up whose read fails emits cleanup 'failed'", async () => {
    const { store, mutex } = storeWith(async (write, original) => {
      await original(write);
      throw timeoutError();
    });
    mutex.read = () =>
      Promise.reject(Object.assign(new Error('read failed'), { name: 'InternalServerError', $metadata: { httpStatusCode: 500 } }));
    const manager = new LockManager({ store, verifyTable: false, logger: new MemoryLogger(), requestTimeout: '100ms' });
    const events: LockEvent[] = [];
    manager.subscribe((event) => void events.push(event));
    const [a, b] = keysFor('cleanup-failed', 2);
    try {
      await expect(manager.acquire([a, b], { wait: false })).rejects.toBeInstanceOf(LockUnavailableError);
      await sleep(50);
      const cleanups = events.filter((event) => event.type === 'cleanup');
      expect(cleanups.map((event) => [event.key, (event as { outcome: string }).outcome]).sort()).toEqual([
        [a, 'failed'],
        [b, 'failed'],
      ]);
    } finally {
      await manager.close();
    }
  });
});

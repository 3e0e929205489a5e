/**
 * How an application unit-tests its own services with `DynamoLockModule.forTesting()`: no
 * DynamoDB server, no table, no endpoint. Every `DynamoDBClient.send` is spied on and must
 * never be called; the second "instance" is even configured with an endpoint nobody listens on.
 */
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  DynamoLockModule,
  type Lock,
  LockBusyError,
  LockLostError,
  LockService,
  LockValidationError,
  MemoryLockStore,
  WithLock,
} from '../../lib';
import { internalsOf } from '../../lib/core/engine/lock.internals';
import { MemoryMutexStore } from '../../lib/store/mutex/mutex.memory-store';
import { findFreePort } from '../../tools/free-port.mjs';
import { memoryStoresOf } from '../support/custom-stores';
import { MemoryLogger } from '../support/lock-fixture';
import { rejectionOf } from '../support/rejection';

/** The kind of service an application would test. */
@Injectable()
class InvoiceService {
  inside = new Map<string, number>();
  maxInside = 0;
  readonly tokens: number[] = [];
  reports = 0;

  constructor(private readonly locks: LockService) {}

  @WithLock('invoice-<0>', { wait: '5s', data: (id: string) => ({ invoice: id }) })
  async pay(id: string, delayMs = 10): Promise<string> {
    const now = (this.inside.get(id) ?? 0) + 1;
    this.inside.set(id, now);
    this.maxInside = Math.max(this.maxInside, now);
    this.tokens.push(this.locks.current()!.fencingToken);
    await sleep(delayMs);
    this.inside.set(id, now - 1);
    return `paid ${id}`;
  }

  /** Locked, and calls a locked method on the same key: re-entrant. */
  @WithLock('invoice-<0>')
  async payWithFee(id: string): Promise<{ outer: number; inner: number; reentrant: boolean }> {
    const outer = this.locks.current()!;
    await this.pay(id, 1);
    const inner = await this.locks.acquire(`invoice-${id}`);
    const result = { outer: outer.fencingToken, inner: this.tokens.at(-1)!, reentrant: inner.isReentrant };
    await inner.release();
    return result;
  }

  @WithLock('invoice-<0>', { wait: false })
  async payNow(id: string): Promise<string> {
    return `paid ${id} now`;
  }

  /** The service API path: `LockService.withLock` with one attempt. */
  refund(id: string): Promise<number> {
    return this.locks.withLock(`invoice-${id}`, (lock) => lock.fencingToken, { wait: false });
  }

  @WithLock('monthly-report', { onBusy: 'skip', holdAtLeast: 0 })
  async report(): Promise<string | undefined> {
    this.reports++;
    return 'report done';
  }
}

describe('forTesting() with bad options', () => {
  it('names DynamoLockModule.forTesting() in its configuration errors', async () => {
    for (const [options, message] of [
      [{ store: {} }, /^DynamoLockModule\.forTesting\(\) option "store" must be a MemoryLockStore .*Leave it out for a new, empty one\.$/],
      [{ leaseDurration: '2s' }, /^DynamoLockModule\.forTesting\(\) has no option "leaseDurration"; did you mean "leaseDuration"\?/],
    ] as const) {
      const error = await Test.createTestingModule({ imports: [DynamoLockModule.forTesting(options as never)] })
        .setLogger(new MemoryLogger())
        .compile()
        .catch((e: unknown) => e);
      expect((error as Error).message).toMatch(message);
    }
  });
});

describe('the memory store without a DynamoDB client', () => {
  it('creates no DynamoDB client, so unit tests see none of the AWS SDK warnings', async () => {
    // A fresh process: the SDK warns once per process, when a client is created (on Node 20, about Node 22).
    const script = `
      const { LockManager, MemoryLockStore } = require('./dist/standalone');
      (async () => {
        const locks = new LockManager({ store: new MemoryLockStore() });
        const lock = await locks.acquire('k');
        await lock.release();
        await locks.close();
        console.log('ok');
      })();`;
    const child = spawn(process.execPath, ['-e', script], {
      cwd: path.resolve(path.dirname(expect.getState().testPath ?? ''), '../..'),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    await once(child, 'exit');
    expect(stdout.trim()).toBe('ok');
    expect(stderr).toBe('');
  });
});

describe('DynamoLockModule.forTesting()', () => {
  let send: ReturnType<typeof jest.spyOn>;
  beforeEach(() => {
    send = jest.spyOn(DynamoDBClient.prototype, 'send');
  });
  afterEach(() => {
    // The proof: nothing in these tests talks to DynamoDB.
    expect(send).not.toHaveBeenCalled();
  });

  describe('with no options at all', () => {
    let moduleRef: TestingModule;
    let invoices: InvoiceService;
    let locks: LockService;

    beforeAll(async () => {
      moduleRef = await Test.createTestingModule({ imports: [DynamoLockModule.forTesting()], providers: [InvoiceService] })
        .setLogger(new MemoryLogger())
        .compile();
      await moduleRef.init();
      invoices = moduleRef.get(InvoiceService);
      locks = moduleRef.get(LockService);
    });
    afterAll(() => moduleRef.close());

    it('provides a LockService backed by the memory store', () => {
      expect(locks).toBeInstanceOf(LockService);
      expect(internalsOf(locks).stores).toMatchObject({ kind: 'memory' });
      expect(internalsOf(locks).stores.mutex).toBeInstanceOf(MemoryMutexStore);
    });

    it('@WithLock excludes concurrent calls on one key, with increasing fencing tokens', async () => {
      invoices.tokens.length = 0;
      invoices.maxInside = 0;
      const results = await Promise.all(['1', '1', '1', '1'].map((id) => invoices.pay(id)));
      expect(results).toEqual(['paid 1', 'paid 1', 'paid 1', 'paid 1']);
      expect(invoices.maxInside).toBe(1);
      expect(invoices.tokens).toHaveLength(4);
      for (let i = 1; i < invoices.tokens.length; i++) expect(invoices.tokens[i]).toBeGreaterThan(invoices.tokens[i - 1]!);
    });

    it('lets different keys run at the same time', async () => {
      let together = 0;
      let most = 0;
      await Promise.all(
        ['a', 'b', 'c'].map((id) =>
          locks.withLock(`invoice-${id}`, async () => {
            most = Math.max(most, ++together);
            await sleep(20);
            together--;
          }),
        ),
      );
      expect(most).toBe(3);
    });

    it('is re-entrant: a locked method calling locked code on the same key does not wait for itself', async () => {
      const result = await invoices.payWithFee('7');
      expect(result.reentrant).toBe(true);
      expect(result.inner).toBe(result.outer);
    });

    it('throws a LockBusyError naming the holder with wait: false, and inspect() shows the holder and data', async () => {
      // Held outside this async context (inside withLock() the same key would be re-entrant).
      const lock = await locks.acquire('invoice-9', { data: { invoice: '9' } });
      const inspected = await locks.inspect('invoice-9');
      const busy = await rejectionOf(invoices.refund('9'));
      const busyToo = await rejectionOf(invoices.payNow('9'));
      expect(lock.isHeld).toBe(true);
      await lock.release();
      expect(inspected).toEqual({
        key: 'invoice-9',
        owner: locks.options.ownerName,
        fencingToken: expect.any(Number),
        acquiredAt: expect.any(Date),
        updatedAt: expect.any(Date),
        leaseDuration: 30_000,
        data: { invoice: '9' },
      });
      expect(busy).toBeInstanceOf(LockBusyError);
      expect((busy as LockBusyError).key).toBe('invoice-9');
      expect((busy as LockBusyError).holder?.owner).toBe(locks.options.ownerName);
      expect(busy.message).toBe(
        `Lock "invoice-9" is held by "${locks.options.ownerName}" (fencing token ${lock.fencingToken}); gave up after one attempt (wait: false).`,
      );
      expect(busyToo).toBeInstanceOf(LockBusyError);
      expect(busyToo.message).toBe(busy.message);
      // Released: free again, and the next holder's token is larger.
      expect(await locks.inspect('invoice-9')).toBeNull();
      expect(await invoices.refund('9')).toBeGreaterThan(lock.fencingToken);
    });

    it('rejects a whitespace-only key, and a whitespace-only @WithLock value, before any request', async () => {
      const mutex = internalsOf(locks).stores.mutex as MemoryMutexStore;
      const reads = jest.spyOn(mutex, 'read');
      const writes = jest.spyOn(mutex, 'acquire');
      const records = mutex.size;
      try {
        const errors = [
          await rejectionOf(locks.acquire('   ')),
          await rejectionOf(locks.tryAcquire('\t')),
          await rejectionOf(locks.withLock(' \n ', () => 'never')),
          await rejectionOf(locks.inspect('\u00a0')),
          await rejectionOf(invoices.pay('  ')),
        ];
        for (const error of errors) expect(error).toBeInstanceOf(LockValidationError);
        expect(errors[0]!.message).toBe(
          'Lock key must contain more than whitespace; got "   ". A blank key usually means an unset field (a form input, an environment variable): check the value the key is built from.',
        );
        expect(errors[1]!.message).toContain('got "\\t".');
        expect(errors[4]!.message).toBe(
          `@WithLock('invoice-<0>') on InvoiceService.pay: <0> is only whitespace ("  ") in this call, so the key would not identify anything.`,
        );
        expect(reads).not.toHaveBeenCalled();
        expect(writes).not.toHaveBeenCalled();
        expect(mutex.size).toBe(records);
        // Whitespace around a key is part of it.
        await locks.withLock(' padded ', (lock) => expect(lock.key).toBe(' padded '));
      } finally {
        reads.mockRestore();
        writes.mockRestore();
      }
    });

    it('stores @WithLock data with the lock', async () => {
      const seen = invoices.pay('data', 40);
      await sleep(10);
      expect((await locks.inspect('invoice-data'))?.data).toEqual({ invoice: 'data' });
      await seen;
    });
  });

  describe('two app instances sharing one store', () => {
    const store = new MemoryLockStore();
    let closedEndpoint: string;
    const apps: TestingModule[] = [];

    /** One "instance" of the app; its client points at a port nobody listens on. */
    async function instance(ownerName: string): Promise<TestingModule> {
      const moduleRef = await Test.createTestingModule({
        imports: [
          DynamoLockModule.forTesting({
            store,
            ownerName,
            leaseDuration: '2s',
            logger: new MemoryLogger(),
            clientConfig: {
              endpoint: closedEndpoint,
              region: 'us-east-1',
              credentials: { accessKeyId: 'none', secretAccessKey: 'none' },
              maxAttempts: 1,
            },
          }),
        ],
        providers: [InvoiceService],
      })
        .setLogger(new MemoryLogger())
        .compile();
      await moduleRef.init();
      apps.push(moduleRef);
      return moduleRef;
    }

    beforeAll(async () => {
      closedEndpoint = `http://127.0.0.1:${await findFreePort()}`;
    });
    afterAll(() => Promise.all(apps.map((app) => app.close())));

    it('control: the configured endpoint refuses connections, and the spy sees any request', async () => {
      const client = new DynamoDBClient({
        endpoint: closedEndpoint,
        region: 'us-east-1',
        credentials: { accessKeyId: 'none', secretAccessKey: 'none' },
        maxAttempts: 1,
      });
      await expect(client.send(new ListTablesCommand({}))).rejects.toThrow(/ECONNREFUSED/);
      expect(send).toHaveBeenCalledTimes(1);
      client.destroy();
      send.mockClear();
    });

    it('busy errors name the other instance; onBusy: skip skips the method while it holds the key', async () => {
      const a = await instance('instance-a');
      const b = await instance('instance-b');
      const lock = await a.get(LockService).acquire('monthly-report');
      const busy = await rejectionOf(b.get(LockService).acquire('monthly-report', { wait: false }));
      expect(busy).toBeInstanceOf(LockBusyError);
      expect((busy as LockBusyError).holder).toEqual({ owner: 'instance-a', fencingToken: lock.fencingToken, leaseDuration: 2_000 });
      expect(busy.message).toBe(
        `Lock "monthly-report" is held by "instance-a" (fencing token ${lock.fencingToken}); gave up after one attempt (wait: false).`,
      );
      const service = b.get(InvoiceService);
      expect(await service.report()).toBeUndefined();
      expect(service.reports).toBe(0);
      await lock.release();
      expect(await service.report()).toBe('report done');
      expect(service.reports).toBe(1);
    });

    it('a waiting instance gets the lock when the other releases it, with a larger fencing token', async () => {
      const a = await instance('instance-c');
      const b = await instance('instance-d');
      const first = await a.get(LockService).acquire('invoice-42');
      const waiting = b.get(InvoiceService).pay('42', 1);
      await sleep(50);
      expect(b.get(InvoiceService).tokens).toEqual([]);
      await first.release();
      expect(await waiting).toBe('paid 42');
      expect(b.get(InvoiceService).tokens[0]).toBeGreaterThan(first.fencingToken);
    });

    it('closing an instance releases its locks and aborts their signals', async () => {
      const a = await instance('instance-e');
      const b = await instance('instance-f');
      const held: Lock = await a.get(LockService).acquire('invoice-shutdown');
      expect((await memoryStoresOf(store).mutex.read('invoice-shutdown'))?.token).toBe(held.leaseId);
      apps.splice(apps.indexOf(a), 1);
      await a.close();
      expect(held.signal.aborted).toBe(true);
      expect(held.signal.reason).toBeInstanceOf(LockLostError);
      expect((held.signal.reason as LockLostError).reason).toBe('shutdown');
      const record = await memoryStoresOf(store).mutex.read('invoice-shutdown');
      expect(record?.token).toBeUndefined();
      expect(record?.released).toBe(held.leaseId);
      // The other instance takes it at once, with one attempt.
      const next = await b.get(LockService).acquire('invoice-shutdown', { wait: false });
      expect(next.fencingToken).toBe(held.fencingToken + 1);
      await next.release();
    });
  });
});

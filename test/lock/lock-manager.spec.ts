import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import { LockBusyError, LockKeyError, LockLostError, LockUnavailableError, LockValidationError, type Lock } from '../../lib';
import { injectFaults } from '../support/fault-injection';
import { LockFixture } from '../support/lock-fixture';
import { countRequests } from '../support/request-counter';
import { describeEachServer, stealLock } from '../support/servers';
import { rejectionOf } from '../support/rejection';

let keySeq = 0;
const newKey = (name: string) => `${name}-${++keySeq}`;

function blockEventLoop(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy: simulates a GC pause or a blocked event loop
  }
}

describeEachServer('LockManager', (server) => {
  const fixture = new LockFixture(server);
  beforeAll(() => fixture.setup());
  afterAll(() => fixture.close());

  describe('cost of the happy path', () => {
    it('acquires with one conditional write and releases with one more, with no reads', async () => {
      const manager = fixture.manager();
      const counter = countRequests(manager.client);
      const lock = await manager.acquire(newKey('cheap'));
      expect(counter.snapshot()).toEqual({ UpdateItemCommand: { ok: 1 } });
      expect(await lock.release()).toBe(true);
      expect(counter.snapshot()).toEqual({ UpdateItemCommand: { ok: 2 } });
    });

    it('renews a held lock with one conditional write per heartbeat', async () => {
      const manager = fixture.manager({ leaseDuration: 900, heartbeatInterval: 200 });
      const other = fixture.manager();
      const counter = countRequests(manager.client);
      const key = newKey('heartbeat');
      const lock = await manager.acquire(key);
      await sleep(1_500);
      const writes = counter.count('UpdateItem', 'ok');
      expect(writes).toBeGreaterThanOrEqual(1 + 5);
      expect(writes).toBeLessThanOrEqual(1 + 8);
      expect(counter.count('GetItem')).toBe(0);
      expect(lock.isHeld).toBe(true);
      expect(await other.tryAcquire(key)).toBeNull();
      await lock.release();
    });
  });

  describe('mutual exclusion', () => {
    it('never lets two managers inside one key at the same time', async () => {
      const managers = [1, 2, 3, 4].map((n) => fixture.manager({ ownerName: `m${n}` }));
      const key = newKey('exclusive');
      let inside = 0;
      let maxInside = 0;
      let runs = 0;
      await Promise.all(
        managers.map(async (manager) => {
          for (let i = 0; i < 5; i++) {
            await manager.withLock(
              key,
              async () => {
                inside++;
                maxInside = Math.max(maxInside, inside);
                await sleep(5);
                inside--;
                runs++;
              },
              { wait: '20s' },
            );
          }
        }),
      );
      expect(runs).toBe(20);
      expect(maxInside).toBe(1);
    }, 40_000);

    it('serves callers of one manager in FIFO order, handing the lock over with one write each', async () => {
      const manager = fixture.manager();
      const counter = countRequests(manager.client);
      const key = newKey('fifo');
      const order: number[] = [];
      const tokens: number[] = [];
      await Promise.all(
        [0, 1, 2, 3, 4, 5, 6, 7].map((i) =>
          manager.withLock(key, async (lock) => {
            order.push(i);
            tokens.push(lock.fencingToken);
            await sleep(5);
          }),
        ),
      );
      expect(order).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
      expect(tokens).toEqual([...tokens].sort((a, b) => a - b));
      expect(new Set(tokens).size).toBe(8);
      // 1 acquisition + 7 hand-overs + 1 release; no reads, no failed writes.
      expect(counter.snapshot()).toEqual({ UpdateItemCommand: { ok: 9 } });
    });
  });

  describe('busy locks and waiting', () => {
    it('tryAcquire returns null and acquire({ wait: false }) names the key and holder', async () => {
      const holder = fixture.manager({ ownerName: 'holder-1' });
      const other = fixture.manager();
      const key = newKey('busy');
      const lock = await holder.acquire(key);
      expect(await other.tryAcquire(key)).toBeNull();
      const error = await rejectionOf(other.acquire(key, { wait: false }));
      expect(error).toBeInstanceOf(LockBusyError);
      expect((error as LockBusyError).key).toBe(key);
      expect((error as LockBusyError).holder?.owner).toBe('holder-1');
      expect(error.message).toBe(
        `Lock "${key}" is held by "holder-1" (fencing token ${lock.fencingToken}); gave up after one attempt (wait: false).`,
      );
      await lock.release();
    });

    it('waits for a release and then takes the lock', async () => {
      const holder = fixture.manager();
      const waiter = fixture.manager();
      const key = newKey('wait');
      const first = await holder.acquire(key);
      setTimeout(() => void first.release(), 300);
      const started = performance.now();
      const second = await waiter.acquire(key, { wait: '10s' });
      expect(performance.now() - started).toBeGreaterThanOrEqual(250);
      expect(second.fencingToken).toBeGreaterThan(first.fencingToken);
      await second.release();
    });

    it('gives up after the wait with a LockBusyError', async () => {
      const holder = fixture.manager();
      const waiter = fixture.manager();
      const key = newKey('timeout');
      const lock = await holder.acquire(key);
      const started = performance.now();
      const error = await rejectionOf(waiter.acquire(key, { wait: '400ms' }));
      const waited = performance.now() - started;
      expect(error).toBeInstanceOf(LockBusyError);
      expect(waited).toBeGreaterThanOrEqual(390);
      expect(waited).toBeLessThan(2_000);
      expect(lock.isHeld).toBe(true);
      await lock.release();
    });

    it('answers tryAcquire at once when a caller of the same process is ahead for the key', async () => {
      const holder = fixture.manager();
      const manager = fixture.manager();
      const key = newKey('try-behind');
      const held = await holder.acquire(key);
      const waiting = manager.acquire(key, { wait: '10s' });
      await sleep(50);
      // Ahead of it: a caller waiting in this process. Before, tryAcquire queued behind it until the release.
      const blocked = Symbol('blocked');
      expect(await Promise.race([manager.tryAcquire(key), sleep(1_000).then(() => blocked)])).toBeNull();
      await held.release();
      const lock = await waiting;
      expect(await Promise.race([manager.tryAcquire(key), sleep(1_000).then(() => blocked)])).toBeNull();
      await lock.release();
      const free = await manager.tryAcquire(key);
      expect(free).not.toBeNull();
      await free?.release();
    });

    it('stops waiting as soon as the signal aborts', async () => {
      const holder = fixture.manager();
      const waiter = fixture.manager();
      const key = newKey('abort');
      const lock = await holder.acquire(key);
      const controller = new AbortController();
      setTimeout(() => controller.abort(new Error('client went away')), 150);
      const started = performance.now();
      const error = await rejectionOf(waiter.acquire(key, { wait: true, signal: controller.signal }));
      expect(error.message).toBe('client went away');
      expect(performance.now() - started).toBeLessThan(1_000);
      await lock.release();
      const free = await waiter.tryAcquire(key);
      expect(free).not.toBeNull();
      await free?.release();
    });
  });

  describe('ownership and fencing', () => {
    it('takes over a dead holder one lease after first seeing its record, with a larger fencing token', async () => {
      const dead = fixture.manager({ ownerName: 'dead' });
      const waiter = fixture.manager({ ownerName: 'waiter' });
      const key = newKey('takeover');
      const stale = await dead.acquire(key, { leaseDuration: 800, heartbeat: false });
      const started = performance.now();
      const lock = await waiter.acquire(key, { wait: '10s' });
      const took = performance.now() - started;
      expect(took).toBeGreaterThanOrEqual(800);
      expect(took).toBeLessThan(800 + 1_500);
      expect(lock.fencingToken).toBeGreaterThan(stale.fencingToken);
      // The stale handle knows it lost the lock, and its release cannot free the new holder's lock.
      expect(stale.isHeld).toBe(false);
      expect(stale.signal.aborted).toBe(true);
      expect(stale.signal.reason).toBeInstanceOf(LockLostError);
      expect(await stale.release()).toBe(false);
      expect((await waiter.inspect(key))?.owner).toBe('waiter');
      await lock.release();
    });

    it('never lets a stale lease id release or renew the current holder', async () => {
      const a = fixture.manager({ ownerName: 'a' });
      const b = fixture.manager({ ownerName: 'b' });
      const key = newKey('stale');
      const first = await a.acquire(key);
      const staleId = first.leaseId;
      await first.release();
      const second = await b.acquire(key);
      expect(await a.releaseLease(key, staleId)).toBe(false);
      await expect(a.renewLease(key, staleId)).rejects.toBeInstanceOf(LockLostError);
      expect((await a.inspect(key))?.owner).toBe('b');
      expect(second.isHeld).toBe(true);
      await second.release();
    });

    it('renews and releases a lease it holds itself through its Lock, which keeps counting the real lease', async () => {
      const manager = fixture.manager();
      const other = fixture.manager();
      const key = newKey('own-lease');
      const lock = await manager.acquire(key, { heartbeat: false, leaseDuration: '1m' });
      await manager.renewLease(key, lock.leaseId, 600);
      expect((await other.inspect(key))?.leaseDuration).toBe(600);
      // The handle knows its lease is 600 ms now, not a minute: it stops trusting it in time.
      await sleep(700);
      expect(lock.isHeld).toBe(false);
      const again = await manager.acquire(key, { wait: '5s' });
      expect(await manager.releaseLease(key, again.leaseId)).toBe(true);
      expect(again.isHeld).toBe(false);
      expect(manager.heldCount).toBe(0);
      const free = await other.tryAcquire(key);
      expect(free).not.toBeNull();
      await free?.release();
    });

    it('raises the fencing token on every acquisition, keeping the counter across releases', async () => {
      const manager = fixture.manager();
      const key = newKey('fence');
      const tokens: number[] = [];
      for (let i = 0; i < 5; i++) {
        const lock = await manager.acquire(key);
        tokens.push(lock.fencingToken);
        await lock.release();
      }
      for (let i = 1; i < tokens.length; i++) expect(tokens[i]).toBe(tokens[i - 1] + 1);
      expect(Number.isSafeInteger(tokens[4])).toBe(true);
    });

    it('stores data with the lock and shows it, with the holder, through inspect()', async () => {
      const manager = fixture.manager({ ownerName: 'inspector' });
      const key = newKey('inspect');
      expect(await manager.inspect(key)).toBeNull();
      const lock = await manager.acquire(key, { data: { job: 'export', n: 3 }, leaseDuration: '20s' });
      const info = await manager.inspect(key);
      expect(info).toMatchObject({
        key,
        owner: 'inspector',
        fencingToken: lock.fencingToken,
        leaseDuration: 20_000,
        data: { job: 'export', n: 3 },
      });
      expect(Math.abs(info!.acquiredAt.getTime() - Date.now())).toBeLessThan(5_000);
      await lock.release();
      expect(await manager.inspect(key)).toBeNull();
    });

    it('shows a holder served from the line as holding since it got the lock, not since its first heartbeat', async () => {
      const holder = fixture.manager({ ownerName: 'first' });
      const waiter = fixture.manager({ ownerName: 'second', leaseDuration: 1_500, heartbeatInterval: 500 });
      const key = newKey('inspect-promoted');
      const first = await holder.acquire(key);
      const waiting = new Promise<void>((resolve) => {
        const stop = waiter.subscribe((event) => event.type === 'waiting' && (stop(), resolve()));
      });
      const pending = waiter.acquire(key, { wait: '10s' });
      // The waiter of the other manager takes a ticket; the release serves it.
      await waiting;
      await sleep(100);
      await first.release();
      const second = await pending;
      // Its first heartbeat writes its token, a third of its claim lease after it got the lock.
      await sleep(1_000);
      const info = await holder.inspect(key);
      expect(info).toMatchObject({ owner: 'second', fencingToken: second.fencingToken });
      expect(Math.abs(info!.acquiredAt.getTime() - second.acquiredAt.getTime())).toBeLessThan(100);
      await second.release();
    });

    it('writes a TTL attribute for clean-up, ttlDays ahead', async () => {
      const manager = fixture.manager({ ttlDays: 3 });
      const key = newKey('ttl');
      const lock = await manager.acquire(key);
      const { Item } = await fixture.client.send(
        new GetItemCommand({ TableName: fixture.tableName, Key: { key: { S: key } }, ConsistentRead: true }),
      );
      const ttl = Number(Item?.ttl?.N);
      expect(Math.abs(ttl - (Date.now() / 1000 + 3 * 86_400))).toBeLessThan(60);
      await lock.release();
    });
  });

  describe('losing a lock', () => {
    it('aborts the signal at once when the event loop was blocked past the lease', async () => {
      const manager = fixture.manager();
      const lock = await manager.acquire(newKey('pause'), { leaseDuration: 500 });
      blockEventLoop(700);
      expect(lock.signal.aborted).toBe(true);
      const reason = lock.signal.reason as LockLostError;
      expect(reason).toBeInstanceOf(LockLostError);
      expect(reason.reason).toBe('expired');
      expect(lock.isHeld).toBe(false);
      await expect(lock.extend()).rejects.toBeInstanceOf(LockLostError);
    });

    it('aborts with reason "taken" when a heartbeat finds another owner', async () => {
      const manager = fixture.manager({ leaseDuration: 1_500, heartbeatInterval: 100 });
      const key = newKey('stolen');
      const lock = await manager.acquire(key);
      await stealLock(fixture.client, fixture.tableName, key);
      const reason = await new Promise<LockLostError>((resolve) =>
        lock.signal.addEventListener('abort', () => resolve(lock.signal.reason)),
      );
      expect(reason.reason).toBe('taken');
      expect(manager.logger.at('warn').join('\n')).toContain(`Lock "${key}" was lost`);
    });

    it('tells a DynamoDB outage apart: reason "expired" with the failing error as cause', async () => {
      const manager = fixture.manager({ leaseDuration: 600, heartbeatInterval: 150 });
      const faults = injectFaults(manager.client);
      const lock = await manager.acquire(newKey('outage'));
      faults.failNext('UpdateItem', { kind: 'server-error', times: 1_000 });
      const reason = await new Promise<LockLostError>((resolve) =>
        lock.signal.addEventListener('abort', () => resolve(lock.signal.reason)),
      );
      expect(reason.reason).toBe('expired');
      expect((reason.cause as Error).name).toBe('InternalServerError');
      expect(reason.message).toMatch(/DynamoDB may be unreachable/);
      expect(manager.logger.at('warn').some((m) => m.includes('Heartbeat for lock'))).toBe(true);
      faults.clear();
    }, 20_000);
  });

  describe('faults', () => {
    it('recognises its own lock when the acquire response was lost, and holds it', async () => {
      const manager = fixture.manager({ ownerName: 'lost-response' });
      const other = fixture.manager();
      const attempts = countRequests(manager.client, { level: 'attempt' });
      const faults = injectFaults(manager.client);
      faults.failNext('UpdateItem', { kind: 'lost-response' });
      const key = newKey('lost');
      const lock = await manager.acquire(key, { wait: false });
      expect(faults.injected).toHaveLength(1);
      expect(attempts.count('UpdateItem')).toBe(2);
      expect(lock.isHeld).toBe(true);
      expect((await other.inspect(key))?.owner).toBe('lost-response');
      expect(await other.tryAcquire(key)).toBeNull();
      expect(await lock.release()).toBe(true);
      expect(await other.inspect(key)).toBeNull();
    });

    it('reports a release whose response was lost as done', async () => {
      const manager = fixture.manager();
      const key = newKey('lost-release');
      const lock = await manager.acquire(key);
      const faults = injectFaults(manager.client);
      faults.failNext('UpdateItem', { kind: 'lost-response' });
      expect(await lock.release()).toBe(true);
      expect(faults.injected).toHaveLength(1);
      expect(await manager.inspect(key)).toBeNull();
    });

    it('never reports a lock after a throttled write, and leaves nothing held', async () => {
      const manager = fixture.manager({}, { maxAttempts: 2 });
      const faults = injectFaults(manager.client);
      faults.failNext('UpdateItem', { kind: 'throttling', times: 2 });
      const key = newKey('throttled');
      const error = await rejectionOf(manager.acquire(key, { wait: false }));
      // Not busy: no answer showed a holder. The DynamoDB error is the cause.
      expect(error).toBeInstanceOf(LockUnavailableError);
      expect((error.cause as Error).name).toBe('ThrottlingException');
      expect(faults.injected).toHaveLength(2);
      expect(manager.heldCount).toBe(0);
      expect(await manager.inspect(key)).toBeNull();
    }, 20_000);

    it('keeps retrying throttled writes within the wait, with a warning, then holds the lock', async () => {
      const manager = fixture.manager();
      const faults = injectFaults(manager.client);
      faults.failNext('UpdateItem', { kind: 'throughput-exceeded', times: 4 });
      const lock = await manager.acquire(newKey('retry'), { wait: '20s' });
      expect(lock.isHeld).toBe(true);
      const warnings = manager.logger.at('warn').filter((m) => /transient DynamoDB error .*ProvisionedThroughputExceededException/.test(m));
      expect(warnings.length).toBeGreaterThan(0);
      // Whole milliseconds, not a jittered float.
      for (const warning of warnings) expect(warning).toMatch(/; retrying in \d+ ms\.$/);
      await lock.release();
    }, 30_000);
  });

  describe('re-entrancy and context', () => {
    it('lets a nested acquisition in the same async context through without a write', async () => {
      const manager = fixture.manager();
      const counter = countRequests(manager.client);
      const key = newKey('reentrant');
      await manager.withLock(key, async (outer) => {
        expect(manager.current(key)).toBe(outer);
        expect(manager.current()).toBe(outer);
        const before = counter.total();
        const inner = await manager.acquire(key);
        await manager.withLock(key, async (again) => {
          expect(again.fencingToken).toBe(outer.fencingToken);
        });
        expect(counter.total()).toBe(before);
        expect(inner.isReentrant).toBe(true);
        expect(inner.fencingToken).toBe(outer.fencingToken);
        expect(await inner.release()).toBe(false);
        expect(outer.isHeld).toBe(true);
      });
      expect(manager.current(key)).toBeUndefined();
      expect(await manager.inspect(key)).toBeNull();
    });

    it("keeps each manager's context to itself", async () => {
      const a = fixture.manager();
      const b = fixture.manager();
      const key = newKey('scoped');
      await a.withLock(key, async () => {
        expect(b.current(key)).toBeUndefined();
        expect(await b.tryAcquire(key)).toBeNull();
      });
    });

    it('releases in finally when the callback throws', async () => {
      const manager = fixture.manager();
      const key = newKey('throws');
      await expect(manager.withLock(key, async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
      expect(await manager.inspect(key)).toBeNull();
    });

    it('leaves no timer pending once its locks are released (serverless invocations end clean)', async () => {
      const manager = fixture.manager();
      const realSetTimeout = globalThis.setTimeout;
      const realClearTimeout = globalThis.clearTimeout;
      const pending = new Set<unknown>();
      const setSpy = jest.spyOn(globalThis, 'setTimeout').mockImplementation(((fn: () => void, ms?: number) => {
        const handle = realSetTimeout(() => {
          pending.delete(handle);
          fn();
        }, ms);
        pending.add(handle);
        return handle;
      }) as typeof setTimeout);
      const clearSpy = jest.spyOn(globalThis, 'clearTimeout').mockImplementation(((handle?: NodeJS.Timeout) => {
        pending.delete(handle);
        realClearTimeout(handle);
      }) as typeof clearTimeout);
      try {
        const token = await manager.withLock(
          newKey('lambda'),
          async (lock) => {
            expect(pending.size).toBe(1); // the one scheduler timer: the lease's expiry check
            await lock.extend('20s');
            return lock.fencingToken;
          },
          { heartbeat: false },
        );
        expect(token).toBeGreaterThan(0);
        expect(pending.size).toBe(0);
      } finally {
        setSpy.mockRestore();
        clearSpy.mockRestore();
      }
    });

    it('supports await using', async () => {
      const manager = fixture.manager();
      const key = newKey('using');
      let seen: Lock | undefined;
      {
        await using lock = await manager.acquire(key);
        seen = lock;
        expect(lock.isHeld).toBe(true);
      }
      expect(seen.isHeld).toBe(false);
      expect(await manager.inspect(key)).toBeNull();
    });
  });

  describe('bad input', () => {
    it.each([
      ['an empty key', '', undefined, /Lock key must be a non-empty string/],
      ['a key over 2048 UTF-8 bytes', 'é'.repeat(1_025), undefined, /is 2050 bytes in UTF-8 .* at most 2048 bytes/],
      ['a non-string key', 42 as unknown as string, undefined, /Lock key must be a string; got 42/],
      ['a key with a lone surrogate', 'a\uD800b', undefined, /contains a lone UTF-16 surrogate/],
      ['a zero lease', 'k', { leaseDuration: '0s' }, /leaseDuration must be a positive duration/],
      ['a malformed lease', 'k', { leaseDuration: 'soon' }, /leaseDuration must be a positive duration; got "soon"/],
      ['a malformed wait', 'k', { wait: 'forever' }, /wait must be a positive duration/],
      ['data over the item size', 'k', { data: { big: 'x'.repeat(420_000) } }, /Lock data for "k" is \d+ bytes as JSON; at most/],
      ['data that is not JSON', 'k', { data: { n: 1n } }, /must be JSON-serialisable/],
      ['a lease too short to use', 'k', { leaseDuration: 50 }, /leaseDuration must be at least 100 ms; got 50 ms/],
    ])('rejects %s before any request', async (_label, key, options, message) => {
      const manager = fixture.manager();
      const counter = countRequests(manager.client);
      const error = await rejectionOf(manager.acquire(key, options as never));
      expect(error).toBeInstanceOf(LockValidationError);
      expect(error.message).toMatch(message);
      expect(counter.total()).toBe(0);
    });

    it('tells a bad key apart from other bad input: a LockKeyError with its problem (a non-string key is a programming error)', async () => {
      const manager = fixture.manager();
      for (const [key, problem] of [
        ['', 'empty'],
        [' \t', 'blank'],
        ['é'.repeat(1_025), 'too-long'],
        ['a\uD800b', 'not-well-formed'],
      ]) {
        const error = await rejectionOf(manager.acquire(key));
        expect(error).toBeInstanceOf(LockKeyError);
        expect((error as LockKeyError).problem).toBe(problem);
      }
      for (const other of [
        await rejectionOf(manager.acquire(42 as unknown as string)),
        await rejectionOf(manager.acquire('k', { wait: 'forever' })),
      ]) {
        expect(other).toBeInstanceOf(LockValidationError);
        expect(other).not.toBeInstanceOf(LockKeyError);
      }
    });

    it('rejects unknown option names of acquire(), tryAcquire() and withLock() with the closest name, before any request', async () => {
      const manager = fixture.manager();
      const counter = countRequests(manager.client);
      const cases: [Promise<unknown>, RegExp][] = [
        [
          manager.acquire('k', { leaseDurations: '5s' } as never),
          /^acquire\(\) has no option "leaseDurations"; did you mean "leaseDuration"\?/,
        ],
        [
          manager.tryAcquire('k', { wait: '5s' } as never),
          /^tryAcquire\(\) has no option "wait"\. Its options: signal, leaseDuration, data, heartbeat, limit, fireTime, mode\./,
        ],
        [
          manager.withLock('k', () => 1, { hearbeat: false } as never),
          /^withLock\(\) has no option "hearbeat"; did you mean "heartbeat"\?/,
        ],
        [manager.acquire('k', { heartbeat: 'no' } as never), /^acquire\(\) option "heartbeat" must be true or false; got "no"\./],
      ];
      for (const [call, message] of cases) {
        const error = await rejectionOf(call);
        expect(error).toBeInstanceOf(LockValidationError);
        expect(error.message).toMatch(message);
      }
      expect(counter.total()).toBe(0);
    });

    it('rejects a missing lease id of renewLease and releaseLease before any request', async () => {
      const manager = fixture.manager();
      const counter = countRequests(manager.client);
      for (const call of [() => manager.releaseLease('k', undefined as never), () => manager.renewLease('k', '')]) {
        const error = await rejectionOf(call());
        expect(error).toBeInstanceOf(LockValidationError);
        expect(error.message).toMatch(/^leaseId must be the non-empty lease id/);
      }
      expect(counter.total()).toBe(0);
    });

    it('accepts a key of exactly 2048 UTF-8 bytes', async () => {
      const manager = fixture.manager();
      const lock = await manager.acquire('k'.repeat(2_048));
      await lock.release();
    });
  });

  describe('shutdown', () => {
    it('releases held locks, rejects waiters and refuses new work', async () => {
      const manager = fixture.manager();
      const other = fixture.manager();
      const held = newKey('held');
      const busy = newKey('busy-on-close');
      await manager.acquire(held);
      const blocker = await other.acquire(busy);
      const waiting = rejectionOf(manager.acquire(busy, { wait: true }));
      await sleep(100);
      await manager.close();
      expect((await waiting).message).toMatch(/shut down/);
      expect(await other.inspect(held)).toBeNull();
      await expect(manager.acquire(newKey('after'))).rejects.toThrow(/shut down/);
      await blocker.release();
    });

    it('releases held locks before its own waiting ends (leaving a line elsewhere takes requests that may be slow)', async () => {
      // Requests time out after 20 s: the clean-up stays stuck for as long as the gate is closed.
      const manager = fixture.manager({ requestTimeout: '20s' });
      const other = fixture.manager();
      const held = newKey('held-first');
      const busy = newKey('busy-while-closing');
      await manager.acquire(held);
      const blocker = await other.acquire(busy);
      const waiting = rejectionOf(manager.acquire(busy, { wait: true }));
      await sleep(100);
      // From now on, this manager's requests for the busy key hang until the gate opens: its waiter's
      // clean-up (a read, then leaving the line) cannot end.
      let open!: () => void;
      const gate = new Promise<void>((resolve) => (open = resolve));
      manager.client.middlewareStack.add(
        (next) => async (args) => {
          if (JSON.stringify((args as { input?: unknown }).input ?? {}).includes(busy)) await gate;
          return next(args);
        },
        { step: 'initialize' },
      );
      const closing = manager.close();
      let info = await other.inspect(held);
      for (let i = 0; i < 100 && info !== null; i++) {
        await sleep(50);
        info = await other.inspect(held);
      }
      expect(info).toBeNull();
      open();
      await closing;
      expect((await waiting).message).toMatch(/shut down/);
      await blocker.release();
    });
  });
});

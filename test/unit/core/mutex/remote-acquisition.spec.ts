/**
 * One caller against the mutex item, on fake timers (which move `performance.now()`, the
 * monotonic clock) and a real in-memory store, with a fake host that records what the acquisition
 * asks of its manager: the free write, a ticket and its promotion, the pass of a silent holder,
 * and transient or other failures.
 */
import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { KeyHistory } from '../../../../lib/core/engine/key-history';
import type { HeldLease, Waiter } from '../../../../lib/core/engine/lock-state';
import type { AcquisitionHost } from '../../../../lib/core/mutex/acquisition.host';
import { RemoteAcquisition } from '../../../../lib/core/mutex/remote-acquisition';
import { unavailableError } from '../../../../lib/core/waiting/transient.retry';
import { LockBusyError } from '../../../../lib/errors/lock.errors';
import type { AcquireOptions } from '../../../../lib/interfaces/acquire-options.interface';
import type { AcquiredVia, LockEvent } from '../../../../lib/interfaces/lock-event.interface';
import type { LockRecord } from '../../../../lib/store/mutex/mutex.record';
import { MemoryMutexStore } from '../../../../lib/store/mutex/mutex.memory-store';
import { type AcquireWrite, CLAIM_LEASE_MS, type WriteResult } from '../../../../lib/store/mutex/mutex-store.protocol';
import { engineOptions, hasSettled, namedError, newCaller } from '../support/engine.fixture';

const KEY = 'nightly-report';

interface Held {
  waiter: Waiter;
  record: LockRecord;
  validFrom: number;
  via: AcquiredVia;
  leaseMs: number;
}

/** A fake host over a real store: `hold()` records the grant, `emit()` the events (with the waiter's last error at each retry). */
function fakeHost(store = new MemoryMutexStore()) {
  const { options, logger } = engineOptions({ leaseDuration: 10_000 });
  const holds: Held[] = [];
  const emitted: LockEvent[] = [];
  const lastErrorAtRetry: unknown[] = [];
  let current: Waiter | undefined;
  const host: AcquisitionHost = {
    store,
    history: new KeyHistory(),
    options,
    closing: new AbortController().signal,
    later: (task) => void task(),
    hold: (waiter, record, validFrom, via, leaseMs) => {
      holds.push({ waiter, record, validFrom, via, leaseMs });
      return { storedKey: waiter.storedKey, token: waiter.token } as HeldLease;
    },
    emit: (event) => {
      emitted.push(event);
      if (event.type === 'retry') lastErrorAtRetry.push(current?.lastError);
    },
    noteWaiting: (waiter) => {
      if (waiter.waiting) return;
      waiter.waiting = true;
      emitted.push({ type: 'waiting', key: waiter.key, owner: waiter.owner, holder: waiter.holder });
    },
    busyError: (waiter) => new LockBusyError('busy (test)', waiter.key, waiter.holder, 0),
    deadlineError: (waiter) =>
      waiter.holder ? new LockBusyError('busy (test)', waiter.key, waiter.holder, 0) : unavailableError(waiter, 1_000, waiter.lastError),
    nextWaiter: () => undefined,
  };
  /** Starts the acquisition of one caller of {@link KEY}; `result` never rejects. */
  const start = (acquire: AcquireOptions = {}) => {
    const { waiter } = newCaller(options, KEY, { leaseDuration: 10_000, wait: '30s', ...acquire });
    current = waiter;
    const acquisition = new RemoteAcquisition(host, waiter);
    const result = acquisition.run().then(
      (lease) => ({ lease, error: undefined }),
      (error: unknown) => ({ lease: undefined, error }),
    );
    return { waiter, acquisition, result };
  };
  const calls = (method: 'acquire' | 'enqueue' | 'skip' | 'markAlive' | 'heartbeat' | 'read') => jest.spyOn(store, method);
  return { store, host, holds, emitted, lastErrorAtRetry, logger, start, calls };
}

/** Another process takes the free item with `token`, on a lease of `leaseMs`. */
async function heldElsewhere(store: MemoryMutexStore, leaseMs: number, token = 'holder-token'): Promise<LockRecord> {
  const result = await store.acquire({ key: KEY, token, owner: 'other-host:1', leaseMs, condition: { kind: 'free' } });
  if (!result.ok) throw new Error('the item was not free');
  return result.record;
}

describe('RemoteAcquisition', () => {
  beforeEach(() => {
    jest.useFakeTimers({ now: 1_700_000_000_000 });
  });
  afterEach(() => {
    jest.useRealTimers();
  });

  it('takes a free item with one acquire write and holds it via "free"', async () => {
    const { store, holds, start, calls } = fakeHost();
    const acquire = calls('acquire');
    const enqueue = calls('enqueue');
    const { waiter, result } = start();
    const { lease, error } = await result;
    expect(error).toBeUndefined();
    expect(lease?.token).toBe(waiter.token);
    expect(acquire).toHaveBeenCalledTimes(1);
    expect(acquire.mock.calls[0][0]).toMatchObject({ key: KEY, token: waiter.token, condition: { kind: 'free' } });
    expect(enqueue).not.toHaveBeenCalled();
    expect(holds).toHaveLength(1);
    expect(holds[0]).toMatchObject({ waiter, via: 'free', leaseMs: 10_000 });
    expect(holds[0].record.token).toBe(waiter.token);
    expect((await store.read(KEY))?.token).toBe(waiter.token);
  });

  it('takes a ticket behind a holder, and holds on the claim lease via "promotion" once the holder’s release serves it', async () => {
    const { store, holds, emitted, start, calls } = fakeHost();
    await heldElsewhere(store, 30_000);
    const enqueue = calls('enqueue');
    const heartbeat = calls('heartbeat');
    const { waiter, result } = start();
    await jest.advanceTimersByTimeAsync(300);
    expect(holds).toEqual([]);
    expect(await hasSettled(result)).toBe(false);
    expect(enqueue).toHaveBeenCalledTimes(1);
    const queued = await store.read(KEY);
    expect(queued?.tailToken).toBe(waiter.token);
    const ticket = queued!.tail! - 1;
    expect(queued?.head).toBe(ticket - 1);
    expect(emitted.map((event) => event.type)).toEqual(['waiting']);

    // The holder releases: the same write serves the next ticket.
    expect(await store.release(KEY, { token: 'holder-token' }, 30_000, 300)).toBe(true);
    await jest.advanceTimersByTimeAsync(1_000);
    const { lease, error } = await result;
    expect(error).toBeUndefined();
    expect(lease?.token).toBe(waiter.token);
    expect(holds).toHaveLength(1);
    expect(holds[0]).toMatchObject({ via: 'promotion', leaseMs: CLAIM_LEASE_MS });
    expect(holds[0].record).toMatchObject({ head: ticket, token: undefined });
    // Promoted from a read: no write of its own before the caller gets it.
    expect(enqueue).toHaveBeenCalledTimes(1);
    expect(heartbeat).not.toHaveBeenCalled();
  });

  it('passes a holder whose version stayed the same for its lease, and holds via "takeover"', async () => {
    const { store, holds, start, calls } = fakeHost();
    const silent = await heldElsewhere(store, 400);
    const skip = calls('skip');
    const markAlive = calls('markAlive');
    const { waiter, result } = start();
    await jest.advanceTimersByTimeAsync(350);
    expect(holds).toEqual([]);
    expect(skip).not.toHaveBeenCalled();
    // Half-way through the silent lease, it answered the roll call with its ticket.
    expect(markAlive).toHaveBeenCalledTimes(1);
    await jest.advanceTimersByTimeAsync(1_000);
    const { lease, error } = await result;
    expect(error).toBeUndefined();
    expect(lease?.token).toBe(waiter.token);
    expect(skip).toHaveBeenCalledTimes(1);
    expect(skip.mock.calls[0][0]).toMatchObject({ key: KEY, rvn: silent.rvn, holder: { token: waiter.token } });
    expect(holds).toHaveLength(1);
    expect(holds[0]).toMatchObject({ via: 'takeover', leaseMs: 10_000 });
    expect(holds[0].record.token).toBe(waiter.token);
    expect(holds[0].record.fencingToken).toBeGreaterThan(silent.fencingToken!);
    // The takeover event names the holder it passed.
    expect(waiter.holder).toMatchObject({ owner: 'other-host:1', fencingToken: silent.fencingToken });
  });

  it('does not pass a holder that keeps writing heartbeats', async () => {
    const { store, holds, start, calls } = fakeHost();
    await heldElsewhere(store, 400);
    const skip = calls('skip');
    const { result } = start();
    for (let i = 0; i < 10; i++) {
      await jest.advanceTimersByTimeAsync(150);
      const beat = await store.heartbeat({
        key: KEY,
        holding: { token: 'holder-token' },
        owner: 'other-host:1',
        leaseMs: 400,
        ttlLeaseMs: 400,
      });
      expect(beat.ok).toBe(true);
    }
    expect(holds).toEqual([]);
    expect(await hasSettled(result)).toBe(false);
    // Any pass it tried was refused (the version had changed): the holder still holds.
    expect((await store.read(KEY))?.token).toBe('holder-token');
    await store.release(KEY, { token: 'holder-token' }, 400);
    await jest.advanceTimersByTimeAsync(1_000);
    expect((await result).error).toBeUndefined();
    expect(holds.map((held) => held.via)).toEqual(['promotion']);
    const passes = await Promise.all(skip.mock.results.map((call) => call.value as Promise<WriteResult>));
    expect(passes.filter((pass) => pass.ok)).toEqual([]);
  });

  it('retries a transient error after a pause, tells it with a retry event, and then takes the lock', async () => {
    const { store, holds, emitted, lastErrorAtRetry, logger, start, calls } = fakeHost();
    const throttled = namedError('ThrottlingException', 'Rate exceeded');
    const acquire = calls('acquire');
    acquire.mockRejectedValueOnce(throttled);
    const { waiter, result } = start();
    await jest.advanceTimersByTimeAsync(200);
    const { error } = await result;
    expect(error).toBeUndefined();
    expect(acquire).toHaveBeenCalledTimes(2);
    const retries = emitted.filter((event) => event.type === 'retry');
    expect(retries).toHaveLength(1);
    expect(retries[0]).toMatchObject({ key: KEY, operation: 'acquire', error: throttled });
    expect(retries[0].type === 'retry' && retries[0].delayMs).toBeGreaterThanOrEqual(37);
    expect(retries[0].type === 'retry' && retries[0].delayMs).toBeLessThanOrEqual(63);
    // The failure was the waiter's last error while it retried; the answer after it cleared it.
    expect(lastErrorAtRetry).toEqual([throttled]);
    expect(waiter.lastError).toBeUndefined();
    expect(logger.warn).toHaveBeenCalledWith(expect.stringContaining('ThrottlingException: Rate exceeded'));
    expect(holds.map((held) => held.via)).toEqual(['free']);
    expect((await store.read(KEY))?.token).toBe(waiter.token);
  });

  it('after a free write that got no answer, reads the item before writing again: its own token there, it holds', async () => {
    const { store, holds, start, calls } = fakeHost();
    const acquire = calls('acquire');
    const read = calls('read');
    // Applied, and its answer lost (a time-out in a burst of first asks).
    acquire.mockImplementationOnce(async (write) => {
      await MemoryMutexStore.prototype.acquire.call(store, write as AcquireWrite);
      throw namedError('TimeoutError', 'no answer within 3000 ms');
    });
    const { waiter, result } = start();
    await jest.advanceTimersByTimeAsync(200);
    expect((await result).error).toBeUndefined();
    // One read instead of a second free write (which would fail on its own token, a write unit each time).
    expect(acquire).toHaveBeenCalledTimes(1);
    expect(read).toHaveBeenCalledTimes(1);
    expect(holds.map((held) => held.record.token)).toEqual([waiter.token]);
  });

  it('throws a non-transient error on, without retrying', async () => {
    const { holds, emitted, start, calls } = fakeHost();
    const denied = namedError('AccessDeniedException', 'not allowed');
    const acquire = calls('acquire');
    acquire.mockRejectedValue(denied);
    const { result } = start();
    await jest.advanceTimersByTimeAsync(1_000);
    const { lease, error } = await result;
    expect(lease).toBeUndefined();
    expect(error).toBe(denied);
    expect(acquire).toHaveBeenCalledTimes(1);
    expect(emitted.filter((event) => event.type === 'retry')).toEqual([]);
    expect(holds).toEqual([]);
  });

  it('ends a single attempt on a held item busy, without taking a ticket', async () => {
    const { store, holds, start, calls } = fakeHost();
    const before = await heldElsewhere(store, 30_000);
    const enqueue = calls('enqueue');
    const { result } = start({ wait: false });
    await jest.advanceTimersByTimeAsync(0);
    const { error } = await result;
    expect(error).toBeInstanceOf(LockBusyError);
    expect((error as LockBusyError).holder).toMatchObject({ owner: 'other-host:1', fencingToken: before.fencingToken });
    expect(enqueue).not.toHaveBeenCalled();
    expect((await store.read(KEY))?.tail).toBe(before.tail);
    expect(holds).toEqual([]);
  });
});

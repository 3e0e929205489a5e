/**
 * One caller of a semaphore against its item, on fake timers (which move `performance.now()`) and
 * a real in-memory semaphore store: slots granted up to the limit, a line beyond it served in
 * ticket order, and a caller that gives up leaving the line at once.
 */
import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { KeyHistory } from '../../../../lib/core/engine/key-history';
import {
  type SemaphoreAcquisitionHost,
  SemaphoreAcquisition,
  type SemaphoreGranted,
} from '../../../../lib/core/semaphore/semaphore-acquisition';
import { LockBusyError } from '../../../../lib/errors/lock.errors';
import type { AcquireOptions } from '../../../../lib/interfaces/acquire-options.interface';
import type { LockEvent } from '../../../../lib/interfaces/lock-event.interface';
import type { SemaphoreRecord } from '../../../../lib/store/semaphore/semaphore.record';
import { MemorySemaphoreStore } from '../../../../lib/store/semaphore/semaphore.memory-store';
import { engineOptions, hasSettled, newCaller } from '../support/engine.fixture';

const KEY = 'exports';
const HOLD_LEASE = 30_000;

type Result = { granted: SemaphoreGranted; error?: undefined } | { granted?: undefined; error: unknown };

/** A host over a real store, remembering items as the semaphore primitive does. */
function setup(limit: number) {
  const { options } = engineOptions({ leaseDuration: HOLD_LEASE });
  const store = new MemorySemaphoreStore();
  const seen = new Map<string, SemaphoreRecord>();
  const emitted: LockEvent[] = [];
  const host: SemaphoreAcquisitionHost = {
    store,
    history: new KeyHistory(),
    options,
    lastSeen: (key) => seen.get(key),
    remember: (record) => void seen.set(record.key, record),
    emit: (event) => void emitted.push(event),
    noteWaiting: (waiter) => {
      if (waiter.waiting) return;
      waiter.waiting = true;
      emitted.push({ type: 'waiting', key: waiter.key, owner: waiter.owner });
    },
  };
  /** Starts one caller's acquisition of a slot; `result` never rejects. */
  const start = (acquire: AcquireOptions = {}) => {
    const { waiter } = newCaller(options, KEY, { wait: '60s', ...acquire });
    const result: Promise<Result> = new SemaphoreAcquisition(host, waiter, limit).run().then(
      (granted) => ({ granted }),
      (error: unknown) => ({ error }),
    );
    return { waiter, result };
  };
  const read = async (): Promise<SemaphoreRecord> => {
    const item = await store.read(KEY);
    if (!item) throw new Error('no semaphore item');
    return item;
  };
  return { store, emitted, start, read };
}

/** The caller's grant, or a failure naming its error. */
async function grantOf(result: Promise<Result>): Promise<SemaphoreGranted> {
  const { granted, error } = await result;
  if (!granted) throw new Error(`no slot granted: ${String(error)}`);
  return granted;
}

describe('SemaphoreAcquisition', () => {
  beforeEach(() => {
    jest.useFakeTimers({ now: 1_700_000_000_000 });
  });
  afterEach(() => {
    jest.useRealTimers();
  });

  it('grants slots up to the limit, then puts the next caller in line until a slot is released', async () => {
    const { store, emitted, start, read } = setup(2);
    const first = start();
    const a = await grantOf(first.result);
    const second = start();
    const b = await grantOf(second.result);
    expect([a.via, b.via]).toEqual(['free', 'free']);
    expect(a.holder.token).toBe(first.waiter.token);
    expect(b.holder.token).toBe(second.waiter.token);
    expect(b.holder.fencingToken).toBeGreaterThan(a.holder.fencingToken);

    const enqueue = jest.spyOn(store, 'enqueue');
    const third = start();
    await jest.advanceTimersByTimeAsync(2_000);
    expect(await hasSettled(third.result)).toBe(false);
    expect(enqueue).toHaveBeenCalledTimes(1);
    const full = await read();
    expect(full.count).toBe(2);
    expect(full.tail - full.head).toBe(1);
    expect(full.tailToken).toBe(third.waiter.token);
    expect(emitted).toEqual([expect.objectContaining({ type: 'waiting', key: KEY })]);

    expect(await store.release(KEY, first.waiter.token, HOLD_LEASE, 2_000)).toBe(true);
    await jest.advanceTimersByTimeAsync(1_500);
    const c = await grantOf(third.result);
    expect(c.via).toBe('promotion');
    expect(c.holder.token).toBe(third.waiter.token);
    expect(c.holder.fencingToken).toBeGreaterThan(b.holder.fencingToken);
    const after = await read();
    expect(after.count).toBe(2);
    expect(after.head).toBe(after.tail);
  });

  it('ends a single attempt on a full semaphore busy, without taking a ticket', async () => {
    const { store, start, read } = setup(1);
    await grantOf(start().result);
    const enqueue = jest.spyOn(store, 'enqueue');
    const { result } = start({ wait: false });
    const { error } = await result;
    expect(error).toBeInstanceOf(LockBusyError);
    expect((error as LockBusyError).message).toContain('one attempt (wait: false)');
    expect(enqueue).not.toHaveBeenCalled();
    const item = await read();
    expect(item.tail).toBe(item.head);
  });

  it('gives up its ticket when the caller gives up, so the next one in line is admitted at once', async () => {
    const { store, start, read } = setup(1);
    const holder = start();
    await grantOf(holder.result);
    const abandon = jest.spyOn(store, 'abandon');
    const quitter = start();
    await jest.advanceTimersByTimeAsync(10);
    const next = start();
    await jest.advanceTimersByTimeAsync(500);
    const line = await read();
    expect(line.tail - line.head).toBe(2);
    const quitterTicket = line.head;

    const reason = new Error('caller gave up (test)');
    quitter.waiter.cancel.abort(reason);
    expect((await quitter.result).error).toBe(reason);
    expect(abandon).toHaveBeenCalledTimes(1);
    expect(abandon).toHaveBeenCalledWith(KEY, quitterTicket);
    expect((await read()).gone).toEqual([quitterTicket]);

    // The slot frees: the caller behind the one that gave up gets it at its next read, long
    // before a silent head of line would be passed.
    await store.release(KEY, holder.waiter.token, HOLD_LEASE, 500);
    await jest.advanceTimersByTimeAsync(1_500);
    const granted = await grantOf(next.result);
    expect(granted.holder.token).toBe(next.waiter.token);
    expect(granted.via).toBe('promotion');
    const after = await read();
    expect(after.head).toBe(after.tail);
    expect(after.gone).toEqual([]);
  });
});

/**
 * The local queues of callers per key, wired as the mutex wires them (a real `LeaseKeeper` and
 * `LockReleaser` over an in-memory store), on fake timers: FIFO order among the callers of one
 * process, a single attempt behind a local holder, deadlines, once-only settling, and shutdown.
 */
import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { LockBusyError } from '../../../../lib/errors/lock.errors';
import { eventsOf, hasSettled, mutexEngine } from '../support/engine.fixture';

const KEY = 'payroll';

describe('KeyQueues', () => {
  beforeEach(() => {
    jest.useFakeTimers({ now: 1_700_000_000_000 });
  });
  afterEach(() => {
    jest.useRealTimers();
  });

  it('serves the callers of one key in the order they came, one at a time', async () => {
    const engine = mutexEngine();
    const enqueue = jest.spyOn(engine.store, 'enqueue');
    const order: string[] = [];
    const callers = ['a', 'b', 'c'].map((name) => {
      const caller = engine.acquire(KEY, { wait: '30s' });
      void caller.outcome.then(() => order.push(name));
      return caller;
    });
    await jest.advanceTimersByTimeAsync(0);
    expect(order).toEqual(['a']);
    // The callers behind a caller of this process wait locally: they told they wait, and took no ticket.
    expect(eventsOf(engine.seen, 'waiting')).toHaveLength(2);
    expect(enqueue).not.toHaveBeenCalled();
    for (const [index, caller] of callers.entries()) {
      const { lock } = await caller.outcome;
      expect(lock?.isHeld).toBe(true);
      await jest.advanceTimersByTimeAsync(20);
      expect(order).toHaveLength(index + 1);
      await lock!.release();
      await jest.advanceTimersByTimeAsync(0);
    }
    expect(order).toEqual(['a', 'b', 'c']);
    expect(enqueue).not.toHaveBeenCalled();
    await engine.close();
  });

  it('settles a single attempt behind a local holder busy at once, without a request', async () => {
    const engine = mutexEngine();
    const { lock } = await engine.acquire(KEY).outcome;
    const requests = (['acquire', 'enqueue', 'read', 'skip', 'markAlive'] as const).map((method) => jest.spyOn(engine.store, method));
    const single = engine.acquire(KEY, { wait: false });
    // Settled within enqueue(), before any timer or answer.
    expect(single.waiter.settled).toBe(true);
    expect(single.reject).toHaveBeenCalledTimes(1);
    const { error } = await single.outcome;
    expect(error).toBeInstanceOf(LockBusyError);
    const busy = error as LockBusyError;
    expect(busy.holder).toMatchObject({ owner: 'this-process', fencingToken: lock!.fencingToken });
    expect(busy.message).toContain('one attempt (wait: false)');
    for (const request of requests) expect(request).not.toHaveBeenCalled();
    expect(eventsOf(engine.seen, 'busy')).toHaveLength(1);
    expect(engine.queues.slot(KEY)?.waiters).toEqual([]);
    await engine.close();
  });

  it('settles a caller waiting behind a local holder busy at its deadline', async () => {
    const engine = mutexEngine();
    const { lock } = await engine.acquire(KEY).outcome;
    const waiting = engine.acquire(KEY, { wait: 300 });
    await jest.advanceTimersByTimeAsync(299);
    expect(waiting.waiter.settled).toBe(false);
    await jest.advanceTimersByTimeAsync(1);
    const { error } = await waiting.outcome;
    expect(error).toBeInstanceOf(LockBusyError);
    expect((error as LockBusyError).waitedMs).toBe(300);
    expect((error as LockBusyError).holder?.fencingToken).toBe(lock!.fencingToken);
    expect((error as LockBusyError).message).toContain('waiting 300 ms');
    await engine.close();
  });

  it('settles a caller once: a later outcome is ignored, and it is out of the queue', async () => {
    const engine = mutexEngine();
    const { lock } = await engine.acquire(KEY).outcome;
    const waiting = engine.acquire(KEY, { wait: '30s' });
    const first = new LockBusyError('first (test)', KEY, undefined, 1);
    engine.queues.settle(waiting.waiter, first);
    engine.queues.settle(waiting.waiter, new LockBusyError('second (test)', KEY, undefined, 2));
    engine.queues.settle(waiting.waiter, lock);
    expect(waiting.reject).toHaveBeenCalledTimes(1);
    expect(waiting.resolve).not.toHaveBeenCalled();
    expect((await waiting.outcome).error).toBe(first);
    expect(eventsOf(engine.seen, 'busy')).toHaveLength(1);
    expect(engine.queues.slot(KEY)?.waiters).not.toContain(waiting.waiter);
    // Released, the lock goes to nobody: the item is free.
    await lock!.release();
    await jest.advanceTimersByTimeAsync(0);
    expect((await engine.store.read(KEY))?.token).toBeUndefined();
    expect(waiting.resolve).not.toHaveBeenCalled();
    await engine.close();
  });

  it('settles a caller whose signal aborts with its reason, and leaves the lock to the next one', async () => {
    const engine = mutexEngine();
    const { lock } = await engine.acquire(KEY).outcome;
    const controller = new AbortController();
    const gaveUp = engine.acquire(KEY, { wait: '30s', signal: controller.signal });
    const next = engine.acquire(KEY, { wait: '30s' });
    const reason = new Error('caller gave up (test)');
    controller.abort(reason);
    expect((await gaveUp.outcome).error).toBe(reason);
    await lock!.release();
    await jest.advanceTimersByTimeAsync(0);
    const { lock: handed } = await next.outcome;
    expect(handed?.isHeld).toBe(true);
    expect(gaveUp.resolve).not.toHaveBeenCalled();
    await engine.close();
  });

  it('close() settles every waiting caller with the error and ends the acquisitions running', async () => {
    const engine = mutexEngine();
    const { lock } = await engine.acquire(KEY).outcome;
    const behindLocal = [engine.acquire(KEY, { wait: '30s' }), engine.acquire(KEY, { wait: '30s' })];
    // Another process holds a second key: this caller is in line for it in the item.
    await engine.store.acquire({ key: 'other', token: 'elsewhere', owner: 'other-host:1', leaseMs: 30_000, condition: { kind: 'free' } });
    const remote = engine.acquire('other', { wait: '30s' });
    await jest.advanceTimersByTimeAsync(100);
    expect((await engine.store.read('other'))?.tailToken).toBe(remote.waiter.token);
    expect(await hasSettled(remote.outcome)).toBe(false);

    const shutdown = new Error('shutting down (test)');
    const closed = engine.queues.close(shutdown);
    for (const caller of [...behindLocal, remote]) expect((await caller.outcome).error).toBe(shutdown);
    await closed;
    expect(engine.queues.slot(KEY)?.waiters).toEqual([]);
    // The local holder is not the queues' to release.
    expect(lock?.isHeld).toBe(true);
    await engine.close();
  });
});

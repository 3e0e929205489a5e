/**
 * Real collaborators for the engine's unit specs: resolved options with a silent logger, lock
 * events that record what they emit, callers (`Waiter`s) made as the primitives make them, and the
 * mutex's pieces (`LeaseKeeper`, `KeyQueues`, `LockReleaser`) wired as `MutexPrimitive` wires them,
 * over an in-memory mutex store.
 */
import { jest } from '@jest/globals';
import { KeyHistory } from '../../../../lib/core/engine/key-history';
import { LeaseKeeper } from '../../../../lib/core/engine/lease.keeper';
import type { Lock } from '../../../../lib/core/engine/lock';
import { LockEvents } from '../../../../lib/core/engine/lock.events';
import { type ResolvedLockOptions, resolveLockOptions } from '../../../../lib/core/engine/lock-options.resolver';
import type { Waiter } from '../../../../lib/core/engine/lock-state';
import { createWaiter } from '../../../../lib/core/engine/waiter.factory';
import { KeyQueues } from '../../../../lib/core/mutex/key.queues';
import { LockReleaser } from '../../../../lib/core/mutex/lock.releaser';
import type { AcquireOptions } from '../../../../lib/interfaces/acquire-options.interface';
import type { DynamoLockOptions } from '../../../../lib/interfaces/dynamo-lock-options.interface';
import type { LockEvent } from '../../../../lib/interfaces/lock-event.interface';
import { MemoryMutexStore } from '../../../../lib/store/mutex/mutex.memory-store';

/** A logger that keeps quiet; its `warn` is a mock, so a spec can read what was warned. */
export function silentLogger() {
  return {
    log: jest.fn<(message: unknown) => void>(),
    warn: jest.fn<(message: unknown) => void>(),
    debug: jest.fn<(message: unknown) => void>(),
  };
}

/** The options of a manager (a 1 s lease unless told), a silent logger, no telemetry; `seen` collects every event. */
export function engineOptions(overrides: DynamoLockOptions = {}) {
  const logger = silentLogger();
  const seen: LockEvent[] = [];
  const options = resolveLockOptions({
    leaseDuration: 1_000,
    ownerName: 'this-process',
    telemetry: false,
    logger,
    onEvent: (event) => void seen.push(event),
    ...overrides,
  });
  const events = new LockEvents(options.logger, options);
  return { options, logger, seen, events };
}

/** How a caller's call ended: with its lock, or an error. */
export type Outcome = { lock: Lock; error?: undefined } | { lock?: undefined; error: unknown };

/** Settles to the outcome of `promise`, never rejecting (so no rejection goes unhandled while fake timers run). */
export function outcomeOf(promise: Promise<Lock>): Promise<Outcome> {
  return promise.then(
    (lock) => ({ lock }),
    (error: unknown) => ({ error }),
  );
}

/** A caller of `key` as a primitive makes it (`createWaiter`), with its promise wired to `resolve`/`reject`. */
export function newCaller(options: ResolvedLockOptions, key: string, acquire: AcquireOptions = {}, storedKey = key) {
  const waiter: Waiter = createWaiter(options, () => undefined, key, storedKey, acquire);
  const resolve = jest.fn<(lock: Lock) => void>();
  const reject = jest.fn<(error: unknown) => void>();
  const promise = new Promise<Lock>((res, rej) => {
    waiter.resolve = (lock) => {
      resolve(lock);
      res(lock);
    };
    waiter.reject = (error) => {
      reject(error);
      rej(error);
    };
  });
  const outcome = outcomeOf(promise);
  return { waiter, outcome, resolve, reject };
}

/** Whether `promise` has settled, after the microtasks queued so far ran. */
export async function hasSettled(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  for (let i = 0; i < 20; i++) await Promise.resolve();
  return settled;
}

/** The error `Error` subclasses of the SDK look like: a name, a message. */
export function namedError(name: string, message = `${name} (test)`): Error {
  return Object.assign(new Error(message), { name });
}

/**
 * The mutex of one process over an in-memory store, wired as `MutexPrimitive` wires it: a
 * `LeaseKeeper`, the `KeyQueues` and a `LockReleaser`, sharing a `KeyHistory` and `LockEvents`.
 * `acquire()` queues a caller as `MutexPrimitive.acquire()` does.
 */
export function mutexEngine(overrides: DynamoLockOptions = {}, store = new MemoryMutexStore()) {
  const { options, logger, seen, events } = engineOptions(overrides);
  const history = new KeyHistory();
  let closed = false;
  const releaseQuietly = async (lock: Lock): Promise<void> => {
    await releaser.release(lock).catch(() => undefined);
  };
  const keeper: LeaseKeeper = new LeaseKeeper({
    options,
    store,
    history,
    events,
    lockHost: {
      release: (lock) => releaser.release(lock),
      extend: (lock, leaseDuration) => keeper.extend(lock, leaseDuration),
      checkHeld: (lock) => keeper.checkHeld(lock),
      // Fenced writes are tested in test/fencing, with stores.
      transact: () => Promise.reject(new Error('no fenced writes in this fixture')),
      fencedWrite: () => Promise.reject(new Error('no fenced writes in this fixture')),
    },
    onLost: (lease) => queues.onLost(lease),
  });
  const queues: KeyQueues = new KeyQueues({
    options,
    store,
    history,
    events,
    hold: (waiter, record, validFrom, via, leaseMs) => keeper.hold(waiter, record, validFrom, via, leaseMs),
    releaseQuietly,
  });
  const releaser: LockReleaser = new LockReleaser({
    options,
    store,
    history,
    events,
    keeper,
    queues,
    isClosed: () => closed,
    releaseQuietly,
  });
  /** Queues a caller of `key`, as `MutexPrimitive.acquire()` does. */
  const acquire = (key: string, acquireOptions: AcquireOptions = {}) => {
    const caller = newCaller(options, key, acquireOptions);
    queues.enqueue(caller.waiter, acquireOptions.signal);
    return caller;
  };
  /** Shuts the pieces down as `MutexPrimitive.close()` and `stop()` do. */
  const close = async (): Promise<void> => {
    closed = true;
    await queues.close(new Error('engine closed (test)'));
    await Promise.allSettled(keeper.all().map((lease) => releaser.release(lease.lock)));
    await releaser.idle();
    keeper.close();
  };
  return { options, logger, seen, events, store, history, keeper, queues, releaser, acquire, close };
}

/** The events of `type` among `seen`. */
export function eventsOf<T extends LockEvent['type']>(seen: LockEvent[], type: T): Extract<LockEvent, { type: T }>[] {
  return seen.filter((event): event is Extract<LockEvent, { type: T }> => event.type === type);
}

import type { AcquireOptions } from '../../interfaces/acquire-options.interface';
import type { Lock } from './lock';
import type { Waiter } from './lock-state';
import type { PrimitiveContext } from './primitive.interface';
import { createWaiter } from './waiter.factory';
import { settleWaiter } from './waiter.settle';

/** How a primitive runs one caller's acquisition (see {@link WaiterRuns.start}). */
export interface WaiterRun<T> {
  /** Adjusts the new waiter before its trace starts (a reader's token, say). */
  prepare?(waiter: Waiter): void;
  /** The acquisition: resolves with what was granted, rejects with why not. */
  run(waiter: Waiter): Promise<T>;
  /**
   * Starts holding what was granted and returns its lock. Runs before the caller is settled, and
   * also when the caller has given up meanwhile (the lock is then given back at once).
   */
  grant(waiter: Waiter, granted: T): Lock;
  /** Work the grant left for later (passes of dead entries, say): runs once the caller is settled. */
  afterGrant?(granted: T): void;
}

/**
 * The callers of a primitive that runs one acquisition per caller (semaphores, read locks): each
 * gets a waiter (deadline, trace, the caller's signal), its acquisition runs, and the caller is
 * settled once with the lock or the error; a lock granted after the caller gave up is given back.
 */
export class WaiterRuns {
  private readonly waiting = new Set<Waiter>();
  private readonly attempts = new Set<Promise<void>>();

  constructor(private readonly context: PrimitiveContext) {}

  /**
   * Runs an acquisition of `itemKey` for a new caller of `key`.
   * @returns the lock; rejects with `LockConfigurationError` when the manager is shut down, with
   *   what `createWaiter()` throws (bad options, the reason of a signal already aborted), or with
   *   why the acquisition ended without a grant.
   */
  start<T>(key: string, itemKey: string, options: AcquireOptions, how: WaiterRun<T>): Promise<Lock> {
    const { context } = this;
    const { events } = context;
    let waiter: Waiter;
    try {
      context.assertOpen();
      waiter = createWaiter(context.options, () => context.assertOpen(), key, itemKey, options);
      how.prepare?.(waiter);
      waiter.trace = events.startAcquire(key, waiter.owner, waiter.deadline - waiter.startedAt);
    } catch (error) {
      return Promise.reject(error);
    }
    return new Promise<Lock>((resolve, reject) => {
      waiter.resolve = resolve;
      waiter.reject = reject;
      this.waiting.add(waiter);
      const { signal } = options;
      const onAbort = () => settleWaiter(events, waiter, signal?.reason);
      signal?.addEventListener('abort', onAbort, { once: true });
      waiter.cancel.signal.addEventListener('abort', () => signal?.removeEventListener('abort', onAbort));
      const attempt = how.run(waiter).then(
        (granted) => {
          let lock: Lock;
          try {
            lock = how.grant(waiter, granted);
          } catch (error) {
            settleWaiter(events, waiter, error);
            return;
          }
          if (waiter.settled) void context.releaseQuietly(lock);
          else settleWaiter(events, waiter, lock);
          how.afterGrant?.(granted);
        },
        (error: unknown) => settleWaiter(events, waiter, error),
      );
      this.track(attempt.finally(() => this.waiting.delete(waiter)));
    });
  }

  /** Counts a task (an acquisition, an upgrade) that shutdown waits for until it settles. */
  track(task: Promise<unknown>): void {
    const tracked = task.then(
      () => undefined,
      () => undefined,
    );
    this.attempts.add(tracked);
    void tracked.finally(() => this.attempts.delete(tracked));
  }

  /** Whether a caller waits for the item `itemKey`. */
  waitsFor(itemKey: string): boolean {
    return [...this.waiting].some((waiter) => waiter.storedKey === itemKey);
  }

  /** At shutdown: every waiting caller settled with `error`, then every tracked task waited for. */
  async close(error: unknown): Promise<void> {
    for (const waiter of this.waiting) settleWaiter(this.context.events, waiter, error);
    await Promise.allSettled([...this.attempts]);
  }
}

import { AsyncLocalStorage } from 'node:async_hooks';
import type { Lock } from './lock';

/**
 * The locks held by the current async context, innermost last. Each manager has its own
 * context, so several Nest apps in one process never see each other's locks.
 */
export class LockContext {
  private readonly storage = new AsyncLocalStorage<ReadonlyMap<string, Lock>>();

  /** Runs `fn` with `lock` (stored under `storedKey`) added to the context. */
  run<T>(storedKey: string, lock: Lock, fn: () => T): T {
    const held = new Map(this.storage.getStore());
    held.delete(storedKey);
    held.set(storedKey, lock);
    return this.storage.run(held, fn);
  }

  /**
   * The lock the context holds for `storedKey`, or the innermost one when no key is given; only
   * locks that pass `usable` count (a released lock stays in the context of work started under it).
   */
  get(storedKey: string | undefined, usable: (lock: Lock) => boolean): Lock | undefined {
    const held = this.storage.getStore();
    if (!held) return undefined;
    if (storedKey !== undefined) {
      const lock = held.get(storedKey);
      return lock && usable(lock) ? lock : undefined;
    }
    let last: Lock | undefined;
    for (const lock of held.values()) if (usable(lock)) last = lock;
    return last;
  }
}

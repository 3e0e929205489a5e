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

  /** The lock the context holds for `storedKey`, or the innermost one when no key is given. */
  get(storedKey?: string): Lock | undefined {
    const held = this.storage.getStore();
    if (!held) return undefined;
    if (storedKey !== undefined) return held.get(storedKey);
    let last: Lock | undefined;
    for (const lock of held.values()) last = lock;
    return last;
  }
}

import { AsyncLocalStorage } from 'node:async_hooks';
import { type Lock, rootLock } from './lock';

/**
 * The locks held by the current async context, innermost last: what `current()` and re-entrant
 * acquisitions see. Each manager has its own context, so several Nest apps in one process never
 * see each other's locks. A lock counts only while it is held and its scope has not ended (a
 * released lock stays in the context of work started under it: timers, listeners).
 */
export class LockContext {
  private readonly storage = new AsyncLocalStorage<ReadonlyMap<string, Lock>>();
  /** Locks whose re-entrant scope ended before their release (see {@link endScope}). */
  private readonly scopesEnded = new WeakSet<Lock>();

  /** Runs `fn` with `lock` (stored under `storedKey`) added to the context. */
  run<T>(storedKey: string, lock: Lock, fn: () => T): T {
    const held = new Map(this.storage.getStore());
    held.delete(storedKey);
    held.set(storedKey, lock);
    return this.storage.run(held, fn);
  }

  /** The usable lock the context holds for `storedKey`, or the innermost one when no key is given. */
  get(storedKey?: string): Lock | undefined {
    const held = this.storage.getStore();
    if (!held) return undefined;
    if (storedKey !== undefined) {
      const lock = held.get(storedKey);
      return lock && this.inScope(lock) ? lock : undefined;
    }
    let last: Lock | undefined;
    for (const lock of held.values()) if (this.inScope(lock)) last = lock;
    return last;
  }

  /**
   * Ends the re-entrant scope of `lock` before its release: work still running in its async
   * context no longer sees it through `current()` nor joins it re-entrantly, and waits for the
   * lock like any other caller. Used when a release is delayed (`holdAtLeast`).
   */
  endScope(lock: Lock): void {
    this.scopesEnded.add(lock);
  }

  /** Whether a lock in the async context may still be used: held, and its scope not ended. */
  private inScope(lock: Lock): boolean {
    return !this.scopesEnded.has(rootLock(lock)) && lock.isHeld;
  }
}

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

  /**
   * @param successor the lock that took the place of one in the context, if any (an upgradeable
   *   read lock's write lock after `upgrade()`): the context then holds that one.
   */
  constructor(private readonly successor: (lock: Lock) => Lock | undefined = () => undefined) {}

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
    if (storedKey !== undefined) return this.usable(held.get(storedKey));
    let last: Lock | undefined;
    for (const entry of held.values()) last = this.usable(entry) ?? last;
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
  /** The lock a context entry stands for now (its successor, if it has one), while its scope lasts. */
  private usable(entry: Lock | undefined): Lock | undefined {
    if (!entry || this.scopesEnded.has(rootLock(entry))) return undefined;
    const lock = this.successor(entry) ?? entry;
    return this.inScope(lock) ? lock : undefined;
  }

  private inScope(lock: Lock): boolean {
    return !this.scopesEnded.has(rootLock(lock)) && lock.isHeld;
  }
}

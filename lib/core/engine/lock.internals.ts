import type { LockStores } from '../../store/lock-stores';
import type { ReleaseFire } from '../../store/mutex/mutex-store.protocol';
import type { Lock } from './lock';
import type { LockEvent } from '../../interfaces/lock-event.interface';

/**
 * What the Nest integration (the `@WithLock` decorator, the health indicator) needs of a lock
 * manager beyond its public API. Kept out of the public types: app code cannot reach it.
 */
export interface LockInternals {
  /** Where the lock items live. */
  readonly stores: LockStores;
  /** Runs `fn` with `lock` visible to `current()` and to re-entrant acquisitions. */
  readonly runHolding: <T>(lock: Lock, fn: () => T) => T;
  /** Releases a lock, logging (not throwing) a failure. */
  readonly releaseQuietly: (lock: Lock) => Promise<void>;
  /** Ends the re-entrant scope of `lock` before a delayed release. */
  readonly endScope: (lock: Lock) => void;
  /** Says how the run of the scheduled fire `lock` claimed ended (its release records it). */
  readonly endRun: (lock: Lock, result: ReleaseFire) => void;
  /** Passes an event to the manager's listeners (and telemetry): a scheduled fire missed. */
  readonly emit: (event: LockEvent) => void;
}

const registry = new WeakMap<object, LockInternals>();

/** Makes `internals` reachable from `owner` (a lock manager, or the service that wraps one). */
export function exposeInternals(owner: object, internals: LockInternals): void {
  registry.set(owner, internals);
}

/** The internals of a lock manager or service. @throws Error for any other object. */
export function internalsOf(owner: object): LockInternals {
  const internals = registry.get(owner);
  if (!internals) throw new Error('Not a lock manager or LockService.');
  return internals;
}

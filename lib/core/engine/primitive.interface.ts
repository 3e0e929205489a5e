import type { AcquireOptions } from '../../interfaces/acquire-options.interface';
import type { LockInfo } from '../../interfaces/lock-info.interface';
import type { LockStores } from '../../store/lock-stores';
import type { Lock } from './lock';
import type { LockEvents } from './lock.events';
import type { ResolvedLockOptions } from './lock-options.resolver';
import type { HeldLease } from './lock-state';

/**
 * What every primitive is given by its manager: the options, the stores, the events, and the
 * manager's state. A primitive sees nothing else of the manager.
 */
export interface PrimitiveContext {
  readonly options: ResolvedLockOptions;
  readonly stores: LockStores;
  readonly events: LockEvents;
  /** Gives back a lock (a failure is logged, not thrown): one whose caller gave up meanwhile. */
  releaseQuietly(lock: Lock): Promise<void>;
  /** @throws LockConfigurationError when the manager is shut down. */
  assertOpen(): void;
}

/** A call's key, once a primitive checked it: the key in mutex form, and its own item's key. */
export interface PrimitiveKey {
  /** `keyPrefix + key`: the key every primitive of the manager knows the call by. */
  readonly storedKey: string;
  /** The key of this primitive's item (and of the async context that holds it). */
  readonly itemKey: string;
}

/**
 * A kind of lock the manager serves (mutex, semaphore, ...): the seam every primitive implements.
 * The manager picks one per call, keeps one key to one primitive per process, and routes
 * `current()`, `inspect()`, `list()` and shutdown through every primitive. A new primitive is a
 * folder under `core/` with a class implementing this, listed in `primitives.ts`.
 */
export interface LockPrimitive {
  /** Whether a call with these options is for this primitive (the mutex serves every other call). */
  serves(options: AcquireOptions): boolean;
  /**
   * Checks the key and the options of a call for this primitive, before any request.
   * @throws LockValidationError (a LockKeyError for the key) naming `scope`, the public call.
   */
  resolveKey(scope: string, key: string, options: AcquireOptions): PrimitiveKey;
  /** The key of this primitive's item for a key in mutex form. */
  itemKeyOf(storedKey: string): string;
  /** Acquires for one caller (key and options checked by {@link resolveKey}). */
  acquire(key: string, resolved: PrimitiveKey, options: AcquireOptions): Promise<Lock>;
  /** Whether a caller of this manager holds or waits for the key (mutex form) through this primitive. */
  uses(storedKey: string): boolean;
  /** The message of the error for a call of another primitive on a key this one {@link uses}. */
  inUse(key: string): string;
  /** The lease behind a lock of this primitive, while it is held. */
  lease(lock: Lock): HeldLease | undefined;
  /**
   * Who holds the key (mutex form) through this primitive: `null` when its item exists and nobody
   * holds it, `undefined` when it has no item (another primitive may have one).
   */
  inspect(key: string, storedKey: string): Promise<LockInfo | null | undefined>;
  /** Every key held through this primitive whose key starts with `prefix`. */
  list(prefix: string): Promise<LockInfo[]>;
  /** Number of locks held now. */
  readonly heldCount: number;
  /** At shutdown: settles waiting callers with `error`, releases what is held, waits for writes in flight. */
  close(error: unknown): Promise<void>;
  /** After {@link close}, once nothing else may hold a lock: stops the heartbeat timer. */
  stop(): void;
}

import type { LockItemStore } from '../interfaces/lock-item-store.interface';
import type { FencingStorePort } from './fencing/fencing-store.port';
import type { MutexStorePort } from './mutex/mutex-store.port';
import type { SemaphoreStorePort } from './semaphore/semaphore-store.port';
import type { ReadStorePort } from './rw/read-store.port';
import type { StoreHealth } from './store.protocol';

/**
 * One place where lock items live (a DynamoDB table, or memory), as the engine sees it: a store per
 * primitive, and what the place itself answers (its preparation and its health). A new primitive
 * adds its store here; no store contains another.
 */
export interface LockStores extends LockItemStore {
  /** Mutex items (`acquire(key)`); leadership uses them too. */
  readonly mutex: MutexStorePort;
  /** Semaphore items (`acquire(key, { limit })`). Optional: a place without it serves mutexes only. */
  readonly semaphore?: SemaphoreStorePort;
  /** Readers on mutex items (`acquire(key, { mode: 'read' })`). Optional: a place without it has no read locks. */
  readonly read?: ReadStorePort;
  /** Fenced writes under the mutex's locks (`lock.transact()`, `lock.fencedWrite()`). Optional: a place without it has none. */
  readonly fencing?: FencingStorePort;
  /** Checks (or creates) whatever the place needs before use, e.g. the DynamoDB table. */
  prepare(create: boolean): Promise<void>;
  /**
   * Answers the health indicator (`nestjs-dynamo-lock/health`). Never rejects for an unhealthy
   * place: it reports it. Settles as soon as `signal` aborts (the check's timeout). Optional: a
   * place without it is reported as `store: 'custom'`, not checked.
   */
  health?(signal: AbortSignal): Promise<StoreHealth>;
}

const registry = new WeakMap<object, LockStores>();

/** Makes `stores` the stores behind a public handle (`MemoryLockStore`), without showing them in its type. */
export function registerStores(handle: LockItemStore, stores: LockStores): void {
  registry.set(handle, stores);
}

/**
 * The stores behind a `store` option: those of a handle such as `MemoryLockStore`, or the option
 * itself when it is a `LockStores` (the engine's own tests build those); `undefined` for anything else.
 */
export function storesOf(store: LockItemStore): LockStores | undefined {
  if (typeof store !== 'object' || store === null) return undefined;
  const registered = registry.get(store);
  if (registered) return registered;
  const candidate = store as Partial<LockStores>;
  return typeof candidate.mutex?.acquire === 'function' && typeof candidate.prepare === 'function' ? (store as LockStores) : undefined;
}

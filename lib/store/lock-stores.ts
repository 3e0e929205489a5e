import type { LockItemStore } from '../interfaces/lock-item-store.interface';
import type { MutexStorePort } from './mutex/mutex-store.port';
import type { SemaphoreStorePort } from './semaphore/semaphore-store.port';
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
  /** Checks (or creates) whatever the place needs before use, e.g. the DynamoDB table. */
  prepare(create: boolean): Promise<void>;
  /**
   * Answers the health indicator (`nestjs-dynamo-lock/health`). Never rejects for an unhealthy
   * place: it reports it. Settles as soon as `signal` aborts (the check's timeout). Optional: a
   * place without it is reported as `store: 'custom'`, not checked.
   */
  health?(signal: AbortSignal): Promise<StoreHealth>;
}

/** Whether a `store` option is a place the engine can use (it is typed opaquely in the public options). */
export function isLockStores(store: LockItemStore): store is LockStores {
  const candidate = store as Partial<LockStores>;
  return typeof candidate.mutex?.acquire === 'function' && typeof candidate.prepare === 'function';
}

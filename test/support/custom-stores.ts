import type { MemoryLockStore } from '../../lib';
import { type LockStores, storesOf } from '../../lib/store/lock-stores';
import { MemoryMutexStore } from '../../lib/store/mutex/mutex.memory-store';
import type { MutexStorePort } from '../../lib/store/mutex/mutex-store.port';
import { MemorySemaphoreStore } from '../../lib/store/semaphore/semaphore.memory-store';
import type { SemaphoreStorePort } from '../../lib/store/semaphore/semaphore-store.port';
import type { StoreHealth } from '../../lib/store/store.protocol';

/**
 * A custom place for lock items, as a test passes it in the `store` option: `mutex` (a wrapped or
 * hand-made mutex store), and `semaphore` when the test uses semaphores through it. Nothing to
 * prepare, and no `health` (the indicator reports it as `store: 'custom'`).
 */
export function customStores(mutex: MutexStorePort, semaphore?: SemaphoreStorePort): LockStores {
  return { kind: 'custom', mutex, ...(semaphore && { semaphore }), prepare: async () => {} };
}

/** The stores inside a {@link MemoryLockStore}, as the engine uses them. */
export interface MemoryStores extends LockStores {
  readonly mutex: MemoryMutexStore;
  readonly semaphore: MemorySemaphoreStore;
  health(signal: AbortSignal): Promise<StoreHealth>;
}

/**
 * The stores a {@link MemoryLockStore} keeps (private in its public type), for tests that read,
 * write or wrap its items directly: the same objects its managers use.
 */
export function memoryStoresOf(store: MemoryLockStore): MemoryStores {
  const stores = storesOf(store);
  if (!(stores?.mutex instanceof MemoryMutexStore) || !(stores.semaphore instanceof MemorySemaphoreStore) || !stores.health) {
    throw new Error('not the stores of a MemoryLockStore');
  }
  return stores as MemoryStores;
}

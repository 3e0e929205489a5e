import type { LockItemStore } from '../interfaces/lock-item-store.interface';
import { registerStores } from './lock-stores';
import { MemoryMutexStore } from './mutex/mutex.memory-store';
import { MemorySemaphoreStore } from './semaphore/semaphore.memory-store';

/** Answers after a microtask, as a real store would. */
const tick = () => Promise.resolve();

/**
 * Lock items in process memory instead of DynamoDB, for tests (`DynamoLockModule.forTesting()` uses
 * one): the same items and the same conditional writes as the DynamoDB table, each applied
 * atomically after a microtask, with no server. Managers given the same instance share its locks,
 * as instances of an app share a table.
 *
 * @example
 * ```ts
 * const store = new MemoryLockStore();
 * const a = new LockManager({ store, verifyTable: false });
 * const b = new LockManager({ store, verifyTable: false }); // a second "instance"
 * ```
 */
export class MemoryLockStore implements LockItemStore {
  /** `'memory'`. */
  readonly kind = 'memory';
  private readonly mutex = new MemoryMutexStore();
  private readonly semaphore = new MemorySemaphoreStore();

  constructor() {
    registerStores(this, {
      kind: this.kind,
      mutex: this.mutex,
      semaphore: this.semaphore,
      prepare: async () => {
        await tick();
      },
      health: async () => {
        await tick();
        return { store: 'memory' };
      },
    });
  }

  /** Number of items (free or held) the store keeps, of every kind. */
  get size(): number {
    return this.mutex.size + this.semaphore.size;
  }

  /** Forgets every item. */
  clear(): void {
    this.mutex.clear();
    this.semaphore.clear();
  }
}

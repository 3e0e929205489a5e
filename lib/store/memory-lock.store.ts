import type { LockItemStore } from '../interfaces/lock-item-store.interface';
import { MemoryFencingStore, type MemoryLockStoreOptions } from './fencing/fencing.memory-store';
import { registerStores } from './lock-stores';
import { MemoryMutexStore } from './mutex/mutex.memory-store';
import { MemorySemaphoreStore } from './semaphore/semaphore.memory-store';
import { MemoryReadStore } from './rw/read.memory-store';

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
 *
 * Fenced writes run here too, without DynamoDB: `lock.transact(items)` checks the lock item as
 * DynamoDB's `ConditionCheck` would (still this holder's; a lost lock rejects with
 * `LockLostError`), and `lock.fencedWrite(item)` refuses a write older than the last token written
 * to the same item (`LockFencedError`). Your own conditions are not evaluated (there are no
 * tables): the writes that pass go to `onWrite` (attribute-value form, the fence already added),
 * where a test applies or records them, or throws to fail the call; without `onWrite` they are
 * checked and dropped.
 *
 * @example
 * ```ts
 * const writes: MemoryWrite[] = [];
 * const store = new MemoryLockStore({ onWrite: (write) => void writes.push(write), tableKeys: { invoices: ['id'] } });
 * const app = await Test.createTestingModule({ imports: [DynamoLockModule.forTesting({ store }), InvoicesModule] }).compile();
 * ```
 */
export class MemoryLockStore implements LockItemStore {
  /** `'memory'`. */
  readonly kind = 'memory';
  private readonly mutex: MemoryMutexStore;
  private readonly semaphore = new MemorySemaphoreStore();
  private readonly fencing: MemoryFencingStore;

  /**
   * @param options where fenced writes go (`onWrite`), the key names of tables written with `Put`,
   *   and whether multi-key locks may take their keys in one all-or-none write (`transactions`).
   */
  constructor(options: MemoryLockStoreOptions = {}) {
    this.mutex = new MemoryMutexStore(options.transactions ?? true);
    this.fencing = new MemoryFencingStore(this.mutex, options);
    registerStores(this, {
      kind: this.kind,
      mutex: this.mutex,
      semaphore: this.semaphore,
      read: new MemoryReadStore(this.mutex),
      fencing: this.fencing,
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

  /** Forgets every item (and the fencing token of every item written with `fencedWrite()`). */
  clear(): void {
    this.mutex.clear();
    this.semaphore.clear();
    this.fencing.clear();
  }
}

export type { MemoryLockStoreOptions };

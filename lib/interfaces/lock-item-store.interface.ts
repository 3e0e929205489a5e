/**
 * A place for lock items other than a DynamoDB table, for the `store` option: `new MemoryLockStore()`
 * in tests. Its protocol with the engine is internal; create one, and pass the same instance to every
 * manager that must share its locks.
 */
export interface LockItemStore {
  /** What kind of place it is: `'memory'` for `MemoryLockStore`. */
  readonly kind: string;
}

/**
 * The sort key of a table shared with the app's own items (single-table design), and the value
 * every lock item has in it.
 *
 * @example
 * ```ts
 * const sortKey: LockSortKey = { name: 'SK', value: 'LOCK' };
 * ```
 */
export interface LockSortKey {
  /** The table's sort key attribute (String), e.g. `'SK'`. */
  name: string;
  /** The value of that attribute on every lock and semaphore item, e.g. `'LOCK'`; your items use others. */
  value: string;
}

/**
 * Where lock items sit in their table: the name of its partition key, and its sort key with the
 * value lock items have, if it has one. The library's own table is `{ partitionKey: 'key' }`.
 */
export interface LockTableKeys {
  /** The table's partition key attribute (String): it holds `keyPrefix` + the lock's key. */
  partitionKey: string;
  /** The table's sort key (String) and the fixed value of lock items in it; none when absent. */
  sortKey?: LockSortKey;
}

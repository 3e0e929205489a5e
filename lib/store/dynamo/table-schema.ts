import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { LockTableKeys } from '../../interfaces/lock-table-keys.interface';

/**
 * The lock table's own attributes, shared by every kind of item in it: the partition key and the
 * TTL attribute. Each primitive's record names its other attributes itself. `key` is the
 * partition key of the library's own table; a shared table names its own (`LockTableKeys`).
 */
export const TABLE_ATTR = {
  /** Partition key (String): key prefix + user key (+ a primitive's suffix). */
  key: 'key',
  /** Expiry for DynamoDB TTL, in epoch seconds; garbage collection only. */
  ttl: 'ttl',
} as const;

/** The key attributes of the library's own table: partition key `key`, no sort key. */
export const DEFAULT_TABLE_KEYS: LockTableKeys = Object.freeze({ partitionKey: TABLE_ATTR.key });

/** The placeholder of the partition key in expressions, whatever its name (every record maps `#key`). */
export const PARTITION_KEY_NAME = '#key';
/** The placeholders of the sort key's name and of lock items' value in it: long, so they never meet a record's. */
export const SORT_KEY_NAME = '#lockSortKey';
export const SORT_KEY_VALUE = ':lockSortKey';

/** The `Key` of the item of `storedKey`: its partition key, and the sort key's fixed value when the table has one. */
export function itemKeyOf(keys: LockTableKeys, storedKey: string): Record<string, AttributeValue> {
  const key: Record<string, AttributeValue> = { [keys.partitionKey]: { S: storedKey } };
  if (keys.sortKey) key[keys.sortKey.name] = { S: keys.sortKey.value };
  return key;
}

/** The stored key of an item read from a table laid out as `keys` (`''` when it has none). */
export function storedKeyOf(item: Record<string, AttributeValue>, keys: LockTableKeys): string {
  return item[keys.partitionKey]?.S ?? '';
}

/** `ExpressionAttributeNames` of the key attributes: `#key` → the partition key, `#lockSortKey` → the sort key. */
export function keyAttributeNames(keys: LockTableKeys): Record<string, string> {
  return keys.sortKey
    ? { [PARTITION_KEY_NAME]: keys.partitionKey, [SORT_KEY_NAME]: keys.sortKey.name }
    : { [PARTITION_KEY_NAME]: keys.partitionKey };
}

/**
 * Whether lock items share the table with other items, as far as the library can tell: any
 * layout but the library's own (`key`, no sort key). Scans of such a table also check each item's
 * shape, so that an item of the app's with a `token` or a `holderCount` is never listed as a lock.
 */
export function isSharedTable(keys: LockTableKeys): boolean {
  return keys.partitionKey !== TABLE_ATTR.key || keys.sortKey !== undefined;
}

/**
 * Whether `item`, found at a lock's key in a table shared with the app's items, is not a lock
 * item: it lacks one of the attributes every item of the primitive has (`shape`). In the library's
 * own table every item is a lock item.
 */
export function isForeignItem(item: Record<string, AttributeValue>, keys: LockTableKeys, shape: readonly string[]): boolean {
  return isSharedTable(keys) && shape.some((name) => item[name] === undefined);
}

/**
 * The lock table's own attributes, shared by every kind of item in it: the partition key and the
 * TTL attribute. Each primitive's record names its other attributes itself.
 */
export const TABLE_ATTR = {
  /** Partition key (String): key prefix + user key (+ a primitive's suffix). */
  key: 'key',
  /** Expiry for DynamoDB TTL, in epoch seconds; garbage collection only. */
  ttl: 'ttl',
} as const;

import type { AttributeValue } from '@aws-sdk/client-dynamodb';

/**
 * The attributes of a lock item, named once. Several are DynamoDB reserved words
 * (`key`, `owner`, `data`, `ttl`), so every expression refers to them through
 * {@link ATTRIBUTE_NAMES} placeholders, never bare.
 */
export const ATTR = {
  /** Partition key (String): key prefix + user key. */
  key: 'key',
  /** Human-readable holder name (host name and pid by default). */
  owner: 'owner',
  /** Secret owner token of the current holder; absent when the lock is free. */
  token: 'token',
  /** Record version number: a fresh random value on every write. */
  rvn: 'rvn',
  /** The holder's lease duration in milliseconds. */
  lease: 'leaseMs',
  /** Fencing counter: grows by one with every acquisition; kept on release. */
  fence: 'fence',
  /** Wall-clock acquisition time (ms since epoch); informational only. */
  acquiredAt: 'acquiredAt',
  /** Wall-clock time of the last write (ms since epoch); informational only. */
  updatedAt: 'updatedAt',
  /** JSON payload stored with the lock. */
  data: 'data',
  /** Owner token of the last release, so a retried release recognises itself. */
  released: 'releasedToken',
  /** How long the last holder kept the lock, in ms: waiters time their polls by it. */
  lastHold: 'lastHoldMs',
  /** Expiry for DynamoDB TTL, in epoch seconds; garbage collection only. */
  ttl: 'ttl',
  /**
   * Waiters from other processes, in arrival order: a list of maps with the same attribute
   * names as the lock (`token`, `owner`, `leaseMs`, `data`), so a release can promote the head
   * in the same write.
   */
  queue: 'queue',
  /** String set of the queued tokens, so a retried enqueue cannot add a waiter twice. */
  queued: 'queued',
} as const;

/** `ExpressionAttributeNames` entries for every lock attribute: `#key` → `key`, ... */
export const ATTRIBUTE_NAMES: Record<string, string> = Object.fromEntries(Object.entries(ATTR).map(([alias, name]) => [`#${alias}`, name]));

/** A lock item as read from DynamoDB. */
export interface LockRecord {
  key: string;
  owner?: string;
  token?: string;
  rvn?: string;
  leaseMs?: number;
  fencingToken?: number;
  acquiredAt?: number;
  updatedAt?: number;
  data?: string;
  /** How long the last holder kept the lock (ms, its monotonic clock): waiters time their polls by it. */
  lastHoldMs?: number;
  /** Token of the last release (or promotion) of this item. */
  released?: string;
  /** Tokens of the waiters queued in the item, head first. */
  queue: QueuedWaiter[];
}

/** A waiter recorded in a lock item's queue. */
export interface QueuedWaiter {
  token: string;
  owner?: string;
}

/** Converts a DynamoDB item into a {@link LockRecord}. */
export function toLockRecord(item: Record<string, AttributeValue>): LockRecord {
  return {
    key: item[ATTR.key]?.S ?? '',
    owner: item[ATTR.owner]?.S,
    token: item[ATTR.token]?.S,
    rvn: item[ATTR.rvn]?.S,
    leaseMs: num(item[ATTR.lease]),
    fencingToken: num(item[ATTR.fence]),
    acquiredAt: num(item[ATTR.acquiredAt]),
    updatedAt: num(item[ATTR.updatedAt]),
    data: item[ATTR.data]?.S || undefined,
    released: item[ATTR.released]?.S,
    lastHoldMs: num(item[ATTR.lastHold]),
    queue: (item[ATTR.queue]?.L ?? []).map((entry) => ({
      token: entry.M?.[ATTR.token]?.S ?? '',
      owner: entry.M?.[ATTR.owner]?.S,
    })),
  };
}

function num(value: AttributeValue | undefined): number | undefined {
  return value?.N === undefined ? undefined : Number(value.N);
}

import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { LockTableKeys } from '../../interfaces/lock-table-keys.interface';
import { DEFAULT_TABLE_KEYS, storedKeyOf, TABLE_ATTR } from '../dynamo/table-schema';

/**
 * The attributes of a semaphore item, named once. A semaphore item shares the lock table with
 * mutex items but none of their line attributes (`token`, `head`, `tail`), so a scan for held
 * mutexes never matches it; its key ends with {@link SEMAPHORE_KEY_SUFFIX}, so a key is never
 * both.
 */
export const SEM_ATTR = {
  /** Partition key (String): key prefix + user key + {@link SEMAPHORE_KEY_SUFFIX}. The library's own table's name; a shared table names its own. */
  key: TABLE_ATTR.key,
  /** The number of holders allowed; every writer states it, and a different one is refused. */
  limit: 'limit',
  /** Number of holders now (the size of `holders`). */
  count: 'holderCount',
  /** Fencing counter: the token of the last grant; every grant adds one. */
  fence: 'fence',
  /** The holders: owner token → {@link SEM_HOLDER} fields. */
  holders: 'holders',
  /**
   * The holders' fencing tokens: owner token → number. Apart from `holders`, so the grant writes it
   * from the counter in the same write (`#fences.#tok = #fence + :one` reads the counter as it was).
   */
  fences: 'fences',
  /** Next ticket to admit: waiters are admitted in ticket order. */
  head: 'lineHead',
  /** Next ticket to hand out; nobody waits when it equals `lineHead`. */
  tail: 'lineTail',
  /** Token of the last ticket taken, so a retried enqueue does not take a second one. */
  tailToken: 'tailToken',
  /** Tickets whose waiters gave up (a number set): the line skips them. */
  gone: 'goneTickets',
  /** Owner token of the last release, so a retried release recognises itself. */
  released: 'releasedToken',
  /** How long the last holder kept its slot, in ms: waiters time their reads by it. */
  lastHold: 'lastHoldMs',
  /** Wall-clock time of the last write (ms since epoch); informational only. */
  updatedAt: 'updatedAt',
  /** Expiry for DynamoDB TTL, in epoch seconds; garbage collection only. */
  ttl: TABLE_ATTR.ttl,
} as const;

/** The fields of one holder in the `holders` map (short names: they are paid for on every write). */
export const SEM_HOLDER = {
  /** Owner name. */
  owner: 'o',
  /** The holder's own record version: a new random value on its grant and every heartbeat. */
  version: 'v',
  /** Its lease in ms. */
  lease: 'l',
  /** Wall-clock grant time (ms since epoch); informational only. */
  acquiredAt: 'a',
  /** Wall-clock time of its last write; informational only. */
  updatedAt: 'u',
} as const;

/** `ExpressionAttributeNames` entries for the semaphore attributes and holder fields: `#limit` → `limit`, `#hf_owner` → `o`, ... */
export const SEM_ATTRIBUTE_NAMES: Record<string, string> = {
  ...Object.fromEntries(Object.entries(SEM_ATTR).map(([alias, name]) => [`#${alias}`, name])),
  ...Object.fromEntries(Object.entries(SEM_HOLDER).map(([alias, name]) => [`#hf_${alias}`, name])),
};

/** Appended to the stored key of a semaphore: a unit separator and a word no mutex key carries by accident. */
export const SEMAPHORE_KEY_SUFFIX = '\u001fsemaphore';

/**
 * Largest `limit` of a semaphore. The item holds one entry per holder (about 150 bytes plus its
 * owner name), so at this limit a full item is about 5 KB (4.9 KB with 8-character owner names):
 * a write is billed 5 write units (6 with owner names of 30 characters or more) and a strongly
 * consistent read 2 read units; at `limit: 3`, one each.
 */
export const MAX_SEMAPHORE_LIMIT = 32;

/** One holder of a semaphore, as read. */
export interface SemaphoreHolderRecord {
  token: string;
  owner: string;
  version: string;
  leaseMs: number;
  fencingToken: number;
  acquiredAt: number;
  updatedAt: number;
}

/** A semaphore item as read. */
export interface SemaphoreRecord {
  key: string;
  limit: number;
  /** Holders now. */
  count: number;
  /** The fencing token of the last grant. */
  fencingToken: number;
  /** Next ticket to admit. */
  head: number;
  /** Next ticket to hand out. */
  tail: number;
  tailToken?: string;
  /** Tickets given up, ascending. */
  gone: number[];
  holders: SemaphoreHolderRecord[];
  released?: string;
  lastHoldMs?: number;
  updatedAt?: number;
}

/** Tickets waiting in line (some may have been given up). */
export function semaphoreWaiting(record: SemaphoreRecord): number {
  return Math.max(0, record.tail - record.head - record.gone.filter((t) => t >= record.head).length);
}

/** The holder with owner token `token`, if it holds. */
export function holderEntryOf(record: SemaphoreRecord | undefined, token: string): SemaphoreHolderRecord | undefined {
  return record?.holders.find((h) => h.token === token);
}

/** Converts a DynamoDB item of a table with key attributes `keys` into a {@link SemaphoreRecord}. */
export function toSemaphoreRecord(item: Record<string, AttributeValue>, keys: LockTableKeys = DEFAULT_TABLE_KEYS): SemaphoreRecord {
  const fences = item[SEM_ATTR.fences]?.M ?? {};
  const holders = Object.entries(item[SEM_ATTR.holders]?.M ?? {}).map(([token, value]) => {
    const m = value.M ?? {};
    return {
      token,
      owner: m[SEM_HOLDER.owner]?.S ?? '',
      version: m[SEM_HOLDER.version]?.S ?? '',
      leaseMs: num(m[SEM_HOLDER.lease]) ?? 0,
      fencingToken: num(fences[token]) ?? 0,
      acquiredAt: num(m[SEM_HOLDER.acquiredAt]) ?? 0,
      updatedAt: num(m[SEM_HOLDER.updatedAt]) ?? 0,
    };
  });
  return {
    key: storedKeyOf(item, keys),
    limit: num(item[SEM_ATTR.limit]) ?? 0,
    count: num(item[SEM_ATTR.count]) ?? 0,
    fencingToken: num(item[SEM_ATTR.fence]) ?? 0,
    head: num(item[SEM_ATTR.head]) ?? 0,
    tail: num(item[SEM_ATTR.tail]) ?? 0,
    tailToken: item[SEM_ATTR.tailToken]?.S,
    gone: (item[SEM_ATTR.gone]?.NS ?? []).map(Number).sort((a, b) => a - b),
    holders: holders.sort((a, b) => a.fencingToken - b.fencingToken),
    released: item[SEM_ATTR.released]?.S,
    lastHoldMs: num(item[SEM_ATTR.lastHold]),
    updatedAt: num(item[SEM_ATTR.updatedAt]),
  };
}

function num(value: AttributeValue | undefined): number | undefined {
  return value?.N === undefined ? undefined : Number(value.N);
}

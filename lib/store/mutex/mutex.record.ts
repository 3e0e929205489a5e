import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { JobFireOutcome } from '../../interfaces/job-fire.interface';
import type { LockTableKeys } from '../../interfaces/lock-table-keys.interface';
import { DEFAULT_TABLE_KEYS, storedKeyOf, TABLE_ATTR } from '../dynamo/table-schema';

/**
 * The attributes of a lock item, named once. Several are DynamoDB reserved words
 * (`key`, `owner`, `data`, `ttl`), so every expression refers to them through
 * {@link ATTRIBUTE_NAMES} placeholders, never bare.
 */
export const ATTR = {
  /** Partition key (String): key prefix + user key. The library's own table's name; a shared table names its own. */
  key: TABLE_ATTR.key,
  /** Human-readable holder name (host name and pid by default). */
  owner: 'owner',
  /** Secret owner token of the current holder; absent when the lock is free. */
  token: 'token',
  /** Record version number: a fresh random value on every write. */
  rvn: 'rvn',
  /** The holder's lease duration in milliseconds. */
  lease: 'leaseMs',
  /** Fencing counter: one above the last holder's after every release, hand-over or pass; a new holder takes it as it is. */
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
  ttl: TABLE_ATTR.ttl,
  /**
   * Ticket now served: the holder's place in line. Every waiter of another process takes a ticket
   * (`tail`) and holds the lock once `head` reaches it; a release moves `head` on by one.
   */
  head: 'head',
  /** Next ticket to hand out. The lock is free when `head` = `tail`: nobody holds or waits. */
  tail: 'tail',
  /** Token of the last ticket taken, so a retried enqueue does not take a second one. */
  tailToken: 'tailToken',
  /**
   * Roll call while the head stalls: the smallest ticket whose waiter said it is alive. The write
   * that passes a dead head goes straight to it, past every dead ticket in between.
   */
  live: 'live',
  /**
   * Number set of the claim leases of the tickets taken since the line was last empty (one value
   * per lease in use, so it stays tiny): a promoted waiter that stays silent is passed after the
   * largest of them, not after the longest possible claim lease.
   */
  claims: 'claims',
  /**
   * Number set of the tickets whose waiters left the line (gave up before being served). A ticket
   * in it is never held: whoever sees `head` serve one passes it at once ({@link leftRun}), so the
   * next waiter is not kept waiting for a claim lease. At most {@link LEFT_MAX} entries.
   */
  left: 'left',
  /**
   * A scheduled job's last fire claimed: its scheduled time (epoch ms, the schedule's). A claim is
   * written by the write that takes the lock, only for a later fire, and stays after the release:
   * each fire runs once, whatever the instances' clocks.
   */
  fire: 'fire',
  /** Owner name of the instance that claimed the last fire. */
  fireOwner: 'fireOwner',
  /** Wall-clock start of the last fire's run (ms since epoch); informational. */
  fireStart: 'fireStart',
  /** Wall-clock end of the last fire's run (ms since epoch); informational. */
  fireEnd: 'fireEnd',
  /** How the last fire's run ended: `running`, `done`, `failed` or `lost`. */
  fireOutcome: 'fireOutcome',
  /**
   * Map of the readers holding the key together (`mode: 'read'`), while the item's token is the
   * read group's marker: entry id → entry (see `store/rw/read.record.ts`). At most 64 entries.
   */
  readers: 'readers',
  /** The entry id of the read group's upgradeable reader (`mode: 'upgradeable'`): one at a time. */
  upgrader: 'upgrader',
  /** The entry id of the upgradeable reader that is upgrading: no reader joins meanwhile. */
  upgrading: 'upgrading',
} as const;

/** `ExpressionAttributeNames` entries for every lock attribute: `#key` → `key` (the table's partition key replaces it), ... */
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
  /** Ticket now served (absent on items never locked by a waiter of another process). */
  head?: number;
  /** Next ticket to hand out; the lock is free when it equals `head`. */
  tail?: number;
  /** Token of the last ticket taken. */
  tailToken?: string;
  /** Smallest ticket that answered the roll call of a stalled head. */
  live?: number;
  /** The largest claim lease of the tickets taken since the line was last empty. */
  claimMs?: number;
  /** A scheduled job's last fire claimed (see `ATTR.fire`). */
  fire?: FireRecord;
  /** Tickets whose waiters left the line, ascending (see `ATTR.left`). */
  left?: number[];
  /** The readers' entries as stored (entry id → entry), while a read group holds (see `ATTR.readers`). */
  readers?: Record<string, string>;
  /** The group's upgradeable reader (see `ATTR.upgrader`). */
  upgrader?: string;
  /** The upgradeable reader upgrading now (see `ATTR.upgrading`). */
  upgrading?: string;
}

/**
 * Most tickets the item records as left at once: the set stays a few hundred bytes whoever gives
 * up. A waiter that finds it full keeps its ticket and releases the lock as soon as it is served.
 */
export const LEFT_MAX = 32;

/** A run of tickets whose waiters left, served now: `passed` are passed at once, `target` is served next. */
export interface LeftRun {
  /** The ticket `head` serves now (the first of `passed`). */
  head: number;
  /** The tickets passed: `head` and every left ticket right behind it. */
  passed: number[];
  /** The first ticket after them; the lock is free when it is `tail`. */
  target: number;
  /** Tickets below `head` still in the set (a leave that landed after a skip's view): removed with the pass. */
  stale?: number[];
}

/**
 * The run of left tickets at the head of the line, when `head` serves a ticket whose waiter left
 * and no token holds the item; `undefined` otherwise. Passing it is safe at once: a left ticket is
 * never held (the holding condition by ticket excludes it).
 */
export function leftRun(record: LockRecord | undefined): LeftRun | undefined {
  if (!record?.left?.length || record.token !== undefined) return undefined;
  const { head, tail } = record;
  if (head === undefined || tail === undefined || head >= tail) return undefined;
  const left = new Set(record.left);
  if (!left.has(head)) return undefined;
  let target = head;
  while (target < tail && left.has(target)) target++;
  const passed = Array.from({ length: target - head }, (_, index) => head + index);
  const stale = record.left.filter((ticket) => ticket < head);
  return stale.length ? { head, passed, target, stale } : { head, passed, target };
}

/** Whether `ticket` left the line, as the record shows. */
export function hasLeft(record: LockRecord | undefined, ticket: number | undefined): boolean {
  return ticket !== undefined && (record?.left?.includes(ticket) ?? false);
}

/** A scheduled job's last fire claimed, as the item keeps it (times in ms since the epoch). */
export interface FireRecord {
  /** Its scheduled time. */
  at: number;
  owner?: string;
  startedAt?: number;
  endedAt?: number;
  outcome?: JobFireOutcome;
}

/**
 * Whether a record shows the lock held: by the token it carries, or by the waiter whose ticket
 * `head` serves (a waiter promoted by a release holds before it writes its token).
 */
export function isHeld(record: LockRecord | undefined): boolean {
  if (!record) return false;
  if (record.token !== undefined) return true;
  return record.head !== undefined && record.tail !== undefined && record.head < record.tail;
}

/** Tickets taken behind the one now served: waiters of other processes (some may have died). */
export function ticketsWaiting(record: LockRecord | undefined): number {
  if (!record || record.head === undefined || record.tail === undefined) return 0;
  const { head } = record;
  // Tickets whose waiters left wait for nobody.
  const left = record.left?.filter((ticket) => ticket > head).length ?? 0;
  return Math.max(0, record.tail - head - 1 - left);
}

/** Converts a DynamoDB item of a table with key attributes `keys` into a {@link LockRecord}. */
export function toLockRecord(item: Record<string, AttributeValue>, keys: LockTableKeys = DEFAULT_TABLE_KEYS): LockRecord {
  return {
    key: storedKeyOf(item, keys),
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
    head: num(item[ATTR.head]),
    tail: num(item[ATTR.tail]),
    tailToken: item[ATTR.tailToken]?.S,
    live: num(item[ATTR.live]),
    claimMs: largest(item[ATTR.claims]?.NS),
    fire: fireOf(item),
    left: item[ATTR.left]?.NS?.map(Number).sort((a, b) => a - b),
    readers: entriesOf(item[ATTR.readers]?.M),
    upgrader: item[ATTR.upgrader]?.S,
    upgrading: item[ATTR.upgrading]?.S,
  };
}

function entriesOf(map: Record<string, AttributeValue> | undefined): Record<string, string> | undefined {
  if (map === undefined) return undefined;
  return Object.fromEntries(Object.entries(map).map(([id, entry]) => [id, entry.S ?? '']));
}

function fireOf(item: Record<string, AttributeValue>): FireRecord | undefined {
  const at = num(item[ATTR.fire]);
  if (at === undefined) return undefined;
  return {
    at,
    owner: item[ATTR.fireOwner]?.S,
    startedAt: num(item[ATTR.fireStart]),
    endedAt: num(item[ATTR.fireEnd]),
    outcome: item[ATTR.fireOutcome]?.S as JobFireOutcome | undefined,
  };
}

function largest(numbers: string[] | undefined): number | undefined {
  return numbers?.length ? Math.max(...numbers.map(Number)) : undefined;
}

function num(value: AttributeValue | undefined): number | undefined {
  return value?.N === undefined ? undefined : Number(value.N);
}

import type { JobFireOutcome } from '../../interfaces/job-fire.interface';
import { randomToken } from '../../utils/random-token';
import { ATTR, type LockRecord } from './mutex.record';

/**
 * A lock item of the in-memory stores, as the DynamoDB table keeps it: shared by the memory mutex
 * store, which owns the items, and the stores of primitives that write the same items (readers).
 */

/** One lock item with the DynamoDB store's attributes; an absent attribute is `undefined`. */
export interface StoredItem {
  key: string;
  owner?: string;
  token?: string;
  rvn?: string;
  leaseMs?: number;
  fence?: number;
  acquiredAt?: number;
  updatedAt?: number;
  data?: string;
  releasedToken?: string;
  lastHoldMs?: number;
  /** Epoch seconds, as the DynamoDB store writes it with the default `ttlDays` (2); counts toward the size. */
  ttl?: number;
  head?: number;
  tail?: number;
  tailToken?: string;
  live?: number;
  /** The `claims` number set; DynamoDB has no empty sets, so never empty here either. */
  claims?: number[];
  /** The `left` number set: never empty either. */
  left?: number[];
  fire?: number;
  fireOwner?: string;
  fireStart?: number;
  fireEnd?: number;
  fireOutcome?: JobFireOutcome;
  /** The `readers` map (entry id → entry): a read group's members. */
  readers?: Record<string, string>;
  upgrader?: string;
  upgrading?: string;
}

/** Compile-time check: every stored field is named as the DynamoDB store names the attribute. */
type NotAnAttribute = Exclude<keyof StoredItem, (typeof ATTR)[keyof typeof ATTR]>;
const FIELDS_ARE_ATTRIBUTES: [NotAnAttribute] extends [never] ? true : never = true;
void FIELDS_ARE_ATTRIBUTES;

/** Days the DynamoDB store keeps an item after its last write by default (`ttlDays`). */
const DEFAULT_TTL_DAYS = 2;

/**
 * Thrown for a request DynamoDB would reject as invalid (arithmetic on a missing counter), shaped like the SDK's `ValidationException`: a client error, HTTP 400, never retried.
 */
export class MemoryStoreValidationError extends Error {
  override readonly name = 'ValidationException';
  readonly $fault = 'client';
  readonly $metadata = { httpStatusCode: 400 };
}

/** Lets the caller's code run on before the "server" answers. Not a timer, so fake timers do not stall it. */
export function tick(): Promise<void> {
  return Promise.resolve();
}

/** A number set without `values`; DynamoDB drops a set left empty. */
export function without(set: number[] | undefined, values: number[] | undefined): number[] | undefined {
  const rest = (set ?? []).filter((value) => !values?.includes(value));
  return rest.length ? rest : undefined;
}

/** `#fence + :one` on a missing counter: DynamoDB rejects the request (no held item lacks one). */
export function fenceOf(item: StoredItem): number {
  if (item.fence === undefined) {
    throw new MemoryStoreValidationError('The provided expression refers to an attribute that does not exist in the item');
  }
  return item.fence;
}

/** The TTL attribute the DynamoDB store writes with the default `ttlDays`: epoch seconds. */
export function ttlOf(now: number, leaseMs: number): number {
  return Math.ceil((now + Math.max(DEFAULT_TTL_DAYS * 86_400_000, 2 * leaseMs)) / 1000);
}

/** An item with its line's counters (DynamoDB rejects `#head + :one` on a missing counter). */
export type CountedItem = StoredItem & { head: number; fence: number };

/** Whether the item has its line's counters, `head` and `fence`. */
export function hasCounters(item: StoredItem): item is CountedItem {
  return item.head !== undefined && item.fence !== undefined;
}

/**
 * The item once its holder's hold ends (a release, the last reader leaving): the next ticket
 * served, the fencing counter and record version moved on, the holder's attributes removed.
 */
export function endedHold(item: CountedItem, now: number, leaseMs: number, heldMs?: number): StoredItem {
  return {
    ...item,
    head: item.head + 1,
    fence: item.fence + 1,
    rvn: randomToken(),
    updatedAt: now,
    ttl: ttlOf(now, leaseMs),
    lastHoldMs: heldMs === undefined ? undefined : Math.max(0, Math.round(heldMs)),
    token: undefined,
    owner: undefined,
    data: undefined,
    leaseMs: undefined,
    acquiredAt: undefined,
    live: undefined,
  };
}

/** The item as `toLockRecord` presents a DynamoDB item: an empty data string reads as none. */
export function toRecord(item: StoredItem): LockRecord {
  return {
    key: item.key,
    owner: item.owner,
    token: item.token,
    rvn: item.rvn,
    leaseMs: item.leaseMs,
    fencingToken: item.fence,
    acquiredAt: item.acquiredAt,
    updatedAt: item.updatedAt,
    data: item.data || undefined,
    released: item.releasedToken,
    lastHoldMs: item.lastHoldMs,
    head: item.head,
    tail: item.tail,
    tailToken: item.tailToken,
    live: item.live,
    claimMs: item.claims?.length ? Math.max(...item.claims) : undefined,
    left: item.left?.length ? [...item.left].sort((a, b) => a - b) : undefined,
    readers: item.readers && { ...item.readers },
    upgrader: item.upgrader,
    upgrading: item.upgrading,
    fire:
      item.fire === undefined
        ? undefined
        : { at: item.fire, owner: item.fireOwner, startedAt: item.fireStart, endedAt: item.fireEnd, outcome: item.fireOutcome },
  };
}

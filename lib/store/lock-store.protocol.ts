/**
 * The words a lock store and its callers speak ({@link LockStorePort}): what a write asks for,
 * what it answers, and what a store says about its health. Both stores and the engine import them
 * from here, never from one another.
 */
import type { LockRecord } from './lock-record';

/** Which state of the item an acquisition write may replace. */
export type AcquireCondition =
  /** The item is missing, or released with nobody queued. */
  | { kind: 'free' }
  /** The item is released and the writer is the head of its queue (at `index` 0). */
  | { kind: 'head' }
  /**
   * The item still carries the record version a waiter watched for a whole lease; `holder` is the
   * token it watched, dropped from the queued set so a dead holder's token does not linger there.
   */
  | { kind: 'takeover'; rvn: string; holder?: string }
  /** The item is held by a local holder who hands it straight to the next local waiter. */
  | { kind: 'handover'; fromToken: string };

/** What an acquisition write needs. */
export interface AcquireWrite {
  key: string;
  token: string;
  owner: string;
  leaseMs: number;
  data?: string;
  condition: AcquireCondition;
  /** The writer's position in the item's queue, when it is queued: the write also dequeues it. */
  queuedAt?: number;
}

/**
 * Lease a queued waiter gets when a release promotes it, at most: a waiter that died in the
 * queue then blocks the key this long, not a whole lease. A live one renews to its own lease
 * with its first heartbeat, a third of this after it was promoted.
 */
export const CLAIM_LEASE_MS = 5_000;

/**
 * Largest lock data (UTF-8 bytes of its JSON) that travels in a queue entry, so that a promotion
 * hands it over in the same write. Larger data would let a long queue outgrow DynamoDB's 400 KB
 * item: a promoted waiter writes it itself, right after.
 */
export const QUEUED_DATA_MAX_BYTES = 256;

/** A waiter to record in the item's queue. */
export interface QueueWrite {
  key: string;
  token: string;
  owner: string;
  leaseMs: number;
  /** Queued only up to 256 bytes (`QUEUED_DATA_MAX_BYTES`). */
  data?: string;
}

/** The data a queue entry carries: small data, else none (an empty string reads as none). */
export function queuedData(data: string | undefined): string {
  return data !== undefined && Buffer.byteLength(data, 'utf8') <= QUEUED_DATA_MAX_BYTES ? data : '';
}

/** Result of a conditional write. `current` is the item that blocked it, when the server returned it. */
export type WriteResult = { ok: true; record: LockRecord } | { ok: false; current: LockRecord | undefined };

/**
 * What a store answers to a health check ({@link LockStorePort.health}): the in-memory store has
 * nothing to contact; the DynamoDB store reports its table.
 */
export type StoreHealth = { store: 'memory' } | TableHealth;

/** The DynamoDB store's health: its lock table as one `DescribeTable` found it. */
export interface TableHealth {
  store: 'dynamodb';
  /** The lock table. */
  table: string;
  /** The table's status as DynamoDB reported it (`'UNKNOWN'` when it did not say); absent when the check failed. */
  tableStatus?: string;
  /** Milliseconds from the request to its answer, or to the check's failure, rounded. */
  latencyMs: number;
  /**
   * Why the check failed: the table does not exist, the caller's signal aborted the check, or
   * another error (`error`: no connection, no credentials, access denied, ...).
   */
  failure?: 'missing' | 'aborted' | 'failed';
  /** The error of a `'failed'` check. */
  error?: unknown;
}

/**
 * The words a mutex store and its callers speak ({@link MutexStorePort}): what a write asks for
 * and what it answers. Both mutex stores and the engine import them from here, never from one another.
 */
import type { JobFireOutcome } from '../../interfaces/job-fire.interface';
import type { LockRecord } from './mutex.record';

/**
 * What a holder writes with: its owner token, and the ticket it holds by. A waiter promoted by a
 * release holds by its ticket (`head` serves it) before its first write puts the token in the item.
 */
export interface Holding {
  token: string;
  /** The ticket `head` served when this holder got the lock; absent for a lease known only by its id. */
  ticket?: number;
}

/** Which state of the item an acquisition write may replace. */
export type AcquireCondition =
  /** Nobody holds or waits: no token, and `head` = `tail` (or a new item). */
  | { kind: 'free' }
  /** `from` holds it and hands it straight to another caller of its own process. */
  | { kind: 'handover'; from: Holding };

/** What an acquisition write needs. */
export interface AcquireWrite {
  key: string;
  token: string;
  owner: string;
  leaseMs: number;
  data?: string;
  condition: AcquireCondition;
  /**
   * A scheduled fire to claim (its scheduled time, epoch ms): the write succeeds only when no
   * fire at or after it was claimed, and records it as running under this owner.
   */
  fire?: number;
}

/** A waiter taking a ticket: its place in line behind the holder. */
export interface TicketWrite {
  key: string;
  /** Written as `tailToken`, so a retry of this write does not take a second ticket. */
  token: string;
  /** The lease this waiter holds for when promoted, before it writes: added to the item's claim leases. */
  claimMs: number;
}

/**
 * Passing a holder (or a promoted waiter) that stopped writing: its record version stayed the same
 * for a whole lease (its claim lease, for a waiter promoted but silent) on the writer's clock.
 */
export interface SkipWrite {
  key: string;
  /** The record version watched that long. */
  rvn: string;
  /** The roll-call register as seen with it (`undefined`: nobody answered). */
  live: number | undefined;
  /** The ticket served next: the smallest live one, the writer's own, or the next one. */
  target: number;
  /** The writer, when `target` is its own ticket: it holds from this write (claiming `fire` as {@link AcquireWrite.fire} does). */
  holder?: { token: string; owner: string; leaseMs: number; data?: string; fire?: number };
  /**
   * The holder passed was running a fire, as the item watched showed: record it `lost`. Ignored
   * when the writer claims a fire of its own (`holder.fire`): that claim replaces the record.
   */
  fireLost?: boolean;
  /** Tickets below `target` that the writer saw as left: they leave the item's `left` set with the pass. */
  leftPassed?: number[];
}

/** How a release ends the fire its holder claimed, if any. */
export type ReleaseFire = Exclude<JobFireOutcome, 'running' | 'lost'>;

/** A holder renewing its lease; its first write after a promotion also puts its token in the item. */
export interface HeartbeatWrite {
  key: string;
  holding: Holding;
  /** Written only when the item names no owner yet (a promoted waiter's first write). */
  owner: string;
  /** Only at this record version (a grant of unknown age confirmed before it is used: nothing changed since). */
  rvn?: string;
  /** The new lease; `undefined` keeps the stored one. */
  leaseMs: number | undefined;
  /** Lease the item's TTL allows for. */
  ttlLeaseMs: number;
  /** The holder's data, when it has some to write. */
  data?: string;
  /**
   * When the holder got the lock (wall clock, ms since the epoch), written only when the item has
   * no acquisition time yet (a promoted waiter's first write); the time of this write by default.
   */
  acquiredAt?: number;
}

/**
 * Lease a waiter promoted by a release holds until it writes, at most (less when its own lease is
 * shorter). The item keeps the claim leases of the tickets taken, and waiters pass a promoted
 * waiter that stays silent for the largest. A live one renews to its own lease with its first
 * heartbeat, a third of its claim lease after it was promoted.
 */
export const CLAIM_LEASE_MS = 5_000;

/** The claim lease of a waiter with lease `leaseMs`. */
export function claimLeaseOf(leaseMs: number): number {
  return Math.min(leaseMs, CLAIM_LEASE_MS);
}

/** Result of a conditional write. `current` is the item that blocked it, when the server returned it. */
export type WriteResult = { ok: true; record: LockRecord } | { ok: false; current: LockRecord | undefined };

/** One key of an all-or-none acquisition ({@link AcquireAllWrite}): a free acquire with its fencing counter pinned. */
export interface AcquireAllPart {
  key: string;
  token: string;
  /** The record version written: fixed, so that a resend is the same request. */
  rvn: string;
  /**
   * The fencing counter the item must have, which becomes this holder's token (a transaction
   * returns no item); `undefined`: the item must have none (a new item, whose counter starts anew).
   */
  fence: number | undefined;
}

/**
 * Free acquires of several keys applied all or none (on DynamoDB one `TransactWriteItems`), each
 * writing what a single free acquire writes. Every value is fixed, so a resend after a lost
 * answer is the same request, applied at most once (`requestToken`).
 */
export interface AcquireAllWrite {
  parts: AcquireAllPart[];
  owner: string;
  leaseMs: number;
  /** Wall-clock time written (`acquiredAt`, `updatedAt`, the TTL, a new counter's base), epoch ms. */
  now: number;
  /** Makes a resend idempotent (DynamoDB's `ClientRequestToken`: for 10 minutes, at most 36 characters). */
  requestToken: string;
}

/** The answer to an {@link AcquireAllWrite}. */
export type AcquireAllResult =
  /** Every key is held: each record as written (what the write set, when the server returns no item). */
  | { kind: 'granted'; records: LockRecord[] }
  /**
   * Nothing was written. `failed[i]`: part `i`'s condition failed, `current[i]` its item then
   * (when the server returned it); `conflict`: a write of one of the items was in flight.
   */
  | { kind: 'refused'; failed: boolean[]; current: (LockRecord | undefined)[]; conflict: boolean }
  /** The store has no transactions (dynalite, a memory store built with `transactions: false`). */
  | { kind: 'unsupported' };

/** The record part `part` of `write` made: what the free acquire set (a transaction returns no item). */
export function grantedRecord(write: AcquireAllWrite, part: AcquireAllPart): LockRecord {
  const { owner, leaseMs, now } = write;
  const fencingToken = part.fence ?? now * 1000;
  return {
    key: part.key,
    token: part.token,
    owner,
    rvn: part.rvn,
    leaseMs,
    fencingToken,
    acquiredAt: now,
    updatedAt: now,
    tailToken: part.token,
  };
}

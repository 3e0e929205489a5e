import type { LockHolder } from '../../errors/lock.errors';
import type { LockRecord } from '../../store/mutex/mutex.record';
import { CLAIM_LEASE_MS } from '../../store/mutex/mutex-store.protocol';

/** How many keys are remembered; the least recently updated are forgotten first. */
const MAX_KEYS = 1_000;
/** How many recent round trips are kept (their shortest is the one reads are timed with). */
const ROUND_TRIPS_KEPT = 16;
/** Weight of a new sample in the moving averages (timer lateness, promotion delay). */
const ALPHA = 0.3;
/**
 * How many recent holds the hold estimate is the median of: a few holds far off the usual (a
 * loaded moment) do not move it, and once holds change for good, it follows within three.
 */
const HOLDS_KEPT = 5;
/**
 * A timer that fired later than this counts as this late: one long stall of the event loop (a
 * paused process) would otherwise make aimed reads fire seconds early, at every turn, for a while.
 */
const TIMER_LATE_MAX_MS = 100;

interface KeyFacts {
  /** The last holds of the key, in ms (its estimate is their median). */
  holds?: number[];
  /** The release whose hold was counted last (its owner token): seen again, by any call of this process, it is not counted twice. */
  holdOf?: string;
  /** Moving average of how long after a release (by its wall-clock time) this process's waiters it served learned it, in ms. */
  promotionMs?: number;
  /**
   * Tokens of this process that no caller holds any more but that may still sit in the item: a
   * release that failed, a waiter that gave up and could not leave the queue. Finding one as the
   * holder, this process takes the lock over at once instead of waiting out a lease.
   */
  orphans?: Map<string, string | undefined>;
  /** Monotonic time this process last saw (or made) the key held by someone else. */
  busyAt?: number;
  /** The record version this process watches, kept across calls (see {@link RecordObservation}). */
  observed?: RecordObservation;
  /** The fencing counter the item has when free, as this process last knew it (see {@link KeyHistory.fenceOf}). */
  fence?: number;
}

/**
 * A version of a lock record as this process first saw it. Kept per key across calls, so that a
 * later attempt (a single one too) takes over a holder that stopped writing once the same version
 * stayed unchanged for a whole lease on this host's monotonic clock: no wall clocks compared.
 */
export interface RecordObservation {
  /**
   * What identifies the state seen: the record version number with the ticket served and the
   * holder's token (a waiter taking the ticket of a free item changes the holder, not the version).
   */
  readonly version: string;
  /** The record version number, for the write that passes a silent holder. */
  readonly rvn: string;
  /** The lease that version promised: the holder's, or the claim lease of a queue head. */
  readonly leaseMs: number;
  /** Monotonic time of the first answer that showed this version. */
  readonly at: number;
  /** The holder it showed: its owner token, or the ticket of a promoted waiter that has not written yet. */
  readonly holder: string | undefined;
  /** Who that holder was (owner, fencing token, lease), for the takeover event. */
  readonly holderInfo?: LockHolder;
}

/**
 * The identity of a held record's state, as a watcher keeps it: the version, the lease it promised
 * (a holder that wrote, its own lease; a promoted waiter that has not written, the claim lease of
 * the line) and the holder it shows. Every watcher (a waiter, a leadership follower) builds it
 * here, so that what one call saw counts for a later one.
 */
export function versionOf(record: LockRecord & { rvn: string }, defaultLeaseMs: number): Omit<RecordObservation, 'at' | 'holderInfo'> {
  return {
    version: `${record.rvn}/${record.head ?? ''}/${record.token ?? ''}`,
    rvn: record.rvn,
    leaseMs: record.token ? (record.leaseMs ?? defaultLeaseMs) : silentMs(record),
    holder: record.token ?? `ticket ${record.head}`,
  };
}

/**
 * How long a promoted waiter that has not written may hold: the largest claim lease of the tickets
 * in line (each waiter's is there from its enqueue until the line is empty), else the longest.
 */
export function silentMs(record: LockRecord): number {
  return record.claimMs ?? CLAIM_LEASE_MS;
}

/**
 * What this process learned about contended keys: how long holders keep them (from its own
 * holds and the ones releasers wrote in the item, each on the holder's own clock: watched owner
 * changes would include the hand-over delay and feed on themselves) and
 * whether one was just seen busy. Waiters use it to
 * poll when a release is due instead of on a fixed timer, and to queue up at once for a key
 * they know is busy instead of paying for a write that would fail.
 */
export class KeyHistory {
  private readonly facts = new Map<string, KeyFacts>();
  /** Moving average of how late this process's timers fire, in ms (a loaded event loop). */
  private timerLateMs = 0;
  /** The last request round trips, in ms (a ring). */
  private readonly roundTrips: number[] = [];
  private nextRoundTrip = 0;

  /**
   * The round trip of a request to the table without queueing: the shortest of the last few
   * (a burst of requests or a slow moment does not make reads aim late). 2 ms before any.
   */
  roundTrip(): number {
    return this.roundTrips.length === 0 ? 2 : Math.min(...this.roundTrips);
  }

  /** Adds one observed round trip of a request. */
  recordRoundTrip(ms: number): void {
    if (!(ms >= 0) || !Number.isFinite(ms)) return;
    this.roundTrips[this.nextRoundTrip] = ms;
    this.nextRoundTrip = (this.nextRoundTrip + 1) % ROUND_TRIPS_KEPT;
  }

  /** How late this process's timers usually fire, in ms: reads timed to the millisecond aim that much earlier. */
  timerLateness(): number {
    return this.timerLateMs;
  }

  /** Adds one observed lateness of a timer (how long after its due time it fired). */
  recordTimerLateness(lateMs: number): void {
    if (!Number.isFinite(lateMs)) return;
    this.timerLateMs += ALPHA * (Math.min(Math.max(0, lateMs), TIMER_LATE_MAX_MS) - this.timerLateMs);
  }

  /** The estimated hold time of `key` in ms, the median of its last few holds; undefined when none was learned. */
  holdEstimate(key: string): number | undefined {
    const holds = this.facts.get(key)?.holds;
    if (!holds?.length) return undefined;
    // The lower middle of an even count: a read aimed early costs less than one aimed late.
    const sorted = [...holds].sort((a, b) => a - b);
    return sorted[(sorted.length - 1) >> 1];
  }

  /** Whether `key` was seen busy so recently that a first write would very likely fail. */
  probablyBusy(key: string, now: number): boolean {
    const facts = this.facts.get(key);
    if (facts?.busyAt === undefined) return false;
    return now - facts.busyAt < Math.max(2 * (this.holdEstimate(key) ?? 0), 50);
  }

  /**
   * Remembers a token of this process that nobody holds any more. `rvn` is the record version its
   * last write left, for a token that was handed out (a lease that ran out: its lease id may be
   * renewed elsewhere with `renewLease()`, which changes the version); `undefined` for a token no
   * caller ever saw (a waiter that gave up).
   */
  addOrphan(key: string, token: string, rvn?: string): void {
    const facts = this.touch(key);
    facts.orphans ??= new Map();
    facts.orphans.set(token, rvn);
    if (facts.orphans.size > 16) facts.orphans.delete(facts.orphans.keys().next().value as string);
  }

  /**
   * Whether `token`, found holding `key` at record version `rvn`, is an orphan of this process:
   * one it marked, and still at the version its last write left when that is known.
   * @returns the version to condition a takeover on (`null`: take over by token), or `undefined`.
   */
  orphanAt(key: string, token: string, rvn: string | undefined): string | null | undefined {
    const orphans = this.facts.get(key)?.orphans;
    if (!orphans?.has(token)) return undefined;
    const known = orphans.get(token);
    if (known === undefined) return null;
    return known === rvn ? known : undefined;
  }

  /** Forgets an orphan (taken over or seen gone). */
  dropOrphan(key: string, token: string): void {
    this.facts.get(key)?.orphans?.delete(token);
  }

  /**
   * Notes that an answer received at monotonic time `now` showed `seen`: keeps the first-seen time
   * while the version stays the same, starts anew when it changed.
   * @returns the observation in force for the key.
   */
  observe(key: string, seen: Omit<RecordObservation, 'at'>, now: number): RecordObservation {
    const facts = this.touch(key);
    if (facts.observed?.version !== seen.version) facts.observed = { ...seen, at: now };
    return facts.observed;
  }

  /** The record version last observed for `key`, if it is still being watched. */
  observation(key: string): RecordObservation | undefined {
    return this.facts.get(key)?.observed;
  }

  /** Forgets the watched version of `key` (the lock was seen free, or taken by this process). */
  forgetObservation(key: string): void {
    const facts = this.facts.get(key);
    if (facts) facts.observed = undefined;
  }

  /**
   * Adds one hold of `key`. `release`, the releaser's owner token, identifies the release it was
   * written with: a release seen again (its own, or by a later call) is counted once.
   */
  recordHold(key: string, holdMs: number, release?: string): void {
    if (!(holdMs >= 0) || !Number.isFinite(holdMs)) return;
    const facts = this.touch(key);
    if (release !== undefined) {
      if (facts.holdOf === release) return;
      facts.holdOf = release;
    }
    facts.holds = [...(facts.holds ?? []), holdMs].slice(-HOLDS_KEPT);
  }

  /**
   * How long after a release waiters of `key` usually learn that it served them, if learned: a
   * promoted waiter holds from then, so waiters behind it time their reads by it.
   */
  promotionDelay(key: string): number | undefined {
    return this.facts.get(key)?.promotionMs;
  }

  /** Adds one observed delay between a release and the answer that told a waiter of this process it was served. */
  recordPromotion(key: string, delayMs: number): void {
    if (!(delayMs >= 0) || !Number.isFinite(delayMs)) return;
    const facts = this.touch(key);
    facts.promotionMs = facts.promotionMs === undefined ? delayMs : facts.promotionMs + ALPHA * (delayMs - facts.promotionMs);
  }

  /** Notes that `key` is held by someone else now (or free, with `busy: false`). */
  recordBusy(key: string, now: number, busy = true): void {
    this.touch(key).busyAt = busy ? now : undefined;
  }

  /**
   * The fencing counter this process expects the item to have once free: one above the token of
   * its last holder here (a release, a hand-over or a pass each add one), or as an item showed it.
   * Pinned by the one-transaction acquisition of a set (a transaction returns no item); a wrong
   * guess fails that transaction's condition, and writes nothing.
   */
  fenceOf(key: string): number | undefined {
    return this.facts.get(key)?.fence;
  }

  /** Notes the counter `key`'s item has when free (see {@link fenceOf}). */
  noteFence(key: string, fence: number): void {
    this.touch(key).fence = fence;
  }

  private touch(key: string): KeyFacts {
    const facts = this.facts.get(key) ?? {};
    this.facts.delete(key);
    this.facts.set(key, facts);
    if (this.facts.size > MAX_KEYS) this.facts.delete(this.facts.keys().next().value as string);
    return facts;
  }
}

/** Who holds the lock a record shows, as the busy error and the takeover event name it. */
export function holderOf(record: LockRecord): LockHolder {
  return { owner: record.owner, fencingToken: record.fencingToken, leaseDuration: record.leaseMs ?? silentMs(record) };
}

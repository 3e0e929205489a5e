import type { LockRecord } from '../../store/mutex/mutex.record';
import type { KeyHistory, RecordObservation } from '../engine/key-history';
import { versionOf } from '../engine/key-history';
import type { LockHolder } from '../../errors/lock.errors';

/**
 * Far back, the longest pause between timing reads, as a share of the claim lease: a waiter served
 * while it sleeps reads before the others could pass it (a claim lease after they see it).
 */
export const TIMING_READ_SHARE = 0.75;

/** The pass of a silent head: the ticket it goes to, whether that is this waiter's, and the item it was seen in. */
export interface SkipTarget {
  target: number;
  mine: boolean;
  seen: LockRecord;
  /** Tickets below the target that `seen` shows as left: they leave the item's set with the pass. */
  leftPassed?: number[];
}

/**
 * Passing the holder of `seen`: to the smallest ticket that answered the roll call, the waiter's
 * own (`ticket`), or the next one.
 */
export function skipTarget(seen: LockRecord, ticket: number | undefined): SkipTarget {
  const candidate = Math.min(seen.live ?? Number.POSITIVE_INFINITY, ticket ?? Number.POSITIVE_INFINITY);
  let target = Number.isFinite(candidate) ? candidate : (seen.head ?? 0) + 1;
  // Tickets that left are passed with the head: a left ticket is never served (the set only grows
  // while the version watched stays, so the pass, conditioned on it, cannot skip a waiter still in line).
  const left = new Set(seen.left);
  while (left.has(target) && target !== ticket && (seen.tail === undefined || target < seen.tail)) target++;
  const leftPassed = seen.left?.filter((passed) => passed < target);
  return { target, mine: target === ticket, seen, leftPassed: leftPassed?.length ? leftPassed : undefined };
}

/**
 * One waiter's watch of the version at the head of a key's line: since when this process has seen
 * it unchanged (kept in the key's history, so a later call goes on counting), when its roll call
 * and its pass fall due, and whether this waiter answered the roll call. No wall clock is read:
 * every time is this host's monotonic clock.
 */
export class HeadWatch {
  /** The version being watched, its lease, and when this process first saw it. */
  observed: RecordObservation | undefined;
  /**
   * The item as the watch started from it: the last strongly consistent view, or a newer eventually
   * consistent copy that showed the line moved. A roll call or a pass is written on its version (on
   * an older one it could only fail).
   */
  watched: LockRecord | undefined;
  /** The version this waiter answered the roll call of. */
  private markedAlive: string | undefined;

  constructor(
    private readonly history: KeyHistory,
    private readonly storedKey: string,
    private readonly defaultLeaseMs: number,
  ) {
    this.observed = history.observation(storedKey);
  }

  /**
   * Watches the version `record` shows, from `now` (or from when this process first saw it): a
   * holder that wrote promised its lease; a promoted waiter that has not written, its claim lease.
   */
  start(record: LockRecord, rvn: string, now: number, holderInfo: LockHolder | undefined): void {
    const seen = { ...versionOf({ ...record, rvn }, this.defaultLeaseMs), holderInfo };
    this.observed = this.history.observe(this.storedKey, seen, now);
    this.watched = record;
  }

  /** No version to watch (free, gone, or this waiter's own). */
  stop(): void {
    this.observed = undefined;
    this.watched = undefined;
    this.history.forgetObservation(this.storedKey);
  }

  /** The item as the watch started from it, else `current` (the last view). */
  view(current: LockRecord | undefined): LockRecord | undefined {
    return this.watched ?? current;
  }

  /** The roll call of `seen` was answered with `ticket`: once per version; the item watched now shows it. */
  answered(seen: LockRecord | undefined, ticket: number | undefined, applied: boolean): LockRecord | undefined {
    this.markedAlive = this.observed?.version;
    if (!applied || !seen) return undefined;
    this.watched = { ...seen, live: ticket };
    return this.watched;
  }

  /** Whether the watched head has been silent for its whole lease: its pass is due. */
  passDue(now: number): boolean {
    const { observed } = this;
    return observed !== undefined && now - observed.at >= observed.leaseMs;
  }

  /**
   * When the watched head's roll call falls due (a waiter that sees it stall answers half-way
   * through its lease, wherever it is in line, so the pass goes to the first live ticket), or its
   * pass (answered already, or a smaller ticket did). A timing read far back, in a line seen
   * moving, waits for three quarters of the lease instead: the line has mostly moved on by then,
   * and if it stalled, that read shows it and the answer goes at once. (One that saw the stall
   * later than another waiter behind it by more than a quarter of the lease may be passed over,
   * and queue anew: only when every ticket ahead of it is dead.)
   */
  dueAt(current: LockRecord | undefined, ticket: number | undefined, timing = false): number | undefined {
    const { observed } = this;
    if (!observed) return undefined;
    if (!this.answersRollCall(this.view(current), ticket)) return observed.at + observed.leaseMs;
    return observed.at + (timing ? TIMING_READ_SHARE : 0.5) * observed.leaseMs;
  }

  /** Whether the roll call or the pass falls due by the time a read sent at `now` is answered. */
  due(current: LockRecord | undefined, ticket: number | undefined, now: number): boolean {
    const due = this.dueAt(current, ticket);
    return due !== undefined && now + this.history.roundTrip() >= due;
  }

  /** Whether the pass of the watched head goes to `ticket`, by the view the watch started from. */
  passesTo(current: LockRecord | undefined, ticket: number | undefined): boolean {
    const seen = this.view(current);
    return seen !== undefined && skipTarget(seen, ticket).mine;
  }

  /** Whether to answer the roll call now: the watched head (of `seen`) stalled for half its lease. */
  shouldMarkAlive(now: number, seen: LockRecord, ticket: number | undefined): boolean {
    const { observed } = this;
    return observed !== undefined && this.answersRollCall(seen, ticket) && now - observed.at >= observed.leaseMs / 2;
  }

  /**
   * Whether a waiter with `ticket` answers the roll call of the watched head, as `seen` shows it: a
   * ticket behind that head (its own is passed, never chosen) that has not answered yet, with no
   * smaller ticket answered (then the pass goes there, and this waiter only waits for it).
   */
  private answersRollCall(seen: LockRecord | undefined, ticket: number | undefined): boolean {
    const { observed } = this;
    if (!seen || !observed || ticket === undefined || observed.version === this.markedAlive) return false;
    if (seen.head === undefined || ticket <= seen.head) return false;
    return seen.live === undefined || seen.live > ticket;
  }
}

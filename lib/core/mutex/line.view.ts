import { hasLeft, isHeld, leftRun, type LockRecord } from '../../store/mutex/mutex.record';
import { CLAIM_LEASE_MS, claimLeaseOf } from '../../store/mutex/mutex-store.protocol';
import { monotonicNow } from '../../utils/clock';
import type { KeyHistory } from '../engine/key-history';
import { holderOf } from '../engine/key-history';
import type { Waiter } from '../engine/lock-state';
import { ReadScheduler } from '../waiting/read.scheduler';
import { HeadWatch, TIMING_READ_SHARE } from './head.watch';

/**
 * What one waiter knows of a key's item and its line: the last view, its ticket, the watch of the
 * head, when it reads next. Answers go in through {@link see} (strongly consistent, or a write's)
 * and {@link peeked} (eventually consistent); {@link RemoteAcquisition} decides from it what to send.
 */
export class LineView {
  current: LockRecord | undefined;
  known = false;
  /** The watch of the version at the head of the line. */
  readonly watch: HeadWatch;
  /** This process's ticket: its place in line, while it can still be served. */
  ticket: number | undefined;
  /** An enqueue of this waiter was sent: the item's `tailToken` names it when it took the last ticket. */
  enqueued = false;
  /** The claim lease the ticket was taken with (the item's claim leases include it while it waits). */
  ticketClaimMs = CLAIM_LEASE_MS;
  /**
   * An eventually consistent read showed the item otherwise than the watched version (written
   * since, or free, or gone) without the line moving: the next read near the turn is strongly
   * consistent, so that the watch follows the item.
   */
  recheck = false;
  /**
   * The earliest time a write may have made this waiter the holder: the send time of the last
   * answer that showed another holder, or of the enqueue that found the lock free.
   */
  lastNotMineAt = monotonicNow();
  /** When to read next. */
  readonly schedule: ReadScheduler;

  constructor(
    private readonly history: KeyHistory,
    storedKey: string,
    options: { readonly leaseMs: number; readonly maxPollMs: number },
  ) {
    this.watch = new HeadWatch(history, storedKey, options.leaseMs);
    this.schedule = new ReadScheduler(history, storedKey, options.maxPollMs, monotonicNow());
  }

  /** Whether the last view shows this waiter holding: by its token, or as the promoted owner of the ticket served. */
  heldByMe(token: string): 'token' | 'ticket' | undefined {
    const { current } = this;
    if (!this.known || !current) return undefined;
    if (current.token === token) return 'token';
    // A ticket that left the line is never held (its leave landed, whatever answer was lost).
    if (
      this.ticket !== undefined &&
      current.token === undefined &&
      current.head === this.ticket &&
      isHeld(current) &&
      !hasLeft(current, this.ticket)
    )
      return 'ticket';
    return undefined;
  }

  /**
   * What a promoted waiter holds for before it writes: its claim lease, and never more than the
   * one its ticket was taken with (a later caller of this process may have taken the ticket over).
   */
  claimMs(leaseMs: number): number {
    return Math.min(claimLeaseOf(leaseMs), this.ticketClaimMs);
  }

  /**
   * The earliest time a write of this waiter may have made it the holder: the last answer that
   * showed another holder, or an earlier write whose outcome is unknown (a lost answer, a
   * hand-over that failed that way). A lease found in the item counts from then.
   */
  validFrom(uncertainSince: number | undefined): number {
    return Math.min(this.lastNotMineAt, uncertainSince ?? Number.POSITIVE_INFINITY);
  }

  /** Updates the view: this waiter's ticket, the watched version, holder changes and their timing. */
  see(record: LockRecord | undefined, sentAt: number, waiter: Waiter): void {
    const now = monotonicNow();
    const current = record ?? { key: waiter.storedKey };
    this.current = current;
    this.known = true;
    this.recheck = false;
    // The last ticket taken is this waiter's (a retried enqueue learns it from the item too).
    if (this.ticket === undefined && this.enqueued && current.tailToken === waiter.token && current.tail !== undefined) {
      this.ticket = current.tail - 1;
      this.enqueued = false;
    }
    // Passed without being served (a dead-ticket roll call it missed, an item deleted), or left
    // (a leave whose answer was lost): queue anew.
    if (this.ticket !== undefined && (current.head === undefined || current.head > this.ticket || hasLeft(current, this.ticket)))
      this.ticket = undefined;
    const mine = this.heldByMe(waiter.token);
    if (mine) {
      // Served by a release while watching: how late it was learned times others' reads.
      if (mine === 'ticket' && this.watch.observed) this.schedule.notePromotion(current);
      this.watch.stop();
      return;
    }
    this.lastNotMineAt = sentAt;
    const held = isHeld(current);
    if (held) {
      waiter.holder = holderOf(current);
      this.history.recordBusy(waiter.storedKey, now);
    }
    this.schedule.noteView(current, now, this.ticket);
    // For the busy error: when this holder will likely release (a hint for callers' retries).
    if (held) waiter.expectedReleaseAt = this.schedule.expectedRelease(now);
    if (!held || current.rvn === undefined) {
      this.watch.stop();
      return;
    }
    this.watch.start(current, current.rvn, now, waiter.holder);
  }

  /**
   * Takes in an eventually consistent copy of the item (see {@link RemoteAcquisition}'s `peek`): this
   * waiter served, the line moved (a newer version's watch starts), or nothing new.
   */
  peeked(record: LockRecord | undefined, waiter: Waiter): void {
    const served = record?.head === this.ticket && record?.token === undefined && isHeld(record) && !hasLeft(record, this.ticket);
    if (record && this.ticket !== undefined && served) {
      this.current = record;
      this.known = true;
      if (this.watch.observed) this.schedule.notePromotion(record);
      this.watch.stop();
      return;
    }
    // Tickets served whose waiters left: passed at once (the pass is conditioned on what it saw, so an old copy is harmless).
    if (leftRun(record)) {
      this.current = record;
      this.known = true;
      return;
    }
    if (!this.schedule.noteTimingView(record, monotonicNow(), this.ticket)) {
      if (this.watch.observed && record?.rvn !== this.watch.observed.rvn) this.recheck = true;
      return;
    }
    // The line moved: the version watched is gone (a pass or a roll call at it would only fail),
    // and the one shown is newer than any seen. Its watch starts now: however old the copy, that
    // version was written before this answer, so a lease counted from here ends after its
    // holder's (a pass is conditioned on the version, and fails if it changed meanwhile).
    if (record?.rvn === undefined || this.watch.observed?.rvn === record.rvn) return;
    waiter.holder = holderOf(record);
    this.watch.start(record, record.rvn, monotonicNow(), waiter.holder);
  }

  /**
   * How long to wait before the next read: as the schedule times it, and never past the roll call
   * or the pass of a head that stalls, nor past the deadline.
   */
  pollDelay(waiter: Waiter, far: boolean, quiet: boolean): number {
    const now = monotonicNow();
    // A promoted lease counts from the last strongly consistent answer that showed another
    // holder: one older than a quarter of the claim lease would make the waiter write soon after
    // it holds (its first heartbeat falls due a third of the way through).
    const claimMs = this.claimMs(waiter.leaseMs);
    const plan = {
      ticket: this.ticket,
      viewAgeMs: now - this.lastNotMineAt,
      viewValidMs: claimMs / 4,
      far,
      farReadMs: claimMs / 2,
      timingReadMs: TIMING_READ_SHARE * claimMs,
    };
    let delay = this.schedule.delay(now, plan);
    const due = this.watch.dueAt(this.current, this.ticket, far);
    if (due !== undefined) delay = Math.min(delay, Math.max(0, due - now));
    if (!quiet) delay = Math.min(delay, waiter.deadline - now);
    return Math.max(0, delay);
  }
}

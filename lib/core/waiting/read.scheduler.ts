import { isHeld, type LockRecord } from '../../store/mutex/mutex.record';
import type { KeyHistory } from '../engine/key-history';
import {
  POLL_MIN_MS,
  FIRST_POLL_MS,
  POLL_GROWTH,
  NEXT_IN_LINE_SLACK_MS,
  NEXT_IN_LINE_CLOSE_MS,
  BEHIND_POLL_MS,
  PLAUSIBLE_SKEW_MS,
  MAX_HINT_AGE_MS,
  MAX_PROMOTION_DELAY_MS,
  PROMOTION_DELAY_RTTS,
  FAR_TURNS,
  FAR_AIM,
  FAR_AIM_MIN,
  PACE_LIMIT,
  PACE_SPANS,
  STILL_TURNS,
} from './read.timing';

/** What the schedule needs to know of the waiter at the moment it is asked. */
export interface ReadPlan {
  /** The waiter's ticket, if it has one. */
  readonly ticket: number | undefined;
  /** How long ago its last strongly consistent answer that showed another holder was sent (see {@link ReadScheduler.delay}). */
  readonly viewAgeMs: number;
  /** How old that answer may be when the waiter is served, for a promoted lease to count from it without a write. */
  readonly viewValidMs: number;
  /** Whether the next read is a timing read (see {@link ReadScheduler.readsFar}). */
  readonly far: boolean;
  /** The longest pause before a read when not next in line (a waiter served while it sleeps holds the line up). */
  readonly farReadMs: number;
  /** The longest pause before a timing read, far back (see {@link ReadScheduler.readsFar}). */
  readonly timingReadMs: number;
}

/**
 * When a waiter in line reads the item next: from its place, how long holders of the key keep
 * it, when the holder seen most likely got the lock, and how fast the line was seen moving; and
 * whether the read must be strongly consistent. What a read shows is the acquisition's to judge.
 *
 * - Next in line: just after the release that serves it lands, then briefly and growing while
 *   that release is overdue (a round trip and a few ms apart at most for its first two seconds
 *   overdue, so a graceful stop is noticed within about two round trips; then 100 ms apart).
 * - Near its turn: when the releases ahead of it are due, a turn of the line each.
 * - Far back: eventually consistent timing reads at the pace the line was seen moving, each
 *   aiming at a tenth of the way still ahead (at least three turns early).
 */
export class ReadScheduler {
  private holderId: string | undefined;
  private holderHead: number | undefined;
  /** When the holder seen most likely got the lock (monotonic). */
  private holderSince = 0;
  /** The holder's start in the item is older than a hint is trusted: it has held long, so its release gets no close reads. */
  private holderLongSince = false;
  /** The first view that showed the line while the waiter was far back, to measure the line's pace from. */
  private paceFrom: { head: number; at: number; ticket: number } | undefined;
  /** The time per ticket served over the last few spans (far back, the waiter's own reads do not pace the line). */
  private readonly paceSpans: number[] = [];
  /** The ticket served, as the latest view (strongly consistent or not) showed it. */
  private lineHead: number | undefined;
  /** Tickets whose waiters left the line, by the latest view: no turns to wait for. */
  private left: readonly number[] = [];
  /** When a view last showed the line move (monotonic). */
  private lineMovedAt: number;
  private pollStreak = 0;
  /** Whether the read the last {@link delay} timed must be strongly consistent (see {@link readsStrong}). */
  private strongNext = true;
  private lastAnswerAt: number;
  /** The `lastHoldMs` of the last view: the hold estimate when this process has none (it never held, nor saw a release). */
  private lastHoldMs: number | undefined;

  constructor(
    private readonly history: KeyHistory,
    private readonly key: string,
    private readonly maxPollMs: number,
    now: number,
  ) {
    this.lastAnswerAt = now;
    this.lineMovedAt = now;
  }

  /** A request answered after `ms`: the round trips reads are timed with (kept per process). */
  noteRoundTrip(ms: number): void {
    this.history.recordRoundTrip(ms);
  }

  /** The round trip reads are timed with. */
  private get rttMs(): number {
    return this.history.roundTrip();
  }

  /** Starts the schedule anew (a new caller took the ticket over). */
  restart(): void {
    this.pollStreak = 0;
  }

  /** A strongly consistent view of the item, answered at `now`, with the waiter's ticket then. */
  noteView(record: LockRecord, now: number, ticket: number | undefined): void {
    const { head } = record;
    this.left = record.left ?? [];
    if (head === undefined || this.lineHead === undefined || head > this.lineHead) this.lineMovedAt = now;
    else if (head === this.lineHead) this.noteStill(now);
    this.lineHead = head === undefined || this.lineHead === undefined ? head : Math.max(this.lineHead, head);
    this.noteHold(record);
    if (isHeld(record) && head !== undefined) this.measurePace(head, now, ticket);
    this.noteHolder(record, now);
  }

  /**
   * A timing read (eventually consistent, perhaps a little old), answered at `now`.
   * @returns whether it showed the line moved since the last view.
   */
  noteTimingView(record: LockRecord | undefined, now: number, ticket: number | undefined): boolean {
    const head = record?.head;
    if (!record || head === undefined || ticket === undefined || !isHeld(record)) {
      // Free, gone, or no ticket: not a line to time reads by (the acquisition reads strongly next).
      this.lineMovedAt = Number.NEGATIVE_INFINITY;
      return false;
    }
    if (head <= (this.lineHead ?? head - 1)) {
      // An older copy (a smaller head) says nothing of a stall; the same head does.
      if (head === this.lineHead) this.noteStill(now);
      return false;
    }
    this.lineHead = head;
    this.left = record.left ?? [];
    this.lineMovedAt = now;
    this.noteHold(record);
    this.measurePace(head, now, ticket);
    this.noteHolder(record, now);
    return true;
  }

  /** A view showed the waiter served by a release: how late it learned it (wall clocks, for read timing only). */
  notePromotion(record: LockRecord): void {
    if (record.updatedAt === undefined) return;
    const late = Date.now() - record.updatedAt;
    if (late <= MAX_PROMOTION_DELAY_MS)
      this.history.recordPromotion(this.key, Math.min(Math.max(0, late), PROMOTION_DELAY_RTTS * this.rttMs));
  }

  /** The waiter's place in line by the latest view: 1 is next; unknown counts as next. Tickets that left are no turns. */
  private position(ticket: number | undefined): number {
    const head = this.lineHead;
    if (ticket === undefined || head === undefined) return 1;
    const gone = this.left.filter((left) => left > head && left < ticket).length;
    return Math.max(1, ticket - head - gone);
  }

  /**
   * Whether the next read is a timing read: far back in a line seen moving within `stallMs`, with
   * the pace of holds known. A line that stopped is read strongly, so that its head is watched
   * (and passed when it stays silent), also by a waiter far back when nobody ahead of it is alive.
   */
  readsFar(ticket: number | undefined, now: number, stallMs: number): boolean {
    if (ticket === undefined || this.lineHead === undefined || now - this.lineMovedAt > stallMs) return false;
    return ticket - this.lineHead > FAR_TURNS && this.holdEstimate() !== undefined;
  }

  /**
   * Whether the read the last {@link delay} timed must be strongly consistent: one that brings
   * the waiter near its turn, or reads one turn early (next in line, when turns are long), when
   * its last strongly consistent answer would be too old by its turn (a promoted lease counts from
   * such an answer), and one while a
   * release is overdue when that answer is too old already. The others only
   * look for the line moving or the waiter served, and are eventually consistent (half the price;
   * see RemoteAcquisition.peek).
   */
  get readsStrong(): boolean {
    return this.strongNext;
  }

  /** When the holder seen will likely release (monotonic), for the busy error's hint; undefined when unknown. */
  expectedRelease(now: number): number | undefined {
    const estimate = this.holdEstimate();
    return estimate === undefined ? undefined : Math.max(now, this.holderSince + estimate);
  }

  /**
   * How long to wait before the next read, at `now`. Near its turn, the read aims just after the
   * release that serves the waiter lands (a read too early costs one more); a waiter whose last
   * strongly consistent answer would be too old by its turn (eventually consistent reads only
   * since) reads strongly one turn earlier (when turns are long, at the read next in line), so
   * that a lease it is promoted to counts from a recent answer, not with a write.
   */
  delay(now: number, plan: ReadPlan): number {
    const hold = this.holdEstimate();
    const position = this.position(plan.ticket);
    this.strongNext = false;
    if (hold !== undefined && this.pollStreak === 0) {
      const cycle = this.cycleMs(hold);
      // Near the turn, at the pace the line was seen moving (hand-overs on a loaded host take
      // several round trips: timed by the fastest turn, a waiter would read at every place), and
      // never slower than two usual turns: a stall the line went through (a dead ticket passed)
      // must not make waiters read late after it.
      const measured = this.paceSpans.length === 0 ? undefined : Math.min(...this.paceSpans);
      const turn = Math.min(measured ?? cycle, PACE_LIMIT * cycle);
      // Timers of a loaded process fire late: aimed reads are set that much earlier.
      const late = this.history.timerLateness();
      if (plan.far) {
        // Far back: at the pace the line was seen moving (never faster than holds), aiming at a
        // few turns before its own. That pace is never taken slower than two usual turns, nor
        // than one from a single span (a short first span may hold a stall): a stall the line
        // went through (dead tickets passed) would otherwise make waiters behind it sleep past
        // their turn, and the line would stay slow; a line that is slower for good costs a few
        // more timing reads.
        const pace = Math.max(hold, Math.min(measured ?? cycle, (this.paceSpans.length < 2 ? 1 : PACE_LIMIT) * cycle));
        const aim = Math.max(FAR_AIM_MIN, Math.ceil(position * FAR_AIM));
        const halfway = ((position - aim) * pace) / 2;
        // With a pace measured, the read comes at least half-way there. With none, the usual turn
        // is a guess (round trips of a burst of requests, at start-up, make it long; holds and
        // round trips of a quiet moment, short), and a waiter served while it sleeps stalls the
        // line: the first timing read comes half-way at most, and within a quarter of the longest
        // pause unless holds alone take longer, to measure the pace. Either way at most
        // `plan.timingReadMs` apart: a waiter served while it sleeps reads before it could be passed.
        const aimed =
          measured === undefined
            ? Math.min(halfway, Math.max(plan.timingReadMs / 4, ((position - aim) * hold) / 2))
            : Math.max(this.holderSince + hold + (position - 1 - aim) * pace - late - now, halfway);
        const delay = Math.min(aimed, plan.timingReadMs);
        // The read that brings the waiter near its turn is strongly consistent when the last such
        // answer would be too old by its turn: a lease it is promoted to counts from it.
        this.strongNext = aim === FAR_AIM_MIN && plan.viewAgeMs + delay + (aim + 4) * pace > plan.viewValidMs;
        return delay;
      }
      const served = this.holderSince + hold + (position - 1) * turn + this.rttMs / 2 - late - now;
      // Served then, with a margin of a few turns: would the last such answer still count?
      const stale = plan.viewAgeMs + Math.max(0, served) + 4 * turn > plan.viewValidMs;
      // Read one turn early, a strongly consistent answer still counts by the turn only when turns
      // are short next to its validity; with longer ones, no earlier read would, and only the read
      // next in line is strongly consistent (when the release is late, it shows another holder,
      // and a promoted lease counts from it).
      const early = position > 1 && stale && 5 * turn <= plan.viewValidMs;
      const away = early ? served - turn : served;
      // Only that read needs to be strongly consistent: a lease counts from such an answer.
      this.strongNext = stale && (early || position <= 1);
      // Never longer than a far-back read either: a line that stalled can move fast again.
      if (away > POLL_MIN_MS) return Math.min(away, position <= 1 ? this.maxPollMs : plan.farReadMs);
    }
    // Overdue: next in line, the release may land any moment; further back, the line moves a
    // ticket per turn, so reading much more often than that finds nothing new, and not much
    // less often than the line could serve this waiter at its fastest (else it is served while
    // it sleeps, and the line waits for it): as often as that while the release is a little
    // late, then less often the longer it is (an eighth of the time it has been overdue).
    // Strongly consistent only when the last such answer is too old for a promoted lease.
    this.strongNext = plan.viewAgeMs > plan.viewValidMs;
    // A hold not known yet counts as none: overdue since the holder got the lock.
    const overdue = Math.max(0, now - this.holderSince - (hold ?? 0));
    const fastest = Math.max((position - 1) * this.cycleMs(hold ?? 0), overdue / 8);
    const cap =
      position <= 1
        ? Math.min(
            overdue <= NEXT_IN_LINE_CLOSE_MS && !this.holderLongSince ? this.rttMs + NEXT_IN_LINE_SLACK_MS : BEHIND_POLL_MS,
            this.maxPollMs,
          )
        : Math.min(this.maxPollMs, plan.farReadMs, Math.max(BEHIND_POLL_MS, fastest));
    const base = hold === undefined ? FIRST_POLL_MS : position <= 1 ? POLL_MIN_MS : Math.max(POLL_MIN_MS, this.cycleMs(hold) / 4);
    return Math.min(cap, base * POLL_GROWTH ** this.pollStreak++);
  }

  /** How long holders of this key usually keep it: from this process's holds and the releases its waiters saw, else as the last holder wrote it. */
  private holdEstimate(): number | undefined {
    return this.history.holdEstimate(this.key) ?? this.lastHoldMs;
  }

  /**
   * A release not seen before: how long its holder kept the lock, as it wrote it (on its own
   * monotonic clock, so no hand-over delay is counted), is one more hold of the key. A process
   * whose own last holds were slow (a loaded moment) learns the usual ones from the next
   * releases its waiters see, instead of aiming every read late until it holds again.
   */
  private noteHold(record: LockRecord): void {
    if (record.lastHoldMs === undefined) return;
    this.lastHoldMs = record.lastHoldMs;
    // A holder that took the lock free leaves the last hold in the item but not its release.
    if (record.released !== undefined) this.history.recordHold(this.key, record.lastHoldMs, record.released);
  }

  /** Notes a change of holder, and when it most likely got the lock (the reads are timed from it). */
  private noteHolder(record: LockRecord, now: number): void {
    const holderId = record.token ?? (isHeld(record) ? `ticket ${record.head}` : undefined);
    if (holderId !== this.holderId) {
      this.holderSince = this.startHint(record, now) ?? this.changeTime(now, record.head);
      this.holderLongSince = this.startedLongAgo(record, now);
      this.holderId = holderId;
      this.holderHead = record.head;
      this.pollStreak = 0;
    }
    this.lastAnswerAt = now;
  }

  /**
   * A view that shows the line where it was: when it has stood still for several slow turns (a
   * dead head waited out, a waiter served as it slept), the spans measured across the stall say
   * nothing of how fast it moves after, and are dropped (the first read after measures anew).
   */
  private noteStill(now: number): void {
    const hold = this.holdEstimate();
    if (hold === undefined || now - this.lineMovedAt <= STILL_TURNS * this.cycleMs(hold)) return;
    this.forgetPace();
  }

  /** Drops the pace measured: the next views measure it anew. */
  private forgetPace(): void {
    this.paceSpans.length = 0;
    this.paceFrom = undefined;
  }

  /**
   * Measures how fast the line moves, over spans of a few tickets seen while the waiter was far
   * back: there, its own reads do not pace the line (next in line, a late read slows the line, and
   * a pace measured then would feed on it). Each span starts where the last ended, so a stall (a
   * dead ticket passed, a waiter served while it slept) slows one span only, which the fastest of
   * the last few leaves out.
   */
  private measurePace(head: number, now: number, ticket: number | undefined): void {
    if (ticket === undefined || ticket - head <= FAR_TURNS) return;
    // A new ticket (queued anew, perhaps in a line recreated with tickets numbered afresh after the
    // item was deleted): a span across the two tickets may span two lines, and make the pace
    // millions of tickets a millisecond.
    if (this.paceFrom && this.paceFrom.ticket !== ticket) this.forgetPace();
    const from = this.paceFrom;
    if (from && from.head <= head && head - from.head < FAR_TURNS) return;
    if (from && from.head <= head) {
      this.paceSpans.push((now - from.at) / (head - from.head));
      if (this.paceSpans.length > PACE_SPANS) this.paceSpans.shift();
    }
    this.paceFrom = { head, at: now, ticket };
  }

  /**
   * When the holder seen at `now` got the lock, from the wall-clock times in the item: its
   * acquisition, or for a promoted waiter the release that served it, plus how late promoted
   * waiters of this process usually learn it. Only reads are timed by it: a host whose clock is
   * off reads too early or too late (a cost), never takes a lock too early (leases count on the
   * monotonic clock alone). Times that cannot be right (in the future, or long past) are ignored.
   */
  private startHint(record: LockRecord, now: number): number | undefined {
    const wall = record.token ? record.acquiredAt : record.updatedAt;
    if (wall === undefined) return undefined;
    const promoted = this.history.promotionDelay(this.key) ?? this.rttMs;
    const at = now - (Date.now() - wall) + (record.token ? 0 : promoted);
    return at > now + PLAUSIBLE_SKEW_MS || at < now - MAX_HINT_AGE_MS ? undefined : Math.min(at, now);
  }

  /** Whether the item says its holder started longer ago than a start hint is trusted ({@link startHint}). */
  private startedLongAgo(record: LockRecord, now: number): boolean {
    const wall = record.token ? record.acquiredAt : record.updatedAt;
    return wall !== undefined && now - (Date.now() - wall) < now - MAX_HINT_AGE_MS;
  }

  /**
   * When the holder seen at `now` most likely took over: now for the first holder seen; else one
   * usual hold after the previous holder's start, and a usual cycle more for each ticket served in
   * between; halfway between the previous answer and this one when nothing is known.
   */
  private changeTime(now: number, head: number | undefined): number {
    if (this.holderId === undefined) return now;
    const estimate = this.holdEstimate();
    if (estimate === undefined) return (this.lastAnswerAt + now) / 2;
    const served = head !== undefined && this.holderHead !== undefined ? Math.max(1, head - this.holderHead) : 1;
    const started = this.holderSince + estimate + (served - 1) * this.cycleMs(estimate) + this.rttMs;
    return Math.min(now, Math.max(this.lastAnswerAt, started));
  }

  /**
   * A turn of the line: a usual hold, the release write, and the next holder's read that finds it:
   * the fastest the line can move, used until a pace was measured.
   */
  private cycleMs(hold: number): number {
    return hold + 2.5 * this.rttMs;
  }
}

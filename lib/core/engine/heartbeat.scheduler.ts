import { monotonicNow } from '../../utils/clock';
import { type FallingBehind, HeartbeatPacer } from './heartbeat.pacer';
import { TimeHeap } from './time.heap';

/** What the scheduler needs to know of a held lock (times on the local monotonic clock). */
export interface ScheduledLease {
  /** When the next heartbeat is due. */
  nextBeatAt: number;
  /** Until when the holder may act; after it the lock counts as lost. */
  validUntil: number;
  /** A heartbeat or other write is in flight. */
  busy: boolean;
  /** Interval between heartbeats; `Infinity` when the holder renews by hand. */
  heartbeatMs: number;
  /** The scheduler's: the lease's place in its timeline (`-1` when not scheduled). */
  slot: number;
  /** The scheduler's: its heartbeat waits for the pacer (`queued`) or was started by it (`sending`). */
  beat: 'idle' | 'queued' | 'sending';
}

/**
 * Starts the heartbeat of a lease; resolves once it ended: `true` when the server answered,
 * `false` when the write failed, `undefined` when no write was sent.
 */
export type HeartbeatStart<T> = (lease: T) => Promise<boolean | undefined>;

/** Heartbeats due within this many milliseconds of the earliest are queued in the same wake-up. */
const COALESCE_MS = 5;
/** A heartbeat waiting longer than this (or a twentieth of its interval) past its due time is late: the pacer sends more at once. */
const LATE_MS = 500;

/**
 * One timer for every lock a manager holds, however many: it wakes at the earliest due
 * heartbeat or expiry, handles the leases that are due, and sleeps again. The leases sit in a
 * heap by due time, so each wake-up, add, renewal and removal costs O(log n) whatever the number
 * held. The timer is unref'd, so held locks alone do not keep a process alive.
 *
 * A due heartbeat does not start at once: it waits in a queue, the lease whose lease runs out
 * first at its head, until the {@link HeartbeatPacer} lets it go, which paces heartbeat writes to
 * what the server answers (a burst of thousands due together never floods the HTTP agent's
 * sockets or the event loop). A queued heartbeat has no request running, so no request limit
 * runs out on it; its lease still runs out on time, and is reported lost then. When the server
 * cannot take every heartbeat in time, `warn` gets one {@link FallingBehind} report.
 *
 * Expiry is checked before heartbeats on every wake-up, so a process that resumes after a
 * pause longer than its lease reports the loss first, before it renews anything.
 */
export class HeartbeatScheduler<T extends ScheduledLease> {
  /** Every scheduled lease, by when it next needs the scheduler: its heartbeat or its expiry. */
  private readonly timeline = new TimeHeap<T>((lease, index) => {
    lease.slot = index;
  });
  /** Leases whose heartbeat is due, by when their lease runs out (entries of leases gone since are skipped). */
  private readonly ready = new TimeHeap<T>();
  private readonly pacer = new HeartbeatPacer();
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Number.POSITIVE_INFINITY;

  constructor(
    private readonly onHeartbeatDue: HeartbeatStart<T>,
    private readonly onExpired: (lease: T) => void,
    private readonly warn: (behind: FallingBehind, held: T[]) => void = () => undefined,
  ) {}

  /** Number of leases being renewed. */
  get size(): number {
    return this.timeline.size;
  }

  /** Heartbeat writes in flight now. */
  get inFlight(): number {
    return this.pacer.active;
  }

  /** Starts renewing a lease. */
  add(lease: T): void {
    if (lease.slot >= 0 && this.timeline.at(lease.slot) === lease) return this.touch(lease);
    lease.beat = 'idle';
    this.timeline.push(lease, dueAt(lease));
    this.wakeBy(this.timeline.peekTime());
  }

  /** Stops renewing a lease. */
  delete(lease: T): void {
    if (!this.has(lease)) return;
    this.timeline.removeAt(lease.slot);
    lease.beat = 'idle';
    if (this.timeline.size === 0) this.stopTimer();
  }

  /** Call after a lease's times changed (a write finished) so the timer can move earlier. */
  touch(lease: T): void {
    if (!this.has(lease)) return;
    this.timeline.update(lease.slot, dueAt(lease));
    this.wakeBy(this.timeline.peekTime());
  }

  /** Stops the timer and forgets every lease. */
  close(): void {
    this.timeline.clear();
    this.ready.clear();
    this.stopTimer();
  }

  private has(lease: T): boolean {
    return lease.slot >= 0 && lease.slot < this.timeline.size && this.timeline.at(lease.slot) === lease;
  }

  private wakeBy(at: number): void {
    if (at >= this.timerAt) return;
    this.stopTimer();
    this.timerAt = at;
    this.timer = setTimeout(() => this.tick(), Math.max(0, at - monotonicNow()));
    this.timer.unref();
  }

  private stopTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
  }

  private tick(): void {
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
    const now = monotonicNow();
    const expired: T[] = [];
    // Leases whose next time (their expiry) falls within the coalescing window: put back after the loop.
    const soon: T[] = [];
    while (this.timeline.peekTime() <= now + COALESCE_MS) {
      const lease = this.timeline.peek() as T;
      if (now >= lease.validUntil) {
        this.timeline.removeAt(0);
        lease.beat = 'idle';
        expired.push(lease);
        continue;
      }
      if (!lease.busy && lease.beat === 'idle' && lease.nextBeatAt <= now + COALESCE_MS) {
        lease.beat = 'queued';
        this.ready.push(lease, lease.validUntil);
      }
      // Now due at its expiry (queued or busy), or at its heartbeat when that moved meanwhile.
      const at = dueAt(lease);
      if (at > now + COALESCE_MS) this.timeline.update(0, at);
      else soon.push(this.timeline.removeAt(0));
    }
    for (const lease of soon) this.timeline.push(lease, dueAt(lease));
    // Every loss found at this wake-up is reported before any renewal starts.
    for (const lease of expired) this.onExpired(lease);
    this.dispatch(now);
    this.wakeBy(this.timeline.peekTime());
  }

  /**
   * Starts queued heartbeats while the pacer lets them go. When it holds back the head of the
   * queue, the timer wakes when that heartbeat becomes urgent (a write that ends wakes it sooner).
   */
  private dispatch(now: number): void {
    for (;;) {
      const lease = this.dropStale(now);
      if (lease === undefined) return;
      if (!this.pacer.mayStart(lease, now)) {
        const urgentAt = this.pacer.urgentAt(lease);
        // Past it already: the hard cap holds it back, and only a write that ends frees a place.
        if (urgentAt > now) this.wakeBy(urgentAt);
        return;
      }
      this.ready.pop();
      this.start(lease, now);
    }
  }

  /**
   * Pops the entries of leases no longer waiting; returns the head that is. A lease renewed while
   * it waited (an `extend()`) has its next heartbeat in the future: it goes back to the timeline.
   */
  private dropStale(now: number): T | undefined {
    for (;;) {
      const lease = this.ready.peek();
      if (lease === undefined || (lease.beat === 'queued' && this.has(lease) && lease.nextBeatAt <= now + COALESCE_MS)) return lease;
      this.ready.pop();
      if (lease.beat === 'queued' && this.has(lease)) {
        lease.beat = 'idle';
        this.touch(lease);
      }
    }
  }

  private start(lease: T, now: number): void {
    const lateMs = now - lease.nextBeatAt;
    const behind = this.pacer.behind(lateMs, lease.heartbeatMs, now);
    if (behind) this.warn(behind, this.leases());
    this.pacer.start();
    lease.beat = 'sending';
    void this.onHeartbeatDue(lease).then(
      (answered) => this.finished(lease, now, answered),
      () => this.finished(lease, now, false),
    );
  }

  private finished(lease: T, sentAt: number, answered: boolean | undefined): void {
    const now = monotonicNow();
    if (lease.beat === 'sending') {
      lease.beat = 'idle';
      this.touch(lease);
    }
    if (answered === undefined) {
      this.pacer.skip();
    } else {
      // Heartbeats waiting past their due time: a slow answer must not shrink the limit then.
      const head = this.dropStale(now);
      const late = head !== undefined && now - head.nextBeatAt > Math.min(LATE_MS, head.heartbeatMs / 20);
      this.pacer.finish(now - sentAt, answered, late, now);
    }
    this.dispatch(now);
  }

  /** Every lease scheduled now (for the rare warning: O(n)). */
  private leases(): T[] {
    const all: T[] = [];
    for (let i = 0; i < this.timeline.size; i++) all.push(this.timeline.at(i));
    return all;
  }
}

function dueAt(lease: ScheduledLease): number {
  return lease.busy || lease.beat !== 'idle' ? lease.validUntil : Math.min(lease.nextBeatAt, lease.validUntil);
}

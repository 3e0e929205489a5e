import { monotonicNow } from '../../utils/clock';

/** What the scheduler needs to know of a held lock (times on the local monotonic clock). */
export interface ScheduledLease {
  /** When the next heartbeat is due. */
  nextBeatAt: number;
  /** Until when the holder may act; after it the lock counts as lost. */
  validUntil: number;
  /** A heartbeat or other write is in flight. */
  busy: boolean;
}

/** Heartbeats due within this many milliseconds of the earliest are sent in the same wake-up. */
const COALESCE_MS = 5;
/**
 * At most this many heartbeats start per wake-up; the rest follow a few milliseconds later, so
 * thousands of locks due together do not flood the HTTP agent's sockets or the event loop.
 */
const MAX_BEATS_PER_WAKE = 200;
const SPREAD_MS = 10;

/**
 * One timer for every lock a manager holds, however many: it wakes at the earliest due
 * heartbeat or expiry, handles every lease that is due, and sleeps again. The timer is
 * unref'd, so held locks alone do not keep a process alive.
 *
 * Expiry is checked before heartbeats on every wake-up, so a process that resumes after a
 * pause longer than its lease reports the loss first, before it renews anything.
 */
export class HeartbeatScheduler<T extends ScheduledLease> {
  private readonly leases = new Set<T>();
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Number.POSITIVE_INFINITY;

  constructor(
    private readonly onHeartbeatDue: (lease: T) => void,
    private readonly onExpired: (lease: T) => void,
  ) {}

  /** Number of leases being renewed. */
  get size(): number {
    return this.leases.size;
  }

  /** Starts renewing a lease. */
  add(lease: T): void {
    this.leases.add(lease);
    this.wakeBy(dueAt(lease));
  }

  /** Stops renewing a lease. */
  delete(lease: T): void {
    this.leases.delete(lease);
    if (this.leases.size === 0) this.stopTimer();
  }

  /** Call after a lease's times changed (a heartbeat finished) so the timer can move earlier. */
  touch(lease: T): void {
    if (this.leases.has(lease)) this.wakeBy(dueAt(lease));
  }

  /** Stops the timer and forgets every lease. */
  close(): void {
    this.leases.clear();
    this.stopTimer();
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
    for (const lease of this.leases) {
      if (now >= lease.validUntil) {
        this.leases.delete(lease);
        this.onExpired(lease);
      }
    }
    let started = 0;
    let deferred = false;
    for (const lease of this.leases) {
      if (lease.busy || now + COALESCE_MS < lease.nextBeatAt) continue;
      if (started++ < MAX_BEATS_PER_WAKE) this.onHeartbeatDue(lease);
      else deferred = true;
    }
    let next = deferred ? now + SPREAD_MS : Number.POSITIVE_INFINITY;
    for (const lease of this.leases) next = Math.min(next, deferred && !lease.busy ? lease.validUntil : dueAt(lease));
    if (next !== Number.POSITIVE_INFINITY) this.wakeBy(next);
  }
}

function dueAt(lease: ScheduledLease): number {
  return lease.busy ? lease.validUntil : Math.min(lease.nextBeatAt, lease.validUntil);
}

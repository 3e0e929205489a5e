/** The manager's bookkeeping types: held leases, waiting callers, per-key slots. */
import type { LockHolder } from '../../errors/lock.errors';
import type { ScheduledLease } from './heartbeat.scheduler';
import type { AcquireTrace, HoldTrace } from '../../observability/lock.telemetry';
import type { Lock } from './lock';
import type { ReleaseFire } from '../../store/mutex/mutex-store.protocol';
import type { FireRecord } from '../../store/mutex/mutex.record';
import type { LazyAbortController } from '../../utils/lazy-abort.controller';

/** A lock this manager holds. Times are on the local monotonic clock. */
export interface HeldLease extends ScheduledLease {
  storedKey: string;
  token: string;
  /** The ticket served when it was granted: a promoted waiter holds by it until its token is written (then `undefined`). */
  ticket: number | undefined;
  /** The lease stored in the item now. */
  leaseMs: number;
  /** The record version this holder's last write left (an orphaned lease is taken over only at it). */
  rvn: string | undefined;
  /** The lease the holder asked for; a promoted waiter starts on a shorter claim lease and renews to it. */
  targetLeaseMs: number;
  /** Interval between heartbeats; `Infinity` when the holder renews by hand. */
  heartbeatMs: number;
  state: 'held' | 'released' | 'lost';
  lock: Lock;
  /** Aborts the lock's signal when it is lost or released (see `Lock.signal`). */
  controller: LazyAbortController;
  /** Serialises this lease's writes, so a heartbeat never lands after (and undoes) an extend; `undefined` when none is queued. */
  writes: Promise<unknown> | undefined;
  lastError?: unknown;
  /** Monotonic time of acquisition, for the hold-time estimate. */
  acquiredAt: number;
  /** Tickets taken behind this holder's, as last seen: waiters of other processes (a hand-over waits for them). */
  queuedElsewhere: number;
  /** The hold span, when OpenTelemetry is in use. */
  trace?: HoldTrace;
  /** Its caller had given up before it was acquired: released at once, and no event tells of it. */
  quiet?: boolean;
  /** The scheduled fire its acquisition claimed (epoch ms), if any: its release records how the run ended. */
  fire?: number;
  /** How the run of {@link fire} ended, as its caller said (a release without it says `done`; a shutdown, `failed`). */
  fireOutcome?: ReleaseFire;
}

/** A caller waiting for a key. */
export interface Waiter {
  key: string;
  storedKey: string;
  /** The owner token this caller writes with on every attempt, so a lost response is recognised. */
  token: string;
  /** Owner name written with the lock. */
  owner: string;
  leaseMs: number;
  data: string | undefined;
  heartbeat: boolean;
  startedAt: number;
  deadline: number;
  /** Aborts on the caller's signal, at the deadline, or at shutdown. */
  cancel: LazyAbortController;
  /** Last holder seen, for the busy error. */
  holder?: LockHolder;
  /** Monotonic time the last holder seen is expected to release, when its usual hold is known. */
  expectedReleaseAt?: number;
  /** Last transient DynamoDB error while waiting: thrown at the deadline when no holder was ever seen. */
  lastError?: unknown;
  /**
   * Monotonic send time of the earliest write carrying this waiter's token whose outcome is
   * unknown (it failed, yet may have been applied): a lease later found in the item counts from then.
   */
  uncertainSince?: number;
  settled: boolean;
  /** The `waiting` event was emitted. */
  waiting?: boolean;
  /** The acquire span, when OpenTelemetry is in use. */
  trace?: AcquireTrace;
  /** The scheduled fire this single attempt claims (epoch ms; `fireTime`). */
  fire?: number;
  /** The fire at or after {@link fire} that the item showed claimed already: it ran elsewhere. */
  fireClaimed?: FireRecord;
  resolve(lock: Lock): void;
  reject(error: unknown): void;
}

/** The fields of a waiter that every write taking the lock for it carries (free acquire, hand-over). */
export function writeOf(waiter: Waiter) {
  return { key: waiter.storedKey, token: waiter.token, owner: waiter.owner, leaseMs: waiter.leaseMs, data: waiter.data, fire: waiter.fire };
}

/** The state of one key in this manager: its local holder and the local FIFO queue of waiters. */
export interface KeySlot {
  storedKey: string;
  holder?: HeldLease;
  waiters: Waiter[];
  /** A waiter is talking to DynamoDB for this key. */
  polling: boolean;
  /** Reserved for a set taken in one write (`KeyQueues.reserve()`): a single attempt is busy at once. */
  reserved?: boolean;
}

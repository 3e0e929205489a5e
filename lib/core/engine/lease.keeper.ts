import { LockLostError, type LockLostReason } from '../../errors/lock.errors';
import {
  type ExpiryCause,
  HEARTBEAT_FAILED,
  HEARTBEATS_BEHIND,
  LOCK_EXPIRED,
  LOCK_GONE,
  LOCK_RELEASED,
  LOCK_TAKEN,
  NOT_HELD_FOR_EXTEND,
} from '../../errors/lock.messages';
import type { AcquiredVia } from '../../interfaces/lock-event.interface';
import { type LockRecord, ticketsWaiting } from '../../store/mutex/mutex.record';
import type { MutexStorePort } from '../../store/mutex/mutex-store.port';
import { transientKind } from '../../store/dynamo/transient-error';
import { RETRY_MIN_MS } from '../../utils/backoff';
import { jitter, monotonicNow } from '../../utils/clock';
import { type Duration, parseLease } from '../../utils/duration';
import { LazyAbortController } from '../../utils/lazy-abort.controller';
import { HeartbeatScheduler } from './heartbeat.scheduler';
import type { KeyHistory } from './key-history';
import { createLock, type Lock, type LockHost } from './lock';
import type { LockEvents } from './lock.events';
import { heartbeatIntervalFor, type ResolvedLockOptions } from './lock-options.resolver';
import type { HeldLease, Waiter } from './lock-state';

/** What the lease keeper works with. */
export interface LeaseKeeperDeps {
  readonly options: ResolvedLockOptions;
  /** Where leases are renewed: the lock store, or a semaphore's view of it (heartbeats and reads only). */
  readonly store: Pick<MutexStorePort, 'heartbeat' | 'read'>;
  readonly history: KeyHistory;
  readonly events: LockEvents;
  /** The callbacks the `Lock` handles it creates call. */
  readonly lockHost: LockHost;
  /** A held lease was lost: the key's local queue goes on. */
  onLost(lease: HeldLease): void;
}

/**
 * The locks a manager holds: creates their handles, renews their leases (one timer for all),
 * serialises each lease's writes, and marks a lease lost when a heartbeat finds it taken or gone
 * or its lease runs out on the local clock. Validity always counts from when a write was sent.
 */
export class LeaseKeeper {
  private readonly leases = new Map<Lock, HeldLease>();
  /** Leases that ran out on the local clock, until their handle is released or dropped. */
  private readonly expired = new WeakMap<Lock, HeldLease>();
  private readonly scheduler = new HeartbeatScheduler<HeldLease>(
    (lease) => this.heartbeat(lease),
    (lease) => this.lose(lease, 'expired'),
    (behind, held) => {
      const renewed = held.filter((lease) => Number.isFinite(lease.heartbeatMs));
      const needed = Math.round(renewed.reduce((sum, lease) => sum + 1_000 / lease.heartbeatMs, 0));
      this.deps.options.logger.warn?.(HEARTBEATS_BEHIND(renewed.length, needed, behind.answeredPerSecond, behind.inFlight, behind.lateMs));
    },
  );

  constructor(private readonly deps: LeaseKeeperDeps) {}

  /** Number of locks held. */
  get size(): number {
    return this.leases.size;
  }

  /** The lease behind a lock handle, while it is held. */
  get(lock: Lock): HeldLease | undefined {
    return this.leases.get(lock);
  }

  /** Every lease held now. */
  all(): HeldLease[] {
    return [...this.leases.values()];
  }

  /** Starts holding a lock whose lease (`leaseMs`, as the write granted it) counts from monotonic time `sentAt`. */
  hold(waiter: Waiter, record: LockRecord, sentAt: number, via: AcquiredVia, leaseMs: number): HeldLease {
    const { options, history, events } = this.deps;
    const controller = new LazyAbortController();
    const lock = createLock({
      key: waiter.key,
      owner: options.ownerName,
      fencingToken: record.fencingToken ?? 0,
      acquiredAt: new Date(),
      leaseId: waiter.token,
      controller,
      host: this.deps.lockHost,
    });
    // A promoted waiter holds the claim lease until its first heartbeat renews it to its own.
    const heartbeatMs = waiter.heartbeat ? heartbeatIntervalFor(options, leaseMs) : Number.POSITIVE_INFINITY;
    const lease: HeldLease = {
      storedKey: waiter.storedKey,
      token: waiter.token,
      // Its token in the item holds it from now on: every write that removes a token moves `head` past
      // the ticket, so the ticket clause (a slow condition for some servers) could never match again.
      ticket: record.token === waiter.token ? undefined : record.head,
      leaseMs,
      rvn: record.rvn,
      targetLeaseMs: waiter.leaseMs,
      heartbeatMs,
      validUntil: sentAt + leaseMs - safetyMargin(leaseMs),
      nextBeatAt: sentAt + heartbeatMs,
      busy: false,
      slot: -1,
      beat: 'idle',
      state: 'held',
      lock,
      controller,
      writes: undefined,
      acquiredAt: monotonicNow(),
      queuedElsewhere: ticketsWaiting(record),
      fire: waiter.fire,
    };
    this.leases.set(lock, lease);
    this.scheduler.add(lease);
    // Held by a live lease: no longer an orphan to take back, nor a version to watch. Whatever
    // ends it (release, hand-over, pass) leaves the counter one above its token.
    if (record.fencingToken !== undefined) history.noteFence(waiter.storedKey, record.fencingToken + 1);
    history.dropOrphan(waiter.storedKey, waiter.token);
    history.forgetObservation(waiter.storedKey);
    // A caller that gave up while the write was in flight never sees this lock, which is released
    // at once: no event tells of it.
    lease.quiet = waiter.settled;
    if (lease.quiet) return lease;
    const waitedMs = Math.round(monotonicNow() - waiter.startedAt);
    if (via === 'takeover') {
      events.emit(
        { type: 'takeover', key: waiter.key, owner: waiter.owner, fencingToken: lock.fencingToken, previousHolder: waiter.holder },
        waiter.trace,
      );
    }
    events.emit({ type: 'acquired', key: waiter.key, owner: waiter.owner, fencingToken: lock.fencingToken, waitedMs, via }, waiter.trace);
    lease.trace = waiter.trace?.startHold(waiter.key, waiter.owner, lock.fencingToken);
    return lease;
  }

  /** Whether a lock is still held; loses it first when its lease ran out on the local clock. */
  checkHeld(lock: Lock): boolean {
    const lease = this.leases.get(lock);
    if (!lease || lease.state !== 'held') return false;
    if (monotonicNow() >= lease.validUntil) {
      this.lose(lease, 'expired');
      return false;
    }
    return true;
  }

  /**
   * The lease of a lock lost because it ran out on the local clock, once: its release may still
   * free the item, which carries its token until another owner takes it.
   */
  takeExpired(lock: Lock): HeldLease | undefined {
    const lease = this.expired.get(lock);
    this.expired.delete(lock);
    return lease;
  }

  /**
   * Stops holding a lock that is being released: no more heartbeats, and its signal aborts with a
   * `LockLostError` of reason `released` (work still running under it must stop), made when read.
   * @returns its lease, or `undefined` when it was not held.
   */
  release(lock: Lock): HeldLease | undefined {
    const lease = this.leases.get(lock);
    if (!lease || lease.state !== 'held') return undefined;
    lease.state = 'released';
    this.scheduler.delete(lease);
    this.leases.delete(lock);
    this.deps.history.forgetObservation(lease.storedKey);
    lease.controller.abortWith(() => new LockLostError(LOCK_RELEASED(lock.key), lock.key, 'released'));
    return lease;
  }

  /** Renews a held lock now, optionally with a new lease. */
  async extend(lock: Lock, leaseDuration?: Duration): Promise<void> {
    const lease = this.leases.get(lock);
    const leaseMs = leaseDuration === undefined ? lease?.targetLeaseMs : parseLease(leaseDuration);
    // Why it is not held is the reason its signal carries (expired, taken, gone, shutdown...); the
    // `Lock` handle rethrows it too once the lease is forgotten here.
    const notHeld = (): unknown =>
      lease?.controller.aborted ? lease.controller.reason : new LockLostError(NOT_HELD_FOR_EXTEND(lock.key), lock.key, 'gone');
    if (!lease || !this.checkHeld(lock) || leaseMs === undefined) throw notHeld();
    await this.serial(lease, () => this.renew(lease, leaseMs, true));
    if (lease.state !== 'held') throw notHeld();
    this.deps.events.emitFor(lease, { type: 'extended', key: lock.key, owner: lock.owner, fencingToken: lock.fencingToken, leaseMs });
  }

  /** Runs a write of `lease` after its earlier writes, marking it busy for the scheduler. */
  serial<T>(lease: HeldLease, write: () => Promise<T>): Promise<T> {
    const run = (lease.writes ?? Promise.resolve()).then(async () => {
      lease.busy = true;
      try {
        return await write();
      } finally {
        lease.busy = false;
        this.scheduler.touch(lease);
      }
    });
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    lease.writes = tail;
    // An idle lease keeps no promise (thousands held add up).
    void tail.then(() => {
      if (lease.writes === tail) lease.writes = undefined;
    });
    return run;
  }

  /**
   * Marks a held lock lost because a fenced write found it so (the lock item no longer holds its
   * token, or a data item carries a newer token): its signal aborts as a heartbeat's finding would.
   */
  markLost(lock: Lock, reason: 'taken' | 'gone', newHolder?: string): void {
    const lease = this.leases.get(lock);
    if (lease) this.lose(lease, reason, undefined, newHolder);
  }

  /** Stops the heartbeat timer (at shutdown, once every lease is released). */
  close(): void {
    this.scheduler.close();
  }

  /**
   * One scheduled heartbeat: `true` when the server answered, `false` when the write failed,
   * `undefined` when none was sent (the lease was busy or gone, or a write that ran first, an
   * `extend()`, moved its next heartbeat).
   */
  private heartbeat(lease: HeldLease): Promise<boolean | undefined> {
    if (lease.busy || lease.state !== 'held') return Promise.resolve(undefined);
    const dueAt = lease.nextBeatAt;
    return this.serial(lease, () =>
      lease.nextBeatAt === dueAt ? this.renew(lease, lease.targetLeaseMs, false) : Promise.resolve(undefined),
    ).catch(() => false);
  }

  /**
   * One heartbeat write. Validity counts from when the write was sent, not answered.
   * A transient failure is retried until the lease runs out; `extend` rethrows it.
   * @returns `true` when the server answered, `false` when the write failed, `undefined` when none was sent.
   */
  private async renew(lease: HeldLease, leaseMs: number, rethrow: boolean): Promise<boolean | undefined> {
    if (lease.state !== 'held') return undefined;
    const { store, options, events } = this.deps;
    const sentAt = monotonicNow();
    // When this heartbeat was due; never later than now, so the next one never lands past the lease.
    const dueAt = Math.min(lease.nextBeatAt, sentAt);
    try {
      const result = await store.heartbeat({
        key: lease.storedKey,
        holding: { token: lease.token, ticket: lease.ticket },
        owner: options.ownerName,
        leaseMs,
        ttlLeaseMs: leaseMs,
        // A promoted waiter's first write: the item then shows when it got the lock, not this write.
        acquiredAt: lease.lock.acquiredAt.getTime(),
      });
      if (result.ok) lease.rvn = result.record.rvn;
      // Ran out locally meanwhile: the orphan mark follows the version this write left.
      if (result.ok && (lease.state as HeldLease['state']) === 'lost') this.deps.history.addOrphan(lease.storedKey, lease.token, lease.rvn);
      if (lease.state !== 'held') return true;
      if (!result.ok) {
        // Servers that do not return the blocking item (dynalite) need a read to tell "taken" from "gone".
        const current = result.current ?? (await store.read(lease.storedKey).catch(() => undefined));
        this.lose(lease, current?.token ? 'taken' : 'gone', undefined, current?.owner);
        return true;
      }
      lease.leaseMs = leaseMs;
      lease.targetLeaseMs = leaseMs;
      lease.rvn = result.record.rvn;
      // The heartbeat wrote the token: the holder holds by it (see `hold()`).
      lease.ticket = undefined;
      lease.queuedElsewhere = ticketsWaiting(result.record);
      if (Number.isFinite(lease.heartbeatMs)) lease.heartbeatMs = heartbeatIntervalFor(options, leaseMs);
      lease.validUntil = sentAt + leaseMs - safetyMargin(leaseMs);
      // A scheduled heartbeat keeps its cadence (one per interval) when it went out late, by up to
      // a quarter of an interval: a late one does not push every later one back.
      lease.nextBeatAt = rethrow ? sentAt + lease.heartbeatMs : Math.max(dueAt + lease.heartbeatMs, sentAt + lease.heartbeatMs * 0.75);
      lease.lastError = undefined;
      if (monotonicNow() >= lease.validUntil)
        this.lose(lease, 'expired', { kind: 'late-answer', answeredAfterMs: Math.round(monotonicNow() - sentAt) });
      return true;
    } catch (error) {
      if (lease.state !== 'held') return false;
      lease.lastError = error;
      const left = Math.round(lease.validUntil - monotonicNow());
      options.logger.warn?.(HEARTBEAT_FAILED(lease.lock.key, error, left));
      if (Number.isFinite(lease.heartbeatMs)) {
        lease.nextBeatAt = monotonicNow() + Math.min(jitter(Math.max(RETRY_MIN_MS, lease.heartbeatMs / 4)), Math.max(0, left / 2));
      }
      const delayMs = Math.max(0, Math.round(lease.nextBeatAt - monotonicNow()));
      events.emitFor(lease, { type: 'retry', key: lease.lock.key, owner: lease.lock.owner, operation: 'heartbeat', error, delayMs });
      if (rethrow) throw error;
      return false;
    }
  }

  /** Marks a lease lost and aborts its signal with a {@link LockLostError}. */
  private lose(lease: HeldLease, reason: Exclude<LockLostReason, 'released' | 'shutdown'>, expiry?: ExpiryCause, newHolder?: string): void {
    if (lease.state !== 'held') return;
    const { options, history, events } = this.deps;
    lease.state = 'lost';
    this.scheduler.delete(lease);
    this.leases.delete(lease.lock);
    // Ran out locally: the item may still carry the token, which no caller holds now.
    if (reason === 'expired') {
      history.addOrphan(lease.storedKey, lease.token, lease.rvn);
      this.expired.set(lease.lock, lease);
    }
    const key = lease.lock.key;
    const cause = reason === 'expired' ? lease.lastError : undefined;
    const message = lossMessage(key, reason, newHolder, () =>
      LOCK_EXPIRED(key, Math.round(monotonicNow() - lease.validUntil), expiry ?? expiryCause(lease)),
    );
    const error = new LockLostError(message, key, reason, cause === undefined ? undefined : { cause });
    options.logger.warn?.(message);
    events.emitFor(lease, {
      type: 'lost',
      key,
      owner: options.ownerName,
      fencingToken: lease.lock.fencingToken,
      heldMs: Math.round(monotonicNow() - lease.acquiredAt),
      reason,
    });
    lease.controller.abort(error);
    this.deps.onLost(lease);
  }
}

/** The message of a loss; `expired` builds the expiry message only when needed. */
function lossMessage(key: string, reason: 'expired' | 'taken' | 'gone', newHolder: string | undefined, expired: () => string): string {
  if (reason === 'expired') return expired();
  return reason === 'taken' ? LOCK_TAKEN(key, newHolder) : LOCK_GONE(key);
}

/** Why a lease ran out, from what its holder knows: no heartbeats, failing ones, one unanswered, or none ran. */
function expiryCause(lease: HeldLease): ExpiryCause {
  if (!Number.isFinite(lease.heartbeatMs)) return { kind: 'no-heartbeat' };
  if (lease.lastError !== undefined) return { kind: transientKind(lease.lastError), error: lease.lastError };
  return lease.busy ? { kind: 'unanswered' } : { kind: 'paused' };
}

/**
 * How much earlier than the lease a holder stops trusting its lock: covers clock-rate
 * differences between hosts and the time between a check and the protected action.
 */
function safetyMargin(leaseMs: number): number {
  return Math.min(1_000, Math.ceil(leaseMs * 0.1));
}

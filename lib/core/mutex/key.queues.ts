import { LockBusyError, LockUnavailableError } from '../../errors/lock.errors';
import { FIRE_CLAIMED, LOCK_BUSY } from '../../errors/lock.messages';
import type { LockRecord } from '../../store/mutex/mutex.record';
import type { MutexStorePort } from '../../store/mutex/mutex-store.port';
import { monotonicNow } from '../../utils/clock';
import { MAX_DURATION_MS } from '../../utils/duration';
import type { KeyHistory } from '../engine/key-history';
import type { Lock } from '../engine/lock';
import type { LockEvents } from '../engine/lock.events';
import type { ResolvedLockOptions } from '../engine/lock-options.resolver';
import type { HeldLease, KeySlot, Waiter } from '../engine/lock-state';
import { settleWaiter } from '../engine/waiter.settle';
import type { AcquisitionHost } from './acquisition.host';
import { RemoteAcquisition } from './remote-acquisition';
import { unavailableError } from '../waiting/transient.retry';

/** Past the request limit, before a wait that let its last request finish ends. */
const LATE_ANSWER_SLACK_MS = 20;

/** What the local queues work with. */
export interface KeyQueuesDeps {
  readonly options: ResolvedLockOptions;
  readonly store: MutexStorePort;
  readonly history: KeyHistory;
  readonly events: LockEvents;
  /** Starts holding the lock a remote acquisition took (`LeaseKeeper.hold`). */
  readonly hold: AcquisitionHost['hold'];
  /** Gives back a lock whose caller had given up meanwhile. */
  releaseQuietly(lock: Lock): Promise<void>;
}

/**
 * The callers of one process waiting for each key, in FIFO order. Only the head of a key's queue
 * talks to DynamoDB (a {@link RemoteAcquisition}); the others wait for it, or for the local
 * holder to hand the lock over. Settles each caller once: with the lock, busy, unavailable, or
 * the caller's own signal.
 */
export class KeyQueues {
  private readonly slots = new Map<string, KeySlot>();
  /** Acquisitions talking to DynamoDB now; shutdown waits for them. */
  private readonly attempts = new Set<Promise<void>>();
  private readonly acquisitionHost: AcquisitionHost;
  /** Aborted at shutdown: ends acquisitions that keep a ticket for nobody. */
  private readonly closing = new AbortController();

  constructor(private readonly deps: KeyQueuesDeps) {
    const { store, history, options, events } = deps;
    this.acquisitionHost = {
      store,
      history,
      options,
      closing: this.closing.signal,
      hold: (waiter, record, validFrom, via, leaseMs) => deps.hold(waiter, record, validFrom, via, leaseMs),
      emit: (event, trace) => events.emit(event, trace),
      noteWaiting: (waiter) => events.noteWaiting(waiter),
      busyError: (waiter) => this.busyError(waiter),
      deadlineError: (waiter) => this.deadlineError(waiter),
      nextWaiter: (storedKey) => {
        const slot = this.slots.get(storedKey);
        return slot && this.nextWaiter(slot);
      },
      later: (task) => this.track(task().catch(() => undefined)),
    };
  }

  /** The slot of a key, if any caller of this process holds or wants it. */
  slot(storedKey: string): KeySlot | undefined {
    return this.slots.get(storedKey);
  }

  /** Queues a caller: behind the local holder or earlier callers, else it starts at once. */
  enqueue(waiter: Waiter, signal: AbortSignal | undefined): void {
    const slot = this.slotFor(waiter.storedKey);
    // Another caller of this process holds the key, is ahead in the queue for it, or a set reserved it.
    const behind = slot.holder !== undefined || slot.reserved === true || this.nextWaiter(slot) !== undefined;
    if (behind && waiter.deadline <= waiter.startedAt) return this.settle(waiter, this.deadlineError(waiter));
    slot.waiters.push(waiter);
    const onAbort = () => this.settle(waiter, signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    // At the deadline (at once for a single attempt), a waiter whose own request may be in flight
    // and that never saw another holder gets one request limit more: a slow answer must not make a
    // free key look busy. The slack lets that request's own time-out, which has the cause, come first.
    const atDeadline = () => {
      if (!this.mayAnswerLate(waiter)) return this.settle(waiter, this.deadlineError(waiter));
      const lateMs = Math.min(this.deps.options.requestTimeoutMs + LATE_ANSWER_SLACK_MS, MAX_DURATION_MS);
      timer = setTimeout(() => this.settle(waiter, this.deadlineError(waiter)), lateMs);
    };
    let timer = Number.isFinite(waiter.deadline)
      ? setTimeout(atDeadline, Math.min(Math.round(waiter.deadline - waiter.startedAt), MAX_DURATION_MS))
      : undefined;
    waiter.cancel.onAbort(() => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    });
    if (behind) {
      if (slot.holder)
        waiter.holder = {
          owner: this.deps.options.ownerName,
          fencingToken: slot.holder.lock.fencingToken,
          leaseDuration: slot.holder.leaseMs,
        };
      this.deps.events.noteWaiting(waiter);
    }
    this.pump(slot);
  }

  /** Settles a waiter once, with a lock or an error, and takes it out of the queue. */
  settle(waiter: Waiter, outcome: unknown): void {
    if (waiter.settled) return;
    const slot = this.slots.get(waiter.storedKey);
    if (slot) slot.waiters = slot.waiters.filter((w) => w !== waiter);
    settleWaiter(this.deps.events, waiter, outcome);
  }

  /** Starts the head waiter's acquisition when the key is neither held here nor being polled. */
  pump(slot: KeySlot): void {
    if (slot.holder || slot.polling) return;
    const waiter = this.nextWaiter(slot);
    if (!waiter) {
      // Only the slot in the map, never a newer one for the same key.
      if (slot.waiters.length === 0 && this.slots.get(slot.storedKey) === slot) this.slots.delete(slot.storedKey);
      return;
    }
    slot.polling = true;
    // The caller served may be a later one that took over the ticket of a caller that gave up.
    const acquisition = new RemoteAcquisition(this.acquisitionHost, waiter);
    const attempt = acquisition.run().then(
      (lease) => {
        slot.polling = false;
        slot.holder = lease;
        if (acquisition.served.settled) void this.deps.releaseQuietly(lease.lock);
        else this.settle(acquisition.served, lease.lock);
        this.pump(slot);
      },
      (error) => {
        slot.polling = false;
        this.settle(acquisition.served, error);
        this.pump(slot);
      },
    );
    this.track(attempt);
  }

  /**
   * Reserves a key no caller of this process uses, for an acquisition outside its queue (a set
   * taken in one transaction): later callers queue behind it, and none talks to DynamoDB meanwhile.
   * A single attempt on a reserved key is busy at once.
   * @returns `false` when a caller of this process holds or waits for the key, or at shutdown.
   */
  reserve(storedKey: string): boolean {
    if (this.closing.signal.aborted || this.slots.has(storedKey)) return false;
    const slot = this.slotFor(storedKey);
    slot.polling = true;
    slot.reserved = true;
    return true;
  }

  /** Ends a {@link reserve} that took nothing: callers queued meanwhile start. */
  unreserve(storedKey: string): void {
    const slot = this.slots.get(storedKey);
    if (!slot?.reserved || slot.holder) return;
    slot.polling = false;
    slot.reserved = false;
    this.pump(slot);
  }

  /** Aborted when shutdown starts (its reason: the shutdown error). */
  get shutdown(): AbortSignal {
    return this.closing.signal;
  }

  /** Runs an acquisition outside the queues (a set in one write): shutdown waits for it. */
  attempt<T>(run: () => Promise<T>): Promise<T> {
    const running = run();
    this.track(
      running.then(
        () => undefined,
        () => undefined,
      ),
    );
    return running;
  }

  /**
   * Holds a key reserved by {@link reserve} that a write outside the queue granted to `waiter`
   * (`record` as written, its lease counting from `sentAt`): an ordinary held lease from here on
   * (heartbeats, release, hand-over to the callers queued behind, loss).
   */
  adoptGranted(waiter: Waiter, record: LockRecord, sentAt: number): HeldLease {
    const slot = this.slotFor(waiter.storedKey);
    slot.polling = false;
    slot.reserved = false;
    const lease = this.deps.hold(waiter, record, sentAt, 'free', waiter.leaseMs);
    slot.holder = lease;
    this.settle(waiter, lease.lock);
    return lease;
  }

  /** Runs a clean-up in the background; shutdown waits for it. */
  later(task: () => Promise<void>): void {
    this.track(task().catch(() => undefined));
  }

  /** Counts an acquisition or a clean-up as running until it settles: shutdown waits for it. */
  private track(attempt: Promise<void>): void {
    this.attempts.add(attempt);
    void attempt.finally(() => this.attempts.delete(attempt));
  }

  /** Goes on with the key of a lease that was lost. */
  onLost(lease: HeldLease): void {
    const slot = this.slots.get(lease.storedKey);
    if (slot?.holder !== lease) return;
    slot.holder = undefined;
    this.pump(slot);
  }

  /** The first caller still waiting in a slot. */
  nextWaiter(slot: KeySlot): Waiter | undefined {
    return slot.waiters.find((w) => !w.settled);
  }

  /** Settles every waiting caller with `error` (shutdown), then waits for running acquisitions to end. */
  async close(error: unknown): Promise<void> {
    // First: acquisitions whose caller is gone must not go on quietly once their callers are settled.
    this.closing.abort(error);
    for (const slot of this.slots.values()) {
      for (const waiter of slot.waiters) this.settle(waiter, error);
    }
    // Clean-ups started meanwhile (a place in line to leave) are waited for too.
    while (this.attempts.size > 0) await Promise.allSettled([...this.attempts]);
  }

  private slotFor(storedKey: string): KeySlot {
    let slot = this.slots.get(storedKey);
    if (!slot) {
      slot = { storedKey, waiters: [], polling: false };
      this.slots.set(storedKey, slot);
    }
    return slot;
  }

  /**
   * At the deadline: busy when an answer showed another holder, or a caller of this process holds
   * the key or is ahead of `waiter` for it; otherwise unavailable, with the last DynamoDB error.
   */
  private deadlineError(waiter: Waiter): LockBusyError | LockUnavailableError {
    const slot = this.slots.get(waiter.storedKey);
    const ahead = slot !== undefined && !waiter.settled && this.nextWaiter(slot) !== waiter ? this.nextWaiter(slot) : undefined;
    // A caller ahead that saw a holder, or is still on its way to the lock, makes the key busy; one
    // that only got errors so far is in the same outage as this one.
    const aheadBusy = ahead !== undefined && (ahead.holder !== undefined || ahead.lastError === undefined);
    if (waiter.holder !== undefined || slot?.holder !== undefined || slot?.reserved === true || aheadBusy) {
      waiter.holder ??= ahead?.holder;
      return this.busyError(waiter);
    }
    return unavailableError(waiter, this.deps.options.requestTimeoutMs, waiter.lastError ?? ahead?.lastError);
  }

  /** Whether `waiter` is the one talking to DynamoDB for its key and has seen no holder yet. */
  private mayAnswerLate(waiter: Waiter): boolean {
    const slot = this.slots.get(waiter.storedKey);
    return (
      slot !== undefined &&
      slot.polling &&
      !slot.reserved &&
      !slot.holder &&
      waiter.holder === undefined &&
      this.nextWaiter(slot) === waiter
    );
  }

  /** The busy error of a waiter: the holder it saw (or the local one), and when it may release. */
  private busyError(waiter: Waiter): LockBusyError {
    const local = this.slots.get(waiter.storedKey)?.holder;
    // This process's own run of that fire, or a later one, holds the key: the fire was claimed here.
    if (waiter.fire !== undefined && local?.fire !== undefined && local.fire >= waiter.fire) {
      waiter.fireClaimed ??= { at: local.fire, owner: this.deps.options.ownerName };
    }
    if (!waiter.holder && local) {
      waiter.holder = { owner: this.deps.options.ownerName, fencingToken: local.lock.fencingToken, leaseDuration: local.leaseMs };
      const usual = this.deps.history.holdEstimate(waiter.storedKey);
      waiter.expectedReleaseAt = usual === undefined ? undefined : local.acquiredAt + usual;
    }
    const now = monotonicNow();
    const waited = Math.round(now - waiter.startedAt);
    const releaseInMs = waiter.expectedReleaseAt === undefined ? undefined : Math.max(0, Math.round(waiter.expectedReleaseAt - now));
    const claimed = waiter.fireClaimed;
    const fireClaimed = claimed && { scheduledAt: new Date(claimed.at), owner: claimed.owner };
    const message = fireClaimed
      ? FIRE_CLAIMED(waiter.key, new Date(waiter.fire ?? claimed.at), fireClaimed.scheduledAt, fireClaimed.owner)
      : LOCK_BUSY(waiter.key, waiter.holder?.owner, waiter.holder?.fencingToken, waiter.deadline <= waiter.startedAt ? undefined : waited);
    return new LockBusyError(message, waiter.key, waiter.holder, waited, releaseInMs, fireClaimed);
  }
}

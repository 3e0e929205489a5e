import { RELEASE_NOT_HELD } from '../../errors/lock.messages';
import type { MutexStorePort } from '../../store/mutex/mutex-store.port';
import type { Holding, ReleaseFire } from '../../store/mutex/mutex-store.protocol';
import { monotonicNow } from '../../utils/clock';
import type { KeyHistory } from '../engine/key-history';
import type { KeyQueues } from './key.queues';
import type { LeaseKeeper } from '../engine/lease.keeper';
import type { Lock, ReleaseOutcome } from '../engine/lock';
import type { LockEvents } from '../engine/lock.events';
import type { ResolvedLockOptions } from '../engine/lock-options.resolver';
import { type HeldLease, type KeySlot, type Waiter, writeOf } from '../engine/lock-state';

/** What the releaser works with. */
export interface LockReleaserDeps {
  readonly options: ResolvedLockOptions;
  readonly store: MutexStorePort;
  readonly history: KeyHistory;
  readonly events: LockEvents;
  readonly keeper: LeaseKeeper;
  readonly queues: KeyQueues;
  /** Whether the manager is shutting down (no hand-over to local callers then). */
  isClosed(): boolean;
  /** Gives back a lock whose caller had given up meanwhile. */
  releaseQuietly(lock: Lock): Promise<void>;
}

/**
 * Gives a held lock up, in one conditional write: straight to the next local caller (a hand-over)
 * when no waiter of another process took a ticket behind it, else back to DynamoDB, which serves
 * the next ticket in the same write.
 */
export class LockReleaser {
  /** Releases whose write is in flight: shutdown waits for them before the client goes. */
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(private readonly deps: LockReleaserDeps) {}

  /**
   * Releases a held lock, or frees one whose lease ran out when nobody took it.
   * @returns `released` (or handed over), `expired` (freed after its lease ran out), `not-held`.
   */
  release(lock: Lock): Promise<ReleaseOutcome> {
    return this.track(this.releaseNow(lock));
  }

  /** Counts a release write as in flight until it settles. */
  private track<T>(write: Promise<T>): Promise<T> {
    this.inFlight.add(write);
    void write.catch(() => undefined).finally(() => this.inFlight.delete(write));
    return write;
  }

  /** Resolves once every release started so far has ended (whatever its outcome). */
  async idle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  private async releaseNow(lock: Lock): Promise<ReleaseOutcome> {
    const { keeper, queues, history, events, options } = this.deps;
    // A lease that ran out on the local clock (a blocked event loop, no heartbeats) is lost first,
    // even when no timer noticed yet: the release then says so, and frees it if nobody took it.
    keeper.checkHeld(lock);
    // Work still running under this lock (detached timers, listeners, nested handles) must stop.
    const lease = keeper.release(lock);
    if (!lease) return this.freeExpired(lock);
    const slot = queues.slot(lease.storedKey);
    if (slot?.holder === lease) slot.holder = undefined;
    const heldMs = monotonicNow() - lease.acquiredAt;
    // A lock whose caller had given up is released as soon as it is held: not a hold of the key
    // (counted, a few would bring the estimate to 0, and waiters would read as if every turn
    // were instant). Its release writes none, so that the last one written is not counted again.
    const usualMs = lease.quiet ? undefined : heldMs;
    if (usualMs !== undefined) history.recordHold(lease.storedKey, usualMs, lease.token);
    // Waiters of other processes queued in the item come first; then the local queue.
    // Never while a remote attempt runs for the slot: the waiter would be served twice.
    // A lease that claimed a scheduled fire releases to DynamoDB, which records how its run ended.
    const handing =
      slot !== undefined &&
      !this.deps.isClosed() &&
      !slot.polling &&
      lease.queuedElsewhere === 0 &&
      lease.fire === undefined &&
      queues.nextWaiter(slot) !== undefined;
    // Claim the slot for the hand-over now, so no remote attempt starts for the next waiter meanwhile.
    if (handing) slot.polling = true;
    const base = { key: lock.key, owner: lock.owner, fencingToken: lock.fencingToken, heldMs: Math.round(heldMs) };
    const released = (handedOver: boolean) => events.emitFor(lease, { type: 'released', ...base, handedOver });
    const failed = (outcome: 'not-held' | 'error', error?: unknown) =>
      events.emitFor(lease, { type: 'release-failed', ...base, outcome, error });
    return keeper
      .serial(lease, async () => {
        const next = handing ? queues.nextWaiter(slot) : undefined;
        let done: boolean;
        try {
          if (next) done = await this.handOver(lease, next, slot!, () => released(true), usualMs);
          else {
            if (handing) slot.polling = false;
            done = await this.releaseRemote(lease, usualMs);
            if (done && lease.fire !== undefined) {
              const scheduledAt = new Date(lease.fire);
              events.emitFor(lease, {
                type: 'fire',
                key: lock.key,
                owner: lock.owner,
                scheduledAt,
                outcome: 'ran',
                result: fireResult(lease),
              });
            }
            if (done) released(lease.queuedElsewhere > 0);
          }
        } catch (error) {
          // The release may not have happened: if this process finds the token still holding the
          // lock later, it takes it over at once instead of waiting out the lease.
          history.addOrphan(lease.storedKey, lease.token, lease.rvn);
          failed('error', error);
          throw error;
        }
        if (!done) {
          options.logger.warn?.(RELEASE_NOT_HELD(lease.lock.key));
          failed('not-held');
        }
        // A lock whose caller was gone when it was granted (it gave up, its answer was lost): cleaned up.
        if (done && lease.quiet) events.emit({ type: 'cleanup', key: lock.key, owner: lock.owner, outcome: 'released' });
        return done ? 'released' : 'not-held';
      })
      .finally(() => {
        // The slot in the map now: the one seen at the start may have been dropped meanwhile.
        const current = queues.slot(lease.storedKey);
        if (current) queues.pump(current);
      });
  }

  /**
   * A lock whose lease ran out on the local clock before its release (no heartbeats, a pause): the
   * item still carries its token unless another owner took it, and the same conditional release
   * frees it then, so nobody waits a lease for a lock that no one holds. Its loss was reported when
   * the lease ran out.
   */
  private async freeExpired(lock: Lock): Promise<ReleaseOutcome> {
    const { keeper, store, history, events } = this.deps;
    const lease = keeper.takeExpired(lock);
    if (!lease) return 'not-held';
    // The lock was lost already (its signal said so): a failed write does not make release() throw.
    // The token stays recorded, so this process takes the item back at once if it finds it later.
    const fire = lease.fire === undefined ? undefined : fireResult(lease);
    const freed = await keeper
      .serial(lease, () => store.release(lease.storedKey, holdingOf(lease), lease.leaseMs, undefined, fire))
      .catch(() => false);
    if (!freed) return 'not-held';
    history.dropOrphan(lease.storedKey, lease.token);
    events.emitFor(lease, { type: 'cleanup', key: lock.key, owner: lock.owner, outcome: 'released' });
    return 'expired';
  }

  /**
   * Hands a released lock straight to the next local waiter: one write that swaps the owner token.
   * `heldMs` goes with the release sent instead when the outcome of that write is unknown.
   */
  private async handOver(
    from: HeldLease,
    waiter: Waiter,
    slot: KeySlot,
    released: () => void,
    heldMs: number | undefined,
  ): Promise<boolean> {
    const { store, keeper, queues } = this.deps;
    const sentAt = monotonicNow();
    try {
      const result = await store.acquire({ ...writeOf(waiter), condition: { kind: 'handover', from: holdingOf(from) } });
      if (!result.ok) return false;
      released();
      const leaseMs = Math.min(result.record.leaseMs ?? waiter.leaseMs, waiter.leaseMs);
      if (!waiter.settled && sentAt + leaseMs / 2 <= monotonicNow()) {
        // Answered so late that half the lease is gone: the waiter's own acquisition (started when
        // this release ends) finds its token in the item and renews the lease before handing it out.
        waiter.uncertainSince = Math.min(waiter.uncertainSince ?? sentAt, sentAt);
        // Should it give up before its acquisition starts, the token is taken back at once.
        this.deps.history.addOrphan(waiter.storedKey, waiter.token);
        return true;
      }
      const lease = keeper.hold(waiter, result.record, sentAt, 'handover', leaseMs);
      slot.holder = lease;
      if (waiter.settled) void this.deps.releaseQuietly(lease.lock);
      else queues.settle(waiter, lease.lock);
      return true;
    } catch (error) {
      // Unknown outcome: the waiter's own token may hold the item now, since this write was sent;
      // a lease later found there counts from then, not from a later acquisition's start.
      waiter.uncertainSince = Math.min(waiter.uncertainSince ?? sentAt, sentAt);
      void this.track(store.release(from.storedKey, holdingOf(from), from.leaseMs, heldMs).catch(() => undefined));
      throw error;
    } finally {
      slot.polling = false;
    }
  }

  /** Gives a lock back to DynamoDB (one write, which also serves the next ticket); `heldMs`, when known, is written for waiters. */
  private async releaseRemote(lease: HeldLease, heldMs: number | undefined): Promise<boolean> {
    const fire = lease.fire === undefined ? undefined : fireResult(lease);
    const released = await this.deps.store.release(lease.storedKey, holdingOf(lease), lease.leaseMs, heldMs, fire);
    if (released && lease.queuedElsewhere > 0) this.deps.history.recordBusy(lease.storedKey, monotonicNow());
    return released;
  }
}

/** What a held lease writes with: its token, and the ticket it holds by until the token is in the item. */
function holdingOf(lease: HeldLease): Holding {
  return { token: lease.token, ticket: lease.ticket };
}

/**
 * How the run of a lease's scheduled fire ended: as its caller said; else `failed` for a lease whose
 * caller had given up (its write landed, its answer did not: the fire was claimed, and not run),
 * and `done` for a release by hand.
 */
function fireResult(lease: HeldLease): ReleaseFire {
  return lease.fireOutcome ?? (lease.quiet ? 'failed' : 'done');
}

import type { LockRecord } from '../../store/mutex/mutex.record';
import { monotonicNow } from '../../utils/clock';
import { FencedWriter } from '../engine/fenced-writer';
import { InFlightWrites } from '../engine/in-flight.writes';
import type { KeyHistory } from '../engine/key-history';
import { LeaseKeeper } from '../engine/lease.keeper';
import { releaseAllAtShutdown, releaseWithEvents } from '../engine/lease.release';
import type { Lock, ReleaseOutcome } from '../engine/lock';
import type { HeldLease, Waiter } from '../engine/lock-state';
import type { PrimitiveContext } from '../engine/primitive.interface';

/**
 * The write locks that upgradeable readers became (`lock.upgrade()`): mutex holders by token on
 * the key's item, renewed and released with the mutex's own writes (a release serves the next
 * ticket). Kept by the read primitive, which made them; the mutex primitive of this process sees
 * the key as any holder elsewhere and waits in line behind it.
 */
export class UpgradedLocks {
  private readonly keeper: LeaseKeeper;
  private readonly fenced: FencedWriter;
  private readonly inFlight = new InFlightWrites();

  constructor(
    private readonly context: PrimitiveContext,
    history: KeyHistory,
  ) {
    const { options, events, stores } = context;
    this.keeper = new LeaseKeeper({
      options,
      store: stores.mutex,
      history,
      events,
      lockHost: {
        release: (lock) => this.release(lock),
        extend: (lock, leaseDuration) => this.keeper.extend(lock, leaseDuration),
        checkHeld: (lock) => this.keeper.checkHeld(lock),
        transact: (lock, items, callOptions) => this.fenced.transact(lock, items, callOptions),
        fencedWrite: (lock, item, callOptions) => this.fenced.fencedWrite(lock, item, callOptions),
      },
      onLost: () => undefined,
    });
    this.fenced = new FencedWriter(stores, this.keeper);
  }

  /** Starts holding the write lock an upgrade wrote (`record`), its lease from `sentAt`. */
  hold(waiter: Waiter, record: LockRecord, sentAt: number): Lock {
    return this.keeper.hold(waiter, record, sentAt, 'upgrade', waiter.leaseMs).lock;
  }

  lease(lock: Lock): HeldLease | undefined {
    return this.keeper.get(lock);
  }

  all(): HeldLease[] {
    return this.keeper.all();
  }

  get size(): number {
    return this.keeper.size;
  }

  /** Releases an upgraded write lock: the mutex release (one write, the next ticket served). */
  release(lock: Lock): Promise<ReleaseOutcome> {
    return this.inFlight.track(this.releaseNow(lock));
  }

  private async releaseNow(lock: Lock): Promise<ReleaseOutcome> {
    const { stores } = this.context;
    const lease = this.keeper.release(lock);
    if (!lease) return 'not-held';
    const heldMs = monotonicNow() - lease.acquiredAt;
    return releaseWithEvents(this.context, this.keeper, lock, lease, heldMs, () =>
      stores.mutex.release(lease.storedKey, { token: lease.token }, lease.leaseMs, heldMs),
    );
  }

  /** At shutdown: every upgraded lock released (its signal aborted first), writes waited for. */
  async close(): Promise<void> {
    await releaseAllAtShutdown(this.keeper, (lock) => this.release(lock));
    await this.inFlight.idle();
  }

  stop(): void {
    this.keeper.close();
  }
}

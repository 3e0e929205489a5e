import { LockLostError } from '../../errors/lock.errors';
import { RELEASE_NOT_HELD, RELEASED_AT_SHUTDOWN } from '../../errors/lock.messages';
import type { LockRecord } from '../../store/mutex/mutex.record';
import { monotonicNow } from '../../utils/clock';
import { FencedWriter } from '../engine/fenced-writer';
import type { KeyHistory } from '../engine/key-history';
import { LeaseKeeper } from '../engine/lease.keeper';
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
  private readonly inFlight = new Set<Promise<unknown>>();

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
    const write = this.releaseNow(lock);
    this.inFlight.add(write);
    void write.catch(() => undefined).finally(() => this.inFlight.delete(write));
    return write;
  }

  private async releaseNow(lock: Lock): Promise<ReleaseOutcome> {
    const { events, options, stores } = this.context;
    const lease = this.keeper.release(lock);
    if (!lease) return 'not-held';
    const heldMs = monotonicNow() - lease.acquiredAt;
    const base = { key: lock.key, owner: lock.owner, fencingToken: lock.fencingToken, heldMs: Math.round(heldMs) };
    return this.keeper.serial(lease, async () => {
      let done: boolean;
      try {
        done = await stores.mutex.release(lease.storedKey, { token: lease.token }, lease.leaseMs, heldMs);
      } catch (error) {
        events.emitFor(lease, { type: 'release-failed', ...base, outcome: 'error', error });
        throw error;
      }
      if (done) events.emitFor(lease, { type: 'released', ...base, handedOver: false });
      else {
        options.logger.warn?.(RELEASE_NOT_HELD(lock.key));
        events.emitFor(lease, { type: 'release-failed', ...base, outcome: 'not-held' });
      }
      return done ? 'released' : 'not-held';
    });
  }

  /** At shutdown: every upgraded lock released (its signal aborted first), writes waited for. */
  async close(): Promise<void> {
    const held = this.keeper.all();
    for (const lease of held) lease.controller.abort(new LockLostError(RELEASED_AT_SHUTDOWN(lease.lock.key), lease.lock.key, 'shutdown'));
    await Promise.allSettled(held.map((lease) => this.release(lease.lock)));
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  stop(): void {
    this.keeper.close();
  }
}

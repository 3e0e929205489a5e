import { LockConfigurationError, LockKeyError, LockValidationError } from '../../errors/lock.errors';
import {
  FENCED_WRITES_UNSUPPORTED,
  SEMAPHORE_HAS_NO_FENCE,
  KEY_IS_SEMAPHORE,
  KEY_TOO_LONG,
  SEMAPHORE_STORE_UNSUPPORTED,
} from '../../errors/lock.messages';
import type { AcquireOptions } from '../../interfaces/acquire-options.interface';
import type { LockInfo } from '../../interfaces/lock-info.interface';
import type { LockRecord } from '../../store/mutex/mutex.record';
import type { MutexStorePort } from '../../store/mutex/mutex-store.port';
import { holderEntryOf, SEMAPHORE_KEY_SUFFIX, semaphoreWaiting, type SemaphoreRecord } from '../../store/semaphore/semaphore.record';
import type { SemaphoreStorePort } from '../../store/semaphore/semaphore-store.port';
import { monotonicNow } from '../../utils/clock';
import { MAX_KEY_BYTES, toStoredKey } from '../../utils/lock-key.validation';
import { KeyHistory } from '../engine/key-history';
import { LeaseKeeper } from '../engine/lease.keeper';
import { type Lock, type ReleaseOutcome, rootLock } from '../engine/lock';
import type { HeldLease } from '../engine/lock-state';
import { InFlightWrites } from '../engine/in-flight.writes';
import { releaseAllAtShutdown, releaseWithEvents } from '../engine/lease.release';
import { RecentRecords } from '../engine/recent.records';
import { WaiterRuns } from '../engine/waiter.runs';
import type { LockPrimitive, PrimitiveContext, PrimitiveKey } from '../engine/primitive.interface';
import { SemaphoreAcquisition, type SemaphoreAcquisitionHost } from './semaphore-acquisition';
import { checkSemaphoreOptions, semaphoreKeyOf } from './semaphore.options';

/**
 * The counting semaphores of a manager (`acquire(key, { limit })`): each caller runs its own
 * {@link SemaphoreAcquisition}; a granted slot is a `Lock` held by a {@link LeaseKeeper} of its
 * own (heartbeats renew the holder's entry only), released with one write.
 */
export class SemaphorePrimitive implements LockPrimitive {
  /** Holder versions and line heads as first seen, and hold times, per key. */
  private readonly history = new KeyHistory();
  private readonly seen = new RecentRecords<SemaphoreRecord>();
  private readonly keeper: LeaseKeeper;
  private readonly runs: WaiterRuns;
  private readonly inFlight = new InFlightWrites();
  private readonly host: SemaphoreAcquisitionHost | undefined;

  private readonly store: SemaphoreStorePort | undefined;

  constructor(private readonly context: PrimitiveContext) {
    const { options, events } = context;
    const store = (this.store = context.stores.semaphore);
    this.keeper = new LeaseKeeper({
      options,
      store: store ? leaseView(store) : context.stores.mutex,
      history: this.history,
      events,
      lockHost: {
        release: (lock) => this.release(lock),
        extend: (lock, leaseDuration) => this.keeper.extend(lock, leaseDuration),
        checkHeld: (lock) => this.keeper.checkHeld(lock),
        // Several holders at once: no one holder can be fenced.
        transact: (lock) => Promise.reject(new LockValidationError(FENCED_WRITES_UNSUPPORTED(lock.key, SEMAPHORE_HAS_NO_FENCE))),
        fencedWrite: (lock) => Promise.reject(new LockValidationError(FENCED_WRITES_UNSUPPORTED(lock.key, SEMAPHORE_HAS_NO_FENCE))),
      },
      onLost: () => undefined,
    });
    this.runs = new WaiterRuns(context);
    this.host = store && {
      store,
      history: this.history,
      options,
      lastSeen: (key) => this.seen.get(key),
      remember: (record) => this.seen.remember(record),
      emit: (event, trace) => events.emit(event, trace),
      noteWaiting: (waiter) => events.noteWaiting(waiter),
    };
  }

  serves(options: AcquireOptions): boolean {
    return options.limit !== undefined;
  }

  resolveKey(scope: string, key: string, options: AcquireOptions): PrimitiveKey {
    checkSemaphoreOptions(options, scope);
    const storedKey = toStoredKey(key, this.context.options.keyPrefix);
    const itemKey = semaphoreKeyOf(storedKey);
    const bytes = Buffer.byteLength(itemKey, 'utf8');
    if (bytes > MAX_KEY_BYTES) throw new LockKeyError(KEY_TOO_LONG(storedKey, bytes, MAX_KEY_BYTES), 'too-long');
    return { storedKey, itemKey };
  }

  itemKeyOf(storedKey: string): string {
    return semaphoreKeyOf(storedKey);
  }

  /**
   * Acquires one slot of the semaphore `key` (options checked by {@link resolveKey}).
   * @returns the slot's lock; rejects with `LockConfigurationError` when the manager is shut down,
   *   or the store keeps no semaphores.
   */
  acquire(key: string, { itemKey }: PrimitiveKey, options: AcquireOptions): Promise<Lock> {
    const limit = options.limit!;
    const host = this.host;
    try {
      // A closed manager says so first, whatever its store keeps.
      this.context.assertOpen();
    } catch (error) {
      return Promise.reject(error);
    }
    if (!host) return Promise.reject(new LockConfigurationError(SEMAPHORE_STORE_UNSUPPORTED()));
    return this.runs.start(key, itemKey, options, {
      run: (waiter) => new SemaphoreAcquisition(host, waiter, limit).run(),
      grant: (waiter, granted) => {
        const record: LockRecord = { key: waiter.storedKey, fencingToken: granted.holder.fencingToken, rvn: granted.holder.version };
        return this.keeper.hold(waiter, record, granted.sentAt, granted.via, granted.holder.leaseMs).lock;
      },
    });
  }

  uses(storedKey: string): boolean {
    const key = semaphoreKeyOf(storedKey);
    return this.runs.waitsFor(key) || this.keeper.all().some((lease) => lease.storedKey === key);
  }

  inUse(key: string): string {
    return KEY_IS_SEMAPHORE(key);
  }

  /** The lease behind a semaphore lock (or a nested handle of one), while it is held. */
  lease(lock: Lock): HeldLease | undefined {
    return this.keeper.get(rootLock(lock));
  }

  get heldCount(): number {
    return this.keeper.size;
  }

  /**
   * Releases a slot (one conditional write).
   * @returns `released`, or `not-held` when it was no longer held.
   */
  release(lock: Lock): Promise<ReleaseOutcome> {
    return this.inFlight.track(this.releaseNow(lock));
  }

  private async releaseNow(lock: Lock): Promise<ReleaseOutcome> {
    const lease = this.keeper.release(lock);
    const { store } = this;
    if (!lease || !store) return 'not-held';
    const heldMs = monotonicNow() - lease.acquiredAt;
    // As for a mutex: a slot whose caller had given up is given back as soon as it is held, which
    // is not a hold of the key; its release writes none (the item keeps the last one written).
    const usualMs = lease.quiet ? undefined : heldMs;
    if (usualMs !== undefined) this.history.recordHold(lease.storedKey, usualMs);
    return releaseWithEvents(this.context, this.keeper, lock, lease, heldMs, () =>
      store.release(lease.storedKey, lease.token, lease.leaseMs, usualMs),
    );
  }

  /**
   * The holders of a semaphore (one strongly consistent read), `null` when nobody holds it, and
   * `undefined` when the store keeps no semaphores.
   */
  async inspect(key: string, storedKey: string): Promise<LockInfo | null | undefined> {
    if (!this.store) return undefined;
    const record = await this.store.read(semaphoreKeyOf(storedKey));
    return record ? semaphoreInfo(key, record) : null;
  }

  /**
   * Every semaphore with holders whose key starts with `prefix`, as `inspect()` reports each. Empty
   * when the store keeps no semaphores, or its semaphore store cannot scan (`scanHeld` is optional).
   */
  async list(prefix: string): Promise<LockInfo[]> {
    const { store } = this;
    const { keyPrefix } = this.context.options;
    if (!store?.scanHeld) return [];
    const found: LockInfo[] = [];
    for await (const record of store.scanHeld(keyPrefix + prefix)) {
      const key = record.key.slice(keyPrefix.length, -SEMAPHORE_KEY_SUFFIX.length);
      // The scanned prefix can reach into the suffix ("jobs\u001f" matches semaphore "jobs").
      if (!key.startsWith(prefix)) continue;
      const info = semaphoreInfo(key, record);
      if (info) found.push(info);
    }
    return found;
  }

  async close(error: unknown): Promise<void> {
    await this.runs.close(error);
    await releaseAllAtShutdown(this.keeper, (lock) => this.release(lock));
    await this.inFlight.idle();
  }

  stop(): void {
    this.keeper.close();
  }
}

/**
 * What `inspect()` and `list()` tell about a semaphore: the newest holder's fields, its limit, every
 * holder (oldest grant first) and the callers in line; `null` when nobody holds it.
 */
function semaphoreInfo(key: string, record: SemaphoreRecord): LockInfo | null {
  if (record.holders.length === 0) return null;
  const holders: LockInfo[] = record.holders.map((h) => ({
    key,
    owner: h.owner,
    fencingToken: h.fencingToken,
    acquiredAt: new Date(h.acquiredAt),
    updatedAt: new Date(h.updatedAt),
    leaseDuration: h.leaseMs,
  }));
  return { ...holders[holders.length - 1], limit: record.limit, holders, waiting: semaphoreWaiting(record) };
}

/**
 * The semaphore store as the lease keeper sees it: a heartbeat renews the holder's own entry (its
 * version is the lease's record version), and a read names the newest holder, so a lost slot reads
 * as taken while others hold the semaphore.
 */
function leaseView(store: SemaphoreStorePort): Pick<MutexStorePort, 'heartbeat' | 'read'> {
  const view = (record: SemaphoreRecord | undefined): LockRecord | undefined => {
    const newest = record?.holders[record.holders.length - 1];
    return record && { key: record.key, token: newest?.token, owner: newest?.owner, fencingToken: newest?.fencingToken };
  };
  return {
    async heartbeat(write) {
      const result = await store.heartbeat(write.key, write.holding.token, write.leaseMs);
      if (!result.ok) return { ok: false, current: view(result.current) };
      const own = holderEntryOf(result.record, write.holding.token);
      return { ok: true, record: { key: write.key, rvn: own?.version, fencingToken: own?.fencingToken } };
    },
    read: async (key) => view(await store.read(key)),
  };
}

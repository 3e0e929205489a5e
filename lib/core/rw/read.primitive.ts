import { LockConfigurationError, LockLostError, LockValidationError } from '../../errors/lock.errors';
import { isHeld } from '../../store/mutex/mutex.record';
import { type Duration, parseLease } from '../../utils/duration';
import {
  FENCED_WRITES_UNSUPPORTED,
  KEY_IS_MUTEX,
  NOT_HELD_FOR_EXTEND,
  READ_HAS_NO_FENCE,
  READ_STORE_UNSUPPORTED,
  UPGRADE_IN_PROGRESS,
  UPGRADE_LOST,
  UPGRADE_UNSUPPORTED,
} from '../../errors/lock.messages';
import type { AcquireOptions } from '../../interfaces/acquire-options.interface';
import type { LockInfo } from '../../interfaces/lock-info.interface';
import type { LockRecord } from '../../store/mutex/mutex.record';
import { newEntry, type ReaderEntry, readerIdOf, readerOf, readerToken } from '../../store/rw/read.record';
import type { ReadStorePort } from '../../store/rw/read-store.port';
import { monotonicNow } from '../../utils/clock';
import { toStoredKey } from '../../utils/lock-key.validation';
import { KeyHistory } from '../engine/key-history';
import { LeaseKeeper } from '../engine/lease.keeper';
import { type Lock, type ReleaseOutcome, rootLock, type UpgradeOptions } from '../engine/lock';
import { lockInfoOf } from '../engine/lock-info.mapper';
import type { HeldLease } from '../engine/lock-state';
import type { LockPrimitive, PrimitiveContext, PrimitiveKey } from '../engine/primitive.interface';
import { createWaiter } from '../engine/waiter.factory';
import { InFlightWrites } from '../engine/in-flight.writes';
import { releaseAllAtShutdown, releaseWithEvents } from '../engine/lease.release';
import { RecentRecords } from '../engine/recent.records';
import { WaiterRuns } from '../engine/waiter.runs';
import { ReadAcquisition, type ReadAcquisitionHost } from './read-acquisition';
import { leaseView } from './read.lease-view';
import { checkReadOptions } from './read.options';
import { upgradeReader } from './read.upgrade';
import { UpgradedLocks } from './upgraded.locks';

/**
 * Read locks (`acquire(key, { mode: 'read' })`): readers share the key's mutex item as one holder,
 * the read group; a writer is any mutex caller of the key. Each reader runs its own
 * {@link ReadAcquisition}; a granted read lock is a `Lock` held by a {@link LeaseKeeper} of its
 * own (heartbeats renew the reader's entry only), released with one write.
 */
export class ReadPrimitive implements LockPrimitive {
  private readonly history = new KeyHistory();
  private readonly seen = new RecentRecords<LockRecord>();
  private readonly keeper: LeaseKeeper;
  private readonly runs: WaiterRuns;
  private readonly inFlight = new InFlightWrites();
  private readonly host: ReadAcquisitionHost | undefined;
  /** The write locks upgradeable readers became. */
  private readonly upgraded: UpgradedLocks;
  /** The read locks taken with `mode: 'upgradeable'` (they alone may `upgrade()`). */
  private readonly upgradeable = new WeakSet<Lock>();
  /** Upgrades running, one per read lock. */
  private readonly upgrades = new Map<Lock, Promise<Lock>>();
  /** The write lock each upgraded read lock became (a nested acquisition inside its scope joins it). */
  private readonly upgradedFrom = new WeakMap<Lock, Lock>();
  /** Aborts at shutdown: upgrades under way stop waiting. */
  private readonly closing = new AbortController();
  private readonly store: ReadStorePort | undefined;

  constructor(private readonly context: PrimitiveContext) {
    const { options, events, stores } = context;
    const store = (this.store = stores.read);
    const noFence = (lock: Lock) => Promise.reject(new LockValidationError(FENCED_WRITES_UNSUPPORTED(lock.key, READ_HAS_NO_FENCE)));
    this.keeper = new LeaseKeeper({
      options,
      store: store ? leaseView(store, stores.mutex) : stores.mutex,
      history: this.history,
      events,
      lockHost: {
        release: (lock) => this.release(lock),
        extend: (lock, leaseDuration) => this.keeper.extend(lock, leaseDuration),
        checkHeld: (lock) => this.keeper.checkHeld(lock),
        transact: noFence,
        fencedWrite: noFence,
        upgrade: (lock, upgradeOptions) => this.upgrade(lock, upgradeOptions),
      },
      onLost: () => undefined,
    });
    this.upgraded = new UpgradedLocks(context, this.history);
    this.runs = new WaiterRuns(context);
    this.host = store && {
      store,
      mutex: stores.mutex,
      history: this.history,
      options,
      emit: (event, trace) => events.emit(event, trace),
      noteWaiting: (waiter) => events.noteWaiting(waiter),
    };
  }

  serves(options: AcquireOptions): boolean {
    return options.mode === 'read' || options.mode === 'upgradeable';
  }

  resolveKey(scope: string, key: string, options: AcquireOptions): PrimitiveKey {
    checkReadOptions(options, scope);
    const storedKey = toStoredKey(key, this.context.options.keyPrefix);
    return { storedKey, itemKey: storedKey };
  }

  /** Readers and writers of a key share its mutex item. */
  itemKeyOf(storedKey: string): string {
    return storedKey;
  }

  /**
   * Acquires a read lock on `key` (options checked by {@link resolveKey}).
   * @returns the read lock; rejects with `LockConfigurationError` when the manager is shut down, or
   *   the store keeps no read locks.
   */
  acquire(key: string, { storedKey }: PrimitiveKey, options: AcquireOptions): Promise<Lock> {
    const { host } = this;
    if (!host) return Promise.reject(new LockConfigurationError(READ_STORE_UNSUPPORTED()));
    const upgradeable = options.mode === 'upgradeable';
    return this.runs.start(key, storedKey, options, {
      prepare: (waiter) => {
        waiter.token = readerToken(waiter.token);
      },
      run: (waiter) => new ReadAcquisition(host, waiter, this.seen.get(storedKey), upgradeable).run(),
      grant: (waiter, granted) => {
        this.seen.remember(granted.record);
        const record: LockRecord = { key: storedKey, fencingToken: granted.record.fencingToken, rvn: granted.entry.version };
        const { lock } = this.keeper.hold(waiter, record, granted.sentAt, granted.via, granted.entry.leaseMs);
        if (upgradeable) this.upgradeable.add(lock);
        return lock;
      },
      afterGrant: (granted) => {
        for (const dead of granted.dead) void this.inFlight.track(host.store.pass(storedKey, dead));
      },
    });
  }

  uses(storedKey: string): boolean {
    const held = [...this.keeper.all(), ...this.upgraded.all()];
    return this.runs.waitsFor(storedKey) || held.some((lease) => lease.storedKey === storedKey);
  }

  inUse(key: string): string {
    return KEY_IS_MUTEX(key);
  }

  /** The lease behind a read lock (or a nested handle of one), while it is held. */
  lease(lock: Lock): HeldLease | undefined {
    return this.keeper.get(rootLock(lock)) ?? this.upgraded.lease(rootLock(lock));
  }

  get heldCount(): number {
    return this.keeper.size + this.upgraded.size;
  }

  /**
   * `lock.upgrade()`: the upgradeable read lock becomes a write lock (see `upgradeReader()`). Its
   * heartbeats go on while it waits for the other readers; once converted, the read lock ends
   * and the write lock, held from the converting write, is returned.
   */
  private upgrade(lock: Lock, options: UpgradeOptions): Promise<Lock> {
    if (this.upgrades.has(lock)) return Promise.reject(new LockValidationError(UPGRADE_IN_PROGRESS(lock.key)));
    const done = this.upgradeNow(lock, options).finally(() => this.upgrades.delete(lock));
    this.upgrades.set(lock, done);
    this.runs.track(done);
    return done;
  }

  private async upgradeNow(lock: Lock, options: UpgradeOptions): Promise<Lock> {
    const lease = this.keeper.get(lock);
    const { store, context } = this;
    if (!this.upgradeable.has(lock) || !store) throw new LockValidationError(UPGRADE_UNSUPPORTED(lock.key));
    if (!lease || !this.keeper.checkHeld(lock)) throw new LockLostError(UPGRADE_LOST(lock.key), lock.key, 'gone');
    const { wait } = options;
    // Shutdown ends the wait as the caller's signal does.
    const signal = options.signal ? AbortSignal.any([options.signal, this.closing.signal]) : this.closing.signal;
    const waiter = createWaiter(context.options, () => context.assertOpen(), lock.key, lease.storedKey, {
      wait,
      signal,
      leaseDuration: lease.targetLeaseMs,
    });
    const later = (task: () => Promise<void>) => void this.inFlight.track(task().catch(() => undefined));
    const done = await upgradeReader(
      { store, mutex: context.stores.mutex, history: this.history, maxPollMs: context.options.maxPollMs, later },
      {
        key: lock.key,
        storedKey: lease.storedKey,
        token: lease.token,
        holder: { token: waiter.token, owner: waiter.owner, leaseMs: waiter.leaseMs },
        startedAt: waiter.startedAt,
        deadline: waiter.deadline,
        signal,
      },
    );
    // The read lock is over: its entry went with the group, which is now this write lock.
    const heldMs = Math.round(monotonicNow() - lease.acquiredAt);
    this.keeper.release(lock);
    this.upgradeable.delete(lock);
    context.events.emitFor(lease, {
      type: 'released',
      key: lock.key,
      owner: lock.owner,
      fencingToken: lock.fencingToken,
      heldMs,
      handedOver: false,
    });
    if (this.closing.signal.aborted) {
      // Converted as the manager shut down: given back at once, as every lock is at shutdown.
      await context.stores.mutex.release(lease.storedKey, { token: waiter.token }, waiter.leaseMs).catch(() => false);
      throw this.closing.signal.reason;
    }
    const upgraded = this.upgraded.hold(waiter, done.record, done.sentAt);
    this.upgradedFrom.set(lock, upgraded);
    return upgraded;
  }

  /** Whether a lock (or a nested handle) is a read lock of this primitive (not an upgraded write lock). */
  isRead(lock: Lock): boolean {
    return this.keeper.get(rootLock(lock)) !== undefined;
  }

  /** The write lock a read lock became by `upgrade()`, while it is held. */
  upgradedOf(lock: Lock): Lock | undefined {
    const upgraded = this.upgradedFrom.get(rootLock(lock));
    return upgraded && this.upgraded.lease(upgraded) ? upgraded : undefined;
  }

  /** The upgraded write lock of this manager with owner token `leaseId` on `key`, if any. */
  upgradedByLeaseId(key: string, leaseId: string): Lock | undefined {
    const storedKey = toStoredKey(key, this.context.options.keyPrefix);
    return this.upgraded.all().find((lease) => lease.storedKey === storedKey && lease.token === leaseId && lease.state === 'held')?.lock;
  }

  /** Releases a read lock (one conditional write; the last reader's ends the group and serves the next ticket). */
  release(lock: Lock): Promise<ReleaseOutcome> {
    return this.inFlight.track(this.releaseNow(lock));
  }

  private async releaseNow(lock: Lock): Promise<ReleaseOutcome> {
    const lease = this.keeper.release(lock);
    const { store } = this;
    if (!store) return 'not-held';
    if (!lease) return this.freeExpired(lock, store);
    const heldMs = monotonicNow() - lease.acquiredAt;
    const usualMs = lease.quiet ? undefined : heldMs;
    if (usualMs !== undefined) this.history.recordHold(lease.storedKey, usualMs);
    return releaseWithEvents(this.context, this.keeper, lock, lease, heldMs, () =>
      store.release(lease.storedKey, readerIdOf(lease.token), lease.leaseMs, usualMs),
    );
  }

  /**
   * A read lock whose lease ran out on the local clock: its entry, unchanged since its last write,
   * goes at once (the pass is conditioned on that version), so writers do not wait for it.
   */
  private async freeExpired(lock: Lock, store: ReadStorePort): Promise<ReleaseOutcome> {
    const lease = this.keeper.takeExpired(lock);
    if (!lease?.rvn) return 'not-held';
    const entry: ReaderEntry = { ...newEntry(lease.token, lease.leaseMs, lock.owner), version: lease.rvn };
    const freed = await this.keeper
      .serial(lease, () => store.pass(lease.storedKey, entry))
      .then((result) => result.ok)
      .catch(() => false);
    if (!freed) return 'not-held';
    this.context.events.emitFor(lease, { type: 'cleanup', key: lock.key, owner: lock.owner, outcome: 'released' });
    return 'expired';
  }

  /**
   * Renews a reader's lease known only by its key and `leaseId` (a reader's, see `isReaderLeaseId`):
   * one conditional write (through its `Lock` when this process holds it). Without `leaseDuration`,
   * the entry's own lease is kept (one read first).
   * @throws LockLostError when that lease no longer holds the key.
   */
  async renewLease(key: string, leaseId: string, leaseDuration?: Duration): Promise<void> {
    const storedKey = toStoredKey(key, this.context.options.keyPrefix);
    const own = this.heldLease(storedKey, leaseId);
    if (own) return this.keeper.extend(own.lock, leaseDuration);
    const { mutex } = this.context.stores;
    const id = readerIdOf(leaseId);
    const leaseMs = leaseDuration === undefined ? readerOf(await mutex.read(storedKey), id)?.leaseMs : parseLease(leaseDuration);
    const result =
      leaseMs === undefined || !this.store
        ? undefined
        : await this.store.heartbeat({ key: storedKey, entry: newEntry(leaseId, leaseMs, this.context.options.ownerName) });
    if (result?.ok) return;
    const current = result?.current ?? (await mutex.read(storedKey).catch(() => undefined));
    throw new LockLostError(NOT_HELD_FOR_EXTEND(key), key, isHeld(current) ? 'taken' : 'gone');
  }

  /**
   * Releases a reader's lease known only by its key and `leaseId`: one conditional write (through its
   * `Lock` when this process holds it).
   * @returns `true` when that lease's release is done; `false` when it no longer held the key.
   */
  async releaseLease(key: string, leaseId: string): Promise<boolean> {
    const storedKey = toStoredKey(key, this.context.options.keyPrefix);
    const own = this.heldLease(storedKey, leaseId);
    if (own) return (await this.release(own.lock)) === 'released';
    return this.store ? this.store.release(storedKey, readerIdOf(leaseId), this.context.options.leaseMs) : false;
  }

  private heldLease(storedKey: string, leaseId: string): HeldLease | undefined {
    return this.keeper.all().find((lease) => lease.storedKey === storedKey && lease.token === leaseId && lease.state === 'held');
  }

  /** Who holds the key (one strongly consistent read of its mutex item): the readers, or a writer. */
  async inspect(_key: string, storedKey: string): Promise<LockInfo | null | undefined> {
    const record = await this.context.stores.mutex.read(storedKey);
    if (record === undefined) return undefined;
    return isHeld(record) ? lockInfoOf(record, this.context.options.keyPrefix) : null;
  }

  /** The mutex primitive lists every held mutex item, read groups among them. */
  list(): Promise<LockInfo[]> {
    return Promise.resolve([]);
  }

  async close(error: unknown): Promise<void> {
    this.closing.abort(error);
    await this.runs.close(error);
    await releaseAllAtShutdown(this.keeper, (lock) => this.release(lock));
    await this.inFlight.idle();
    await this.upgraded.close();
  }

  stop(): void {
    this.keeper.close();
    this.upgraded.stop();
  }
}

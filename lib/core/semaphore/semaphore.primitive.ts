import { LockConfigurationError, LockKeyError, LockLostError, LockValidationError } from '../../errors/lock.errors';
import {
  FENCED_WRITES_UNSUPPORTED,
  SEMAPHORE_HAS_NO_FENCE,
  KEY_IS_SEMAPHORE,
  KEY_TOO_LONG,
  RELEASE_NOT_HELD,
  RELEASED_AT_SHUTDOWN,
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
import type { HeldLease, Waiter } from '../engine/lock-state';
import { createWaiter } from '../engine/waiter.factory';
import { settleWaiter } from '../engine/waiter.settle';
import type { LockPrimitive, PrimitiveContext, PrimitiveKey } from '../engine/primitive.interface';
import { SemaphoreAcquisition, type SemaphoreAcquisitionHost } from './semaphore-acquisition';
import { checkSemaphoreOptions, semaphoreKeyOf } from './semaphore.options';

/** How many semaphore items are remembered for a first write without a read. */
const MAX_SEEN = 1_000;

/**
 * The counting semaphores of a manager (`acquire(key, { limit })`): each caller runs its own
 * {@link SemaphoreAcquisition}; a granted slot is a `Lock` held by a {@link LeaseKeeper} of its
 * own (heartbeats renew the holder's entry only), released with one write.
 */
export class SemaphorePrimitive implements LockPrimitive {
  /** Holder versions and line heads as first seen, and hold times, per key. */
  private readonly history = new KeyHistory();
  private readonly seen = new Map<string, SemaphoreRecord>();
  private readonly keeper: LeaseKeeper;
  private readonly waiting = new Set<Waiter>();
  private readonly attempts = new Set<Promise<void>>();
  private readonly inFlight = new Set<Promise<unknown>>();
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
    this.host = store && {
      store,
      history: this.history,
      options,
      lastSeen: (key) => this.seen.get(key),
      remember: (record) => {
        this.seen.delete(record.key);
        this.seen.set(record.key, record);
        if (this.seen.size > MAX_SEEN) this.seen.delete(this.seen.keys().next().value as string);
      },
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
   * @throws LockConfigurationError when the manager is shut down, or the store keeps no semaphores.
   */
  acquire(key: string, { itemKey }: PrimitiveKey, options: AcquireOptions): Promise<Lock> {
    this.context.assertOpen();
    const limit = options.limit!;
    const host = this.host;
    if (!host) return Promise.reject(new LockConfigurationError(SEMAPHORE_STORE_UNSUPPORTED()));
    const { events } = this.context;
    let waiter: Waiter;
    try {
      waiter = createWaiter(this.context.options, () => this.context.assertOpen(), key, itemKey, options);
      waiter.trace = events.startAcquire(key, waiter.owner, waiter.deadline - waiter.startedAt);
    } catch (error) {
      return Promise.reject(error);
    }
    return new Promise<Lock>((resolve, reject) => {
      waiter.resolve = resolve;
      waiter.reject = reject;
      this.waiting.add(waiter);
      const { signal } = options;
      const onAbort = () => settleWaiter(events, waiter, signal?.reason);
      signal?.addEventListener('abort', onAbort, { once: true });
      waiter.cancel.signal.addEventListener('abort', () => signal?.removeEventListener('abort', onAbort));
      const attempt = new SemaphoreAcquisition(host, waiter, limit).run().then(
        (granted) => {
          const record: LockRecord = { key: waiter.storedKey, fencingToken: granted.holder.fencingToken, rvn: granted.holder.version };
          const lease = this.keeper.hold(waiter, record, granted.sentAt, granted.via, granted.holder.leaseMs);
          if (waiter.settled) void this.context.releaseQuietly(lease.lock);
          else settleWaiter(events, waiter, lease.lock);
        },
        (error: unknown) => settleWaiter(events, waiter, error),
      );
      const tracked = attempt.finally(() => {
        this.waiting.delete(waiter);
        this.attempts.delete(tracked);
      });
      this.attempts.add(tracked);
    });
  }

  uses(storedKey: string): boolean {
    const key = semaphoreKeyOf(storedKey);
    return [...this.waiting].some((w) => w.storedKey === key) || this.keeper.all().some((lease) => lease.storedKey === key);
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
    const write = this.releaseNow(lock);
    this.inFlight.add(write);
    void write.catch(() => undefined).finally(() => this.inFlight.delete(write));
    return write;
  }

  private async releaseNow(lock: Lock): Promise<ReleaseOutcome> {
    const { events, options } = this.context;
    const lease = this.keeper.release(lock);
    const { store } = this;
    if (!lease || !store) return 'not-held';
    const heldMs = monotonicNow() - lease.acquiredAt;
    // As for a mutex: a slot whose caller had given up is given back as soon as it is held, which
    // is not a hold of the key; its release writes none (the item keeps the last one written).
    const usualMs = lease.quiet ? undefined : heldMs;
    if (usualMs !== undefined) this.history.recordHold(lease.storedKey, usualMs);
    const base = { key: lock.key, owner: lock.owner, fencingToken: lock.fencingToken, heldMs: Math.round(heldMs) };
    return this.keeper.serial(lease, async () => {
      let done: boolean;
      try {
        done = await store.release(lease.storedKey, lease.token, lease.leaseMs, usualMs);
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
    for (const waiter of this.waiting) settleWaiter(this.context.events, waiter, error);
    await Promise.allSettled([...this.attempts]);
    const held = this.keeper.all();
    for (const lease of held) lease.controller.abort(new LockLostError(RELEASED_AT_SHUTDOWN(lease.lock.key), lease.lock.key, 'shutdown'));
    await Promise.allSettled(held.map((lease) => this.release(lease.lock)));
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
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

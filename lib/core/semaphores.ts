import { LockConfigurationError, LockLostError, LockValidationError } from '../errors/lock.errors';
import {
  LOCK_RELEASED,
  RELEASE_NOT_HELD,
  RELEASED_AT_SHUTDOWN,
  SEMAPHORE_DATA_UNSUPPORTED,
  SEMAPHORE_LIMIT_INVALID,
  SEMAPHORE_STORE_UNSUPPORTED,
} from '../errors/lock.messages';
import type { AcquireOptions } from '../interfaces/acquire-options.interface';
import type { LockInfo } from '../interfaces/lock-info.interface';
import type { LockRecord } from '../store/lock-record';
import type { LockStorePort } from '../store/lock-store.interface';
import { holderOf, MAX_SEMAPHORE_LIMIT, SEMAPHORE_KEY_SUFFIX, semaphoreWaiting, type SemaphoreRecord } from '../store/semaphore-record';
import type { SemaphoreStorePort } from '../store/semaphore-store.protocol';
import { monotonicNow } from '../utils/clock';
import { KeyHistory } from './key-history';
import { LeaseKeeper } from './lease.keeper';
import type { Lock } from './lock';
import type { LockEvents } from './lock.events';
import type { ResolvedLockOptions } from './lock-options.resolver';
import type { HeldLease, Waiter } from './lock-state';
import { SemaphoreAcquisition, type SemaphoreAcquisitionHost } from './semaphore-acquisition';

/** How many semaphore items are remembered for a first write without a read. */
const MAX_SEEN = 1_000;

/** What the semaphores work with. */
export interface SemaphoresDeps {
  readonly options: ResolvedLockOptions;
  /** The lock store: its `semaphores` member keeps the semaphore items. */
  readonly store: LockStorePort;
  readonly events: LockEvents;
  /** A new caller (options checked, the manager open): `KeyQueues.newWaiter`. */
  newWaiter(key: string, storedKey: string, options: AcquireOptions): Waiter;
  /** Settles a caller once, with a lock or an error: `KeyQueues.settle`. */
  settle(waiter: Waiter, outcome: unknown): void;
  /** Gives back a lock whose caller had given up meanwhile. */
  releaseQuietly(lock: Lock): Promise<void>;
}

/** The stored key of the semaphore for a mutex-form stored key (`keyPrefix + key`). */
export function semaphoreKeyOf(storedKey: string): string {
  return storedKey + SEMAPHORE_KEY_SUFFIX;
}

/**
 * The counting semaphores of a manager (`acquire(key, { limit })`): each caller runs its own
 * {@link SemaphoreAcquisition}; a granted slot is a `Lock` held by a {@link LeaseKeeper} of its
 * own (heartbeats renew the holder's entry only), released with one write.
 */
export class Semaphores {
  /** Holder versions and line heads as first seen, and hold times, per key. */
  private readonly history = new KeyHistory();
  private readonly seen = new Map<string, SemaphoreRecord>();
  private readonly keeper: LeaseKeeper;
  private readonly waiting = new Set<Waiter>();
  private readonly attempts = new Set<Promise<void>>();
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly host: SemaphoreAcquisitionHost | undefined;

  constructor(private readonly deps: SemaphoresDeps) {
    const { options, events } = deps;
    const store = deps.store.semaphores;
    this.keeper = new LeaseKeeper({
      options,
      store: store ? leaseView(store) : deps.store,
      history: this.history,
      events,
      lockHost: {
        release: (lock) => this.release(lock),
        extend: (lock, leaseDuration) => this.keeper.extend(lock, leaseDuration),
        checkHeld: (lock) => this.keeper.checkHeld(lock),
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

  /**
   * Acquires one slot of the semaphore `key` (stored as `storedKey` in mutex form).
   * @throws LockConfigurationError when the store keeps no semaphores.
   */
  acquire(key: string, storedKey: string, options: AcquireOptions, limit: number): Promise<Lock> {
    const host = this.host;
    if (!host) return Promise.reject(new LockConfigurationError(SEMAPHORE_STORE_UNSUPPORTED()));
    let waiter: Waiter;
    try {
      waiter = this.deps.newWaiter(key, semaphoreKeyOf(storedKey), options);
      waiter.trace = this.deps.events.startAcquire(key, waiter.owner, waiter.deadline - waiter.startedAt);
    } catch (error) {
      return Promise.reject(error);
    }
    return new Promise<Lock>((resolve, reject) => {
      waiter.resolve = resolve;
      waiter.reject = reject;
      this.waiting.add(waiter);
      const { signal } = options;
      const onAbort = () => this.deps.settle(waiter, signal?.reason);
      signal?.addEventListener('abort', onAbort, { once: true });
      waiter.cancel.signal.addEventListener('abort', () => signal?.removeEventListener('abort', onAbort));
      const attempt = new SemaphoreAcquisition(host, waiter, limit).run().then(
        (granted) => {
          const record: LockRecord = { key: waiter.storedKey, fencingToken: granted.holder.fencingToken, rvn: granted.holder.version };
          const lease = this.keeper.hold(waiter, record, granted.sentAt, granted.via, granted.holder.leaseMs);
          if (waiter.settled) void this.deps.releaseQuietly(lease.lock);
          else this.deps.settle(waiter, lease.lock);
        },
        (error: unknown) => this.deps.settle(waiter, error),
      );
      const tracked = attempt.finally(() => {
        this.waiting.delete(waiter);
        this.attempts.delete(tracked);
      });
      this.attempts.add(tracked);
    });
  }

  /** Whether a caller of this manager holds or waits for the semaphore of a (mutex-form) stored key. */
  uses(storedKey: string): boolean {
    const key = semaphoreKeyOf(storedKey);
    return [...this.waiting].some((w) => w.storedKey === key) || this.keeper.all().some((lease) => lease.storedKey === key);
  }

  /** The lease behind a semaphore lock, while it is held. */
  lease(lock: Lock): HeldLease | undefined {
    return this.keeper.get(lock);
  }

  /** Number of semaphore slots held. */
  get size(): number {
    return this.keeper.size;
  }

  /**
   * Releases a slot (one conditional write).
   * @returns `true` when released; `false` when it was no longer held.
   */
  release(lock: Lock): Promise<boolean> {
    const write = this.releaseNow(lock);
    this.inFlight.add(write);
    void write.catch(() => undefined).finally(() => this.inFlight.delete(write));
    return write;
  }

  private async releaseNow(lock: Lock): Promise<boolean> {
    const { events, options } = this.deps;
    const lease = this.keeper.release(lock, new LockLostError(LOCK_RELEASED(lock.key), lock.key, 'released'));
    const store = this.deps.store.semaphores;
    if (!lease || !store) return false;
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
      return done;
    });
  }

  /** The holders of a semaphore (one strongly consistent read), or `null` when nobody holds it. */
  async inspect(key: string, storedKey: string): Promise<LockInfo | null> {
    const record = await this.deps.store.semaphores?.read(semaphoreKeyOf(storedKey));
    return record ? semaphoreInfo(key, record) : null;
  }

  /**
   * Every semaphore with holders whose key starts with `prefix`, as `inspect()` reports each
   * (`keyPrefix`: the manager's option, stripped from the stored keys). Empty when the store keeps
   * no semaphores, or its semaphore store cannot scan (`scanHeld` is optional).
   */
  async list(keyPrefix: string, prefix: string): Promise<LockInfo[]> {
    const store = this.deps.store.semaphores;
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

  /** At shutdown: settles waiting callers with `error`, releases every slot held, stops the heartbeat timer. */
  async close(error: unknown): Promise<void> {
    for (const waiter of this.waiting) this.deps.settle(waiter, error);
    await Promise.allSettled([...this.attempts]);
    const held = this.keeper.all();
    for (const lease of held) lease.controller.abort(new LockLostError(RELEASED_AT_SHUTDOWN(lease.lock.key), lease.lock.key, 'shutdown'));
    await Promise.allSettled(held.map((lease) => this.release(lease.lock)));
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
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
function leaseView(store: SemaphoreStorePort): Pick<LockStorePort, 'heartbeat' | 'read'> {
  const view = (record: SemaphoreRecord | undefined): LockRecord | undefined => {
    const newest = record?.holders[record.holders.length - 1];
    return record && { key: record.key, token: newest?.token, owner: newest?.owner, fencingToken: newest?.fencingToken };
  };
  return {
    async heartbeat(write) {
      const result = await store.heartbeat(write.key, write.holding.token, write.leaseMs);
      if (!result.ok) return { ok: false, current: view(result.current) };
      const own = holderOf(result.record, write.holding.token);
      return { ok: true, record: { key: write.key, rvn: own?.version, fencingToken: own?.fencingToken } };
    },
    read: async (key) => view(await store.read(key)),
  };
}

/**
 * Checks the semaphore options of one call before any request: a whole `limit` from 1 to
 * {@link MAX_SEMAPHORE_LIMIT}, and no `data`.
 * @throws LockValidationError naming the call and what is wrong.
 */
export function checkSemaphoreOptions(options: AcquireOptions, scope: string): number {
  const { limit } = options;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_SEMAPHORE_LIMIT) {
    throw new LockValidationError(SEMAPHORE_LIMIT_INVALID(scope, limit, MAX_SEMAPHORE_LIMIT));
  }
  if (options.data !== undefined) throw new LockValidationError(SEMAPHORE_DATA_UNSUPPORTED(scope));
  return limit;
}

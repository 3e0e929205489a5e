import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { LockBusyError, LockConfigurationError, LockValidationError } from '../errors/lock.errors';
import { isReaderLeaseId } from '../store/rw/read.record';
import { FIRE_TIME_NESTED, MANAGER_CLOSED, UPGRADEABLE_SET, WRITE_INSIDE_READ } from '../errors/lock.messages';
import type { AcquireOptions } from '../interfaces/acquire-options.interface';
import type { DynamoLockOptions } from '../interfaces/dynamo-lock-options.interface';
import type { JobFire } from '../interfaces/job-fire.interface';
import type { LockInfo } from '../interfaces/lock-info.interface';
import type { LockEventListener } from '../interfaces/lock-event.interface';
import type { Duration } from '../utils/duration';
import { toStoredKey } from '../utils/lock-key.validation';
import { type Lock, nestedLock, releaseQuietly } from './engine/lock';
import { LockContext } from './engine/lock.context';
import { LockEvents } from './engine/lock.events';
import { exposeInternals } from './engine/lock.internals';
import { checkAcquireOptions, entryPointOf, resolveLockOptions, type ResolvedLockOptions } from './engine/lock-options.resolver';
import { LockStoreFactory } from './engine/lock-store.factory';
import { LeaderCampaigns } from './leadership/leader.campaigns';
import type { LeadOptions } from './leadership/lead-options';
import type { Leadership } from './leadership/leadership';
import type { LockPrimitive } from './engine/primitive.interface';
import { createPrimitives, type Primitives } from './primitives';
import { acquireMulti, type MultiLockHost } from './multi/multi-acquisition';
import { partsOf } from './multi/multi.lock';

/**
 * The lock engine, independent of Nest: a router over its primitives (mutex, semaphore; leadership
 * on top of the mutex), the per-context view behind `current()` and re-entrancy, and shutdown.
 * `LockService` wraps it as a Nest provider; the CLI uses it directly. Each primitive lives in its
 * own folder behind `LockPrimitive` (`primitive.interface.ts`); docs/architecture.md maps them.
 */
export class LockManager {
  /** The options in force, defaults applied. */
  readonly options: ResolvedLockOptions;
  private readonly backend: LockStoreFactory;
  private readonly events: LockEvents;
  private readonly primitives: Primitives;
  private readonly leadership: LeaderCampaigns;
  // A read lock upgraded in its scope is succeeded there by its write lock.
  private readonly context = new LockContext((lock) => this.primitives.read.upgradedOf(lock));
  private readonly multi: MultiLockHost;
  private closed = false;

  /** @throws LockConfigurationError when an option is invalid. */
  constructor(options: DynamoLockOptions = {}) {
    // The Nest module and the CLI note their entry point on the options, so errors name it.
    const entry = entryPointOf(options) ?? 'LockManager';
    this.options = resolveLockOptions(options, entry);
    this.events = new LockEvents(this.options.logger, this.options);
    this.backend = new LockStoreFactory(options, this.options, entry);
    const { stores } = this.backend;
    const release = (lock: Lock) => releaseQuietly(lock, this.options.logger);
    this.primitives = createPrimitives({
      options: this.options,
      stores,
      events: this.events,
      releaseQuietly: release,
      assertOpen: () => {
        if (this.closed) throw new LockConfigurationError(MANAGER_CLOSED());
      },
    });
    const { mutex } = this.primitives;
    this.leadership = new LeaderCampaigns({
      options: this.options,
      events: this.events,
      tryAcquire: (name, leaseMs, data) => this.tryAcquire(name, { leaseDuration: leaseMs, data }),
      watch: (storedKey) => mutex.watch(storedKey),
      releaseQuietly: release,
      assertMutex: (name, storedKey) => this.assertOnly(mutex, name, storedKey),
    });
    this.multi = {
      keyPrefix: this.options.keyPrefix,
      waitMs: this.options.waitMs,
      acquireOne: (scope, key, options) => this.start(scope, key, options),
      held: (storedKey) => this.context.get(mutex.itemKeyOf(storedKey)),
      isRead: (lock) => this.primitives.read.isRead(lock),
      releaseQuietly: release,
      // Only keys no caller of this process uses, through any primitive (the ordered path says why).
      // A set of read locks is taken key by key (the one-write path takes write locks).
      acquireAll: async (set, options) =>
        options.mode === 'read' || set.some(({ storedKey }) => this.primitives.all.some((p) => p.uses(storedKey)))
          ? undefined
          : mutex.acquireAll(set, options),
    };
    exposeInternals(this, {
      stores,
      runHolding: (lock, fn) => this.runHolding(lock, fn),
      releaseQuietly: (lock) => this.releaseScope(lock),
      endScope: (lock) => {
        this.context.endScope(lock);
        for (const part of partsOf(lock) ?? []) this.context.endScope(part);
      },
      endRun: (lock, result) => this.primitives.endRun(lock, result),
      emit: (event) => this.events.emit(event),
    });
  }

  /**
   * The DynamoDB client in use: the `client` option, or one created from `clientConfig` on first
   * use (with a custom `store`, such as `forTesting()`'s memory store, none is created unless asked for).
   */
  get client(): DynamoDBClient {
    return this.backend.client;
  }

  /**
   * Checks that the table exists with the right schema, creating it when `createTable` is set.
   * @throws LockConfigurationError when the table is missing or has another key schema.
   */
  async init(): Promise<void> {
    await this.events.ready;
    if (this.options.verifyTable || this.options.createTable) {
      await this.backend.stores.prepare(this.options.createTable);
    }
  }

  /**
   * Acquires a lock, waiting up to `options.wait` while another owner holds it.
   * An uncontended acquisition is one conditional write.
   * @throws LockBusyError when the lock stays busy for the whole wait (or at once with `wait: false`).
   * @throws LockUnavailableError when DynamoDB failed or did not answer in time and no answer showed
   *   another holder (an outage, not contention), by the wait plus one request limit.
   * @throws LockKeyError for a bad key (empty, blank, too long, not well-formed), and
   *   LockValidationError for a bad duration or data, before any request.
   * @throws the signal's reason when `options.signal` aborts.
   *
   * With an array of keys (a **multi-key lock**): every key or none, in one `Lock` whose `keys`,
   * `fencingTokenOf(key)`, `signal` (aborted when any key is lost), `extend()` and `release()`
   * cover the set. Keys are deduplicated and taken one by one in one global order (the UTF-8 bytes
   * of the stored key), whatever order they are given in, so callers locking the same keys in
   * opposite orders never deadlock; the wait is shared by all of them. On a failure the keys
   * taken are released and the error names the key that failed. At most 25 keys; `limit`, `data`
   * and `fireTime` are refused.
   *
   * @example
   * ```ts
   * await using lock = await locks.acquire(['account-2', 'account-1'], { wait: '5s' });
   * lock.keys; // ['account-1', 'account-2']
   * ```
   */
  acquire(key: string | readonly string[], options: AcquireOptions = {}): Promise<Lock> {
    return this.startAny('acquire()', key, options);
  }

  /** A call with one key or an array of keys (a multi-key lock). */
  private startAny(scope: string, key: string | readonly string[], options: AcquireOptions = {}): Promise<Lock> {
    if (!Array.isArray(key)) return this.start(scope, key as string, options);
    try {
      checkAcquireOptions(options, scope);
      if (options.mode === 'upgradeable') throw new LockValidationError(UPGRADEABLE_SET(scope));
    } catch (error) {
      return Promise.reject(error);
    }
    return acquireMulti(this.multi, scope, key, options);
  }

  /**
   * Starts an acquisition for `scope` (the public call, named in errors): picks the primitive,
   * keeps a key to one primitive in this process, and joins a lock the async context holds.
   */
  private start(scope: string, key: string, options: AcquireOptions = {}): Promise<Lock> {
    try {
      checkAcquireOptions(options, scope);
      const { mutex, all } = this.primitives;
      const primitive = all.find((p) => p !== mutex && p.serves(options)) ?? mutex;
      const resolved = primitive.resolveKey(scope, key, options);
      this.assertOnly(primitive, key, resolved.storedKey);
      const nested = this.context.get(resolved.itemKey);
      if (nested && options.fireTime !== undefined) throw new LockValidationError(FIRE_TIME_NESTED(scope, key));
      // A read lock inside a write lock of the key is the write lock; a write inside a read would wait for itself.
      if (nested && primitive === mutex && this.primitives.read.isRead(nested))
        throw new LockValidationError(WRITE_INSIDE_READ(scope, key));
      if (nested) return Promise.resolve(nestedLock(nested));
      return primitive.acquire(key, resolved, options);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * @throws LockValidationError when a caller of this process uses the key through another primitive
   *   on another item (readers and writers of a key share its item: they wait for each other there).
   */
  private assertOnly(primitive: LockPrimitive, key: string, storedKey: string): void {
    const item = primitive.itemKeyOf(storedKey);
    const other = this.primitives.all.find((p) => p !== primitive && p.itemKeyOf(storedKey) !== item && p.uses(storedKey));
    if (other) throw new LockValidationError(other.inUse(key));
  }

  /**
   * One attempt: the lock, or `null` when another owner holds it. Settles within one request limit.
   * A holder whose record this process has seen unchanged for a whole lease is taken over.
   * @throws LockUnavailableError when DynamoDB failed or did not answer in time.
   * @throws LockValidationError for bad input, before any request.
   *
   * With an array of keys: all of them or `null`, one attempt per key in the global order; keys
   * taken before a busy one are released, and nothing is left held or queued.
   */
  async tryAcquire(key: string | readonly string[], options: Omit<AcquireOptions, 'wait'> = {}): Promise<Lock | null> {
    try {
      checkAcquireOptions(options, 'tryAcquire()', false);
      return await this.startAny('tryAcquire()', key, { ...options, wait: false });
    } catch (error) {
      if (error instanceof LockBusyError) return null;
      throw error;
    }
  }

  /**
   * Runs `fn` while holding the lock, and releases it afterwards, also when `fn` throws.
   * Inside `fn`, `current()` returns the lock and a nested acquisition of the same key is re-entrant.
   * A failed release is logged, not thrown: the work is done, and the lease runs out on its own.
   * With an array of keys, `fn` runs holding all of them (see {@link LockManager.acquire}), and
   * `current(key)` inside it returns the lock of one key.
   */
  async withLock<T>(key: string | readonly string[], fn: (lock: Lock) => T | Promise<T>, options?: AcquireOptions): Promise<T> {
    const lock = await this.startAny('withLock()', key, options);
    try {
      return await this.runHolding(lock, () => fn(lock));
    } catch (error) {
      // A scheduled fire's run that threw ended `failed` (its release records it).
      this.primitives.endRun(lock, 'failed');
      throw error;
    } finally {
      await this.releaseScope(lock);
    }
  }

  /**
   * Releases the lock of a scope that ends (`withLock()`, `@WithLock`), and the write lock an
   * upgrade made of it in that scope, if any. Failures are logged, not thrown.
   */
  private async releaseScope(lock: Lock): Promise<void> {
    const upgraded = this.primitives.read.upgradedOf(lock);
    await releaseQuietly(lock, this.options.logger);
    if (upgraded) await releaseQuietly(upgraded, this.options.logger);
  }

  /**
   * Runs `fn` with `lock` visible to `current()` and to re-entrant acquisitions.
   * Used by `withLock()` and the `@WithLock` decorator.
   */
  private runHolding<T>(lock: Lock, fn: () => T): T {
    const parts = partsOf(lock);
    // A multi-key lock: each key's lock is what `current(key)` and re-entrant calls find.
    if (parts) {
      // The set itself is innermost, so `current()` without a key returns it (never a real key: `\0` first).
      const set = () => this.context.run(`\0${lock.keys.join('\0')}`, lock, fn);
      return parts.reduceRight<() => T>((inner, part) => () => this.runHolding(part, inner), set)();
    }
    const lease = this.primitives.leaseOf(lock);
    const run = () => this.context.run(lease?.storedKey ?? toStoredKey(lock.key, this.options.keyPrefix), lock, fn);
    return lease?.trace ? lease.trace.run(run) : run();
  }

  /**
   * The lock held by the current async context: for `key`, or the innermost one.
   * Set inside `withLock()` callbacks and `@WithLock` methods.
   */
  current(key?: string): Lock | undefined {
    if (key === undefined) return this.context.get();
    const storedKey = this.options.keyPrefix + key;
    for (const primitive of this.primitives.all) {
      const lock = this.context.get(primitive.itemKeyOf(storedKey));
      if (lock) return lock;
    }
    return undefined;
  }

  /**
   * Renews a lease known only by its key and `leaseId` (for example one acquired by another
   * process with `heartbeat: false`): one conditional write. Without `leaseDuration` the stored
   * lease duration is kept. A lease this manager holds is renewed through its `Lock`, so the
   * handle keeps counting the lease it really has.
   * @throws LockLostError when that lease no longer holds the lock.
   */
  renewLease(key: string, leaseId: string, leaseDuration?: Duration): Promise<void> {
    const upgraded = typeof leaseId === 'string' ? this.primitives.read.upgradedByLeaseId(key, leaseId) : undefined;
    if (upgraded) return upgraded.extend(leaseDuration);
    if (typeof leaseId === 'string' && isReaderLeaseId(leaseId)) return this.primitives.read.renewLease(key, leaseId, leaseDuration);
    return this.primitives.mutex.renewLease(key, leaseId, leaseDuration);
  }

  /**
   * Releases a lease known only by its key and `leaseId`: one conditional write.
   * @returns `true` when that lease's release is done (by this call, or already by an earlier
   *   one: nothing is written again); `false` when it no longer held the lock (nothing changed).
   * @throws LockValidationError for an empty or missing `leaseId`, before any request.
   */
  releaseLease(key: string, leaseId: string): Promise<boolean> {
    const upgraded = typeof leaseId === 'string' ? this.primitives.read.upgradedByLeaseId(key, leaseId) : undefined;
    if (upgraded) return upgraded.release();
    if (typeof leaseId === 'string' && isReaderLeaseId(leaseId)) return this.primitives.read.releaseLease(key, leaseId);
    return this.primitives.mutex.releaseLease(key, leaseId);
  }

  /**
   * Campaigns for the leadership `name` (a lock of that key): of the instances that call it, one
   * leads at a time. The leader renews its lock by heartbeats; the others read it once per
   * `watchInterval` and take over one lease after the leader's last heartbeat, or within one
   * interval when it resigns or shuts down. One campaign per name runs in a process: a second call
   * returns the same handle (its `onElected`/`onRevoked` are added; other options must match).
   * @throws LockValidationError for a bad name or option, or options that differ from the running
   *   campaign's, before any request.
   * @throws LockConfigurationError when the manager is shut down.
   */
  lead(name: string, options?: LeadOptions): Leadership {
    if (this.closed) throw new LockConfigurationError(MANAGER_CLOSED());
    return this.leadership.lead(name, options);
  }

  /**
   * Who holds a key now (one strongly consistent read), or `null` when it is free. For a
   * semaphore, `holders` lists every holder and `limit` its limit (a key this manager has not used
   * as a semaphore and that has no mutex item costs a second read).
   */
  async inspect(key: string): Promise<LockInfo | null> {
    const storedKey = toStoredKey(key, this.options.keyPrefix);
    const { all } = this.primitives;
    const user = all.find((p) => p.uses(storedKey));
    if (user) return (await user.inspect(key, storedKey)) ?? null;
    for (const primitive of all) {
      const info = await primitive.inspect(key, storedKey);
      if (info !== undefined) return info;
    }
    return null;
  }

  /**
   * The last scheduled fire claimed on a job's key (`@Cron` with `@WithLock`, or `fireTime`): its
   * scheduled time, the instance that ran it, start, end and outcome; `null` when none was. One
   * strongly consistent read; the item keeps it after the release.
   */
  lastFire(key: string): Promise<JobFire | null> {
    return this.primitives.mutex.lastFire(key);
  }

  /**
   * Every held lock whose key starts with `prefix`, sorted by key: mutexes, and semaphores with at
   * least one holder (each as `inspect()` reports it: `holders`, `limit`, `waiting`). Costly: the
   * DynamoDB store sends two paginated, strongly consistent Scans of the whole table (one for
   * mutexes, one for semaphores, even when no semaphore exists), and DynamoDB bills every item each
   * Scan reads, matched by `prefix` or not. For tools and diagnostics, not hot paths. A custom
   * semaphore store without `scanHeld` lists no semaphore.
   */
  async list(prefix = ''): Promise<LockInfo[]> {
    const found: LockInfo[] = [];
    for (const primitive of this.primitives.all) found.push(...(await primitive.list(prefix)));
    return found.sort((a, b) => a.key.localeCompare(b.key));
  }

  /** Number of locks this manager holds now. */
  get heldCount(): number {
    return this.primitives.all.reduce((sum, primitive) => sum + primitive.heldCount, 0);
  }

  /**
   * Stops the manager: rejects waiting callers, releases every held lock, stops the timer,
   * and destroys the DynamoDB client if the manager created it.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Campaigns stop watching; the leaders' locks are released below with every held lock.
    const campaigns = this.leadership.stop();
    const { all } = this.primitives;
    // Side by side: a lock of one kind is not released later for the waiting of another kind to end.
    await Promise.all(all.map((primitive) => primitive.close(new LockConfigurationError(MANAGER_CLOSED()))));
    await Promise.allSettled(campaigns);
    for (const primitive of all) primitive.stop();
    this.backend.destroy();
  }

  /**
   * Adds a listener of every lock event (as the `onEvent` option does).
   * @returns a function that removes the listener.
   */
  subscribe(listener: LockEventListener): () => void {
    return this.events.subscribe(listener);
  }
}

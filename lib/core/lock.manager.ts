import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { LockBusyError, LockConfigurationError, LockKeyError, LockLostError, LockValidationError } from '../errors/lock.errors';
import {
  LEAD_CONFLICT,
  KEY_IS_MUTEX,
  KEY_TOO_LONG,
  KEY_IS_SEMAPHORE,
  LEASE_ID_INVALID,
  MANAGER_CLOSED,
  NOT_HELD_FOR_EXTEND,
  RELEASE_FAILED,
  RELEASED_AT_SHUTDOWN,
} from '../errors/lock.messages';
import type { AcquireOptions } from '../interfaces/acquire-options.interface';
import type { DynamoLockOptions } from '../interfaces/dynamo-lock-options.interface';
import type { LockInfo } from '../interfaces/lock-info.interface';
import type { LockEventListener } from '../interfaces/lock-event.interface';
import { isHeld, type LockRecord } from '../store/lock-record';
import { CLAIM_LEASE_MS } from '../store/lock-store.protocol';
import type { LockStorePort } from '../store/lock-store.interface';
import { type Duration, parseLease } from '../utils/duration';
import { MAX_KEY_BYTES, toStoredKey } from '../utils/lock-key.validation';
import { KeyHistory } from './key-history';
import { KeyQueues } from './key.queues';
import { LeaseKeeper } from './lease.keeper';
import { type Lock, type LockHost, nestedLock, rootLock } from './lock';
import { LockContext } from './lock.context';
import { LockEvents } from './lock.events';
import { exposeInternals } from './lock.internals';
import { LockReleaser } from './lock.releaser';
import { checkAcquireOptions, resolveLockOptions, type ResolvedLockOptions } from './lock-options.resolver';
import type { HeldLease, Waiter } from './lock-state';
import { LockStoreFactory } from './lock-store.factory';
import { KeyWatcher } from './key.watcher';
import { type CampaignHost, LeaderCampaign } from '../leadership/leader-campaign';
import { type LeadOptions, resolveLeadOptions } from '../leadership/lead-options';
import { createLeadership, type Leadership } from '../leadership/leadership';
import { checkSemaphoreOptions, semaphoreKeyOf, Semaphores } from './semaphores';

/**
 * The lock engine, independent of Nest: acquisition and waiting, heartbeats, release, and
 * the per-context view. `LockService` wraps it as a Nest provider; the CLI uses it directly.
 *
 * Callers in one process that want one key form a FIFO queue: only the head talks to DynamoDB,
 * and a release hands the lock straight to the next local caller in one conditional write.
 * This class is the facade; its collaborators each do one job: `KeyQueues` (the local queues
 * and remote acquisitions), `LeaseKeeper` (held leases and heartbeats), `LockReleaser` (release
 * and hand-over), `LockEvents` (listeners and traces); docs/architecture.md maps them.
 */
export class LockManager {
  /** The options in force, defaults applied. */
  readonly options: ResolvedLockOptions;
  private readonly backend: LockStoreFactory;
  private readonly store: LockStorePort;
  /** What this process learned about contended keys. */
  private readonly history = new KeyHistory();
  private readonly events: LockEvents;
  private readonly keeper: LeaseKeeper;
  private readonly queues: KeyQueues;
  private readonly releaser: LockReleaser;
  private readonly semaphores: Semaphores;
  private readonly context = new LockContext();
  /** Locks whose re-entrant scope ended before their release (see {@link endScope}). */
  private readonly scopesEnded = new WeakSet<Lock>();
  /** The campaign this process runs per leadership (stored key), with its handle. */
  private readonly campaigns = new Map<string, { campaign: LeaderCampaign; handle: Leadership }>();
  private readonly campaignHost: CampaignHost;
  private closed = false;

  /** @throws LockConfigurationError when an option is invalid. */
  constructor(options: DynamoLockOptions = {}) {
    this.options = resolveLockOptions(options);
    this.events = new LockEvents(this.options.logger, this.options);
    this.backend = new LockStoreFactory(options, this.options);
    const store = (this.store = this.backend.store);
    const { history, events } = this;
    const lockHost: LockHost = {
      release: (lock) => this.releaser.release(lock),
      extend: (lock, leaseDuration) => this.keeper.extend(lock, leaseDuration),
      checkHeld: (lock) => this.keeper.checkHeld(lock),
    };
    const releaseQuietly = (lock: Lock) => this.releaseQuietly(lock);
    this.keeper = new LeaseKeeper({
      options: this.options,
      store,
      history,
      events,
      lockHost,
      onLost: (lease) => this.queues.onLost(lease),
    });
    this.queues = new KeyQueues({
      options: this.options,
      store,
      history,
      events,
      hold: (waiter, record, validFrom, via, leaseMs) => this.keeper.hold(waiter, record, validFrom, via, leaseMs),
      releaseQuietly,
      assertOpen: () => {
        if (this.closed) throw new LockConfigurationError(MANAGER_CLOSED());
      },
    });
    const { keeper, queues } = this;
    this.releaser = new LockReleaser({
      options: this.options,
      store,
      history,
      events,
      keeper,
      queues,
      isClosed: () => this.closed,
      releaseQuietly,
    });
    const watcher = new KeyWatcher(store, history, this.options.leaseMs);
    this.campaignHost = {
      logger: this.options.logger,
      tryAcquire: ({ name, leaseMs, data }) => this.tryAcquire(name, { leaseDuration: leaseMs, data }),
      watch: (name) => watcher.watch(toStoredKey(name, this.options.keyPrefix)),
      releaseQuietly,
      ended: (campaign) => {
        const storedKey = toStoredKey(campaign.settings.name, this.options.keyPrefix);
        if (this.campaigns.get(storedKey)?.campaign === campaign) this.campaigns.delete(storedKey);
      },
      emit: (event) => events.emit(event),
    };
    this.semaphores = new Semaphores({
      options: this.options,
      store,
      events,
      newWaiter: (key, storedKey, options) => queues.newWaiter(key, storedKey, options),
      settle: (waiter, outcome) => queues.settle(waiter, outcome),
      releaseQuietly,
    });
    exposeInternals(this, {
      store,
      runHolding: (lock, fn) => this.runHolding(lock, fn),
      releaseQuietly,
      endScope: (lock) => this.endScope(lock),
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
      await this.store.prepare(this.options.createTable);
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
   */
  acquire(key: string, options: AcquireOptions = {}): Promise<Lock> {
    return this.start('acquire()', key, options);
  }

  /** Starts an acquisition for `scope` (the public call, named in errors). */
  private start(scope: string, key: string, options: AcquireOptions = {}): Promise<Lock> {
    let waiter: Waiter;
    try {
      checkAcquireOptions(options, scope);
      if (options.limit !== undefined) return this.startSemaphore(scope, key, options);
      const storedKey = toStoredKey(key, this.options.keyPrefix);
      if (this.semaphores.uses(storedKey)) throw new LockValidationError(KEY_IS_SEMAPHORE(key));
      const nested = this.context.get(storedKey, this.inScope);
      if (nested) return Promise.resolve(nestedLock(nested));
      waiter = this.queues.newWaiter(key, storedKey, options);
      waiter.trace = this.events.startAcquire(key, waiter.owner, waiter.deadline - waiter.startedAt);
    } catch (error) {
      return Promise.reject(error);
    }
    return new Promise<Lock>((resolve, reject) => {
      waiter.resolve = resolve;
      waiter.reject = reject;
      this.queues.enqueue(waiter, options.signal);
    });
  }

  /** Starts the acquisition of a semaphore slot (`options.limit` set). */
  private startSemaphore(scope: string, key: string, options: AcquireOptions): Promise<Lock> {
    const limit = checkSemaphoreOptions(options, scope);
    const storedKey = toStoredKey(key, this.options.keyPrefix);
    const bytes = Buffer.byteLength(semaphoreKeyOf(storedKey), 'utf8');
    if (bytes > MAX_KEY_BYTES) throw new LockKeyError(KEY_TOO_LONG(storedKey, bytes, MAX_KEY_BYTES), 'too-long');
    if (this.queues.slot(storedKey)) throw new LockValidationError(KEY_IS_MUTEX(key));
    const nested = this.context.get(semaphoreKeyOf(storedKey), this.inScope);
    if (nested) return Promise.resolve(nestedLock(nested));
    if (this.closed) throw new LockConfigurationError(MANAGER_CLOSED());
    return this.semaphores.acquire(key, storedKey, options, limit);
  }

  /**
   * One attempt: the lock, or `null` when another owner holds it. Settles within one request limit.
   * A holder whose record this process has seen unchanged for a whole lease is taken over.
   * @throws LockUnavailableError when DynamoDB failed or did not answer in time.
   * @throws LockValidationError for bad input, before any request.
   */
  async tryAcquire(key: string, options: Omit<AcquireOptions, 'wait'> = {}): Promise<Lock | null> {
    try {
      checkAcquireOptions(options, 'tryAcquire()', false);
      return await this.start('tryAcquire()', key, { ...options, wait: false });
    } catch (error) {
      if (error instanceof LockBusyError) return null;
      throw error;
    }
  }

  /**
   * Runs `fn` while holding the lock, and releases it afterwards, also when `fn` throws.
   * Inside `fn`, `current()` returns the lock and a nested acquisition of the same key is re-entrant.
   * A failed release is logged, not thrown: the work is done, and the lease runs out on its own.
   */
  async withLock<T>(key: string, fn: (lock: Lock) => T | Promise<T>, options?: AcquireOptions): Promise<T> {
    const lock = await this.start('withLock()', key, options);
    try {
      return await this.runHolding(lock, () => fn(lock));
    } finally {
      await this.releaseQuietly(lock);
    }
  }

  /**
   * Runs `fn` with `lock` visible to `current()` and to re-entrant acquisitions.
   * Used by `withLock()` and the `@WithLock` decorator.
   */
  private runHolding<T>(lock: Lock, fn: () => T): T {
    const slot = this.semaphores.lease(rootLock(lock));
    const run = () => this.context.run(slot?.storedKey ?? toStoredKey(lock.key, this.options.keyPrefix), lock, fn);
    const trace = (this.keeper.get(lock) ?? slot)?.trace;
    return trace ? trace.run(run) : run();
  }

  /** Releases a lock, logging (not throwing) a failure. */
  private async releaseQuietly(lock: Lock): Promise<void> {
    try {
      await lock.release();
    } catch (error) {
      this.options.logger.warn?.(RELEASE_FAILED(lock.key, error));
    }
  }

  /**
   * The lock held by the current async context: for `key`, or the innermost one.
   * Set inside `withLock()` callbacks and `@WithLock` methods.
   */
  current(key?: string): Lock | undefined {
    if (key === undefined) return this.context.get(undefined, this.inScope);
    const storedKey = this.options.keyPrefix + key;
    return this.context.get(storedKey, this.inScope) ?? this.context.get(semaphoreKeyOf(storedKey), this.inScope);
  }

  /**
   * Ends the re-entrant scope of `lock` before its release: work still running in its async
   * context (timers, listeners) no longer sees it through `current()` nor joins it re-entrantly,
   * and waits for the lock like any other caller. Used when a release is delayed (`holdAtLeast`).
   */
  private endScope(lock: Lock): void {
    this.scopesEnded.add(lock);
  }

  /** Whether a lock in the async context may still be used: held, and its scope not ended. */
  private readonly inScope = (lock: Lock): boolean => !this.scopesEnded.has(rootLock(lock)) && lock.isHeld;

  /**
   * Renews a lease known only by its key and `leaseId` (for example one acquired by another
   * process with `heartbeat: false`): one conditional write. Without `leaseDuration` the stored
   * lease duration is kept. A lease this manager holds is renewed through its `Lock`, so the
   * handle keeps counting the lease it really has.
   * @throws LockLostError when that lease no longer holds the lock.
   */
  async renewLease(key: string, leaseId: string, leaseDuration?: Duration): Promise<void> {
    const storedKey = toStoredKey(key, this.options.keyPrefix);
    if (typeof leaseId !== 'string' || leaseId.length === 0) throw new LockValidationError(LEASE_ID_INVALID(leaseId));
    const leaseMs = leaseDuration === undefined ? undefined : parseLease(leaseDuration);
    const own = this.heldLease(storedKey, leaseId);
    if (own) return this.keeper.extend(own.lock, leaseDuration);
    const result = await this.store.heartbeat({
      key: storedKey,
      holding: { token: leaseId },
      owner: this.options.ownerName,
      leaseMs,
      ttlLeaseMs: leaseMs ?? this.options.leaseMs,
    });
    if (result.ok) return;
    // Servers that do not return the blocking item (dynalite) need a read to tell "taken" from "gone".
    const current = result.current ?? (await this.store.read(storedKey).catch(() => undefined));
    throw new LockLostError(NOT_HELD_FOR_EXTEND(key), key, isHeld(current) ? 'taken' : 'gone');
  }

  /**
   * Releases a lease known only by its key and `leaseId`: one conditional write.
   * @returns `true` when that lease's release is done (by this call, or already by an earlier
   *   one: nothing is written again); `false` when it no longer held the lock (nothing changed).
   * @throws LockValidationError for an empty or missing `leaseId`, before any request.
   */
  async releaseLease(key: string, leaseId: string): Promise<boolean> {
    if (typeof leaseId !== 'string' || leaseId.length === 0) throw new LockValidationError(LEASE_ID_INVALID(leaseId));
    const storedKey = toStoredKey(key, this.options.keyPrefix);
    // A lease this manager holds is released through its `Lock` (timers stopped, waiters served).
    const own = this.heldLease(storedKey, leaseId);
    if (own) return this.releaser.release(own.lock);
    return this.store.release(storedKey, { token: leaseId }, this.options.leaseMs);
  }

  /** The lease this manager holds for a stored key with owner token `leaseId`, if any. */
  private heldLease(storedKey: string, leaseId: string): HeldLease | undefined {
    const holder = this.queues.slot(storedKey)?.holder;
    return holder?.token === leaseId && holder.state === 'held' ? holder : undefined;
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
    const settings = resolveLeadOptions(name, options, this.options);
    const storedKey = toStoredKey(name, this.options.keyPrefix);
    // A key this process uses as a semaphore cannot be led (a leader holds its mutex).
    if (this.semaphores.uses(storedKey)) throw new LockValidationError(KEY_IS_SEMAPHORE(name));
    let running = this.campaigns.get(storedKey);
    if (running) {
      const current = running.campaign.settings;
      const conflict =
        options?.leaseDuration !== undefined && settings.leaseMs !== current.leaseMs
          ? 'leaseDuration'
          : options?.watchInterval !== undefined && settings.watchMs !== current.watchMs
            ? 'watchInterval'
            : options?.data !== undefined && settings.dataJson !== current.dataJson
              ? 'data'
              : undefined;
      if (conflict) throw new LockValidationError(LEAD_CONFLICT(name, conflict));
    } else {
      const campaign = new LeaderCampaign(this.campaignHost, settings);
      running = { campaign, handle: createLeadership(campaign) };
      this.campaigns.set(storedKey, running);
    }
    if (options?.onElected) running.campaign.onElected(options.onElected);
    if (options?.onRevoked) running.campaign.onRevoked(options.onRevoked);
    return running.handle;
  }

  /**
   * Who holds a key now (one strongly consistent read), or `null` when it is free. For a
   * semaphore, `holders` lists every holder and `limit` its limit (a key this manager has not used
   * as a semaphore and that has no mutex item costs a second read).
   */
  async inspect(key: string): Promise<LockInfo | null> {
    const storedKey = toStoredKey(key, this.options.keyPrefix);
    if (this.semaphores.uses(storedKey)) return this.semaphores.inspect(key, storedKey);
    const record = await this.store.read(storedKey);
    if (record === undefined && this.store.semaphores) return this.semaphores.inspect(key, storedKey);
    return record && isHeld(record) ? this.toInfo(record) : null;
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
    const storedPrefix = this.options.keyPrefix + prefix;
    const found: LockInfo[] = [];
    for await (const record of this.store.scanHeld(storedPrefix)) found.push(this.toInfo(record));
    found.push(...(await this.semaphores.list(this.options.keyPrefix, prefix)));
    return found.sort((a, b) => a.key.localeCompare(b.key));
  }

  /** Number of locks this manager holds now. */
  get heldCount(): number {
    return this.keeper.size + this.semaphores.size;
  }

  /**
   * Stops the manager: rejects waiting callers, releases every held lock, stops the timer,
   * and destroys the DynamoDB client if the manager created it.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Campaigns stop watching; the leaders' locks are released below with every held lock.
    const campaigns = [...this.campaigns.values()].map(({ campaign }) => campaign);
    for (const campaign of campaigns) campaign.stop();
    await this.queues.close(new LockConfigurationError(MANAGER_CLOSED()));
    await this.semaphores.close(new LockConfigurationError(MANAGER_CLOSED()));
    const held = this.keeper.all();
    // Code still running under these locks must stop before another owner can take them.
    for (const lease of held) lease.controller.abort(new LockLostError(RELEASED_AT_SHUTDOWN(lease.lock.key), lease.lock.key, 'shutdown'));
    await Promise.allSettled(held.map((lease) => this.releaser.release(lease.lock)));
    // Releases started before (a caller's, a lock whose caller had given up) finish with the client.
    await this.releaser.idle();
    await Promise.allSettled(campaigns.map((campaign) => campaign.done));
    this.keeper.close();
    this.backend.destroy();
  }

  /**
   * Adds a listener of every lock event (as the `onEvent` option does).
   * @returns a function that removes the listener.
   */
  subscribe(listener: LockEventListener): () => void {
    return this.events.subscribe(listener);
  }

  private toInfo(record: LockRecord): LockInfo {
    return {
      key: record.key.slice(this.options.keyPrefix.length),
      // A waiter promoted by a release holds before it writes its name and lease (at its first heartbeat).
      owner: record.owner ?? '',
      fencingToken: record.fencingToken ?? 0,
      acquiredAt: new Date(record.acquiredAt ?? record.updatedAt ?? 0),
      updatedAt: new Date(record.updatedAt ?? record.acquiredAt ?? 0),
      leaseDuration: record.leaseMs ?? record.claimMs ?? CLAIM_LEASE_MS,
      data: record.data === undefined ? undefined : JSON.parse(record.data),
    };
  }
}

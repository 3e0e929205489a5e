import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  LockBusyError,
  LockConfigurationError,
  LockLostError,
  type LockLostReason,
  LockUnavailableError,
  LockValidationError,
} from '../errors/lock.errors';
import {
  HEARTBEAT_FAILED,
  LEASE_ID_INVALID,
  LOCK_BUSY,
  LOCK_UNAVAILABLE,
  LOCK_EXPIRED,
  LOCK_GONE,
  LOCK_TAKEN,
  EVENT_LISTENER_FAILED,
  TELEMETRY_UNAVAILABLE,
  MANAGER_CLOSED,
  NOT_HELD_FOR_EXTEND,
  RELEASE_FAILED,
  RELEASE_NOT_HELD,
  RELEASED_AT_SHUTDOWN,
  LOCK_RELEASED,
  type ExpiryCause,
} from '../errors/lock.messages';
import type { AcquireOptions } from '../interfaces/acquire-options.interface';
import type { DynamoLockOptions } from '../interfaces/dynamo-lock-options.interface';
import type { LockInfo } from '../interfaces/lock-info.interface';
import type { AcquiredVia, LockEvent, LockEventListener } from '../interfaces/lock-event.interface';
import { LockTelemetry, type LockTrace } from '../observability/lock.telemetry';
import type { LockRecord } from '../store/lock-record';
import { createDynamoClient } from '../store/dynamo-endpoint';
import { LockStore } from '../store/lock.store';
import type { LockStorePort } from '../store/lock-store.interface';
import { jitter, monotonicNow, sleep } from '../utils/clock';
import { type Duration, parseLease } from '../utils/duration';
import { serializeData, toStoredKey } from '../utils/lock-key.validation';
import { randomToken } from '../utils/random-token';
import { HeartbeatScheduler } from './heartbeat.scheduler';
import { KeyHistory } from './key-history';
import { createLock, Lock, type LockHost, nestedLock } from './lock';
import { exposeInternals } from './lock.internals';
import { LockContext } from './lock.context';
import {
  checkAcquireOptions,
  heartbeatIntervalFor,
  resolveLockOptions,
  resolveWait,
  type ResolvedLockOptions,
} from './lock-options.resolver';
import { type HeldLease, type KeySlot, type Waiter, writeOf } from './lock-state';
import { type AcquisitionHost, RemoteAcquisition } from './remote-acquisition';
import { transientKind } from '../store/transient-error';

/** Pause before retrying a heartbeat that failed with a transient error, at least. */
const RETRY_MIN_MS = 50;
/** Past the request limit, before a wait that let its last request finish ends. */
const LATE_ANSWER_SLACK_MS = 20;

/**
 * The lock engine, independent of Nest: acquisition and waiting, heartbeats, release, and
 * the per-context view. `LockService` is this class as a Nest provider; the CLI uses it directly.
 *
 * Callers in one process that want one key form a FIFO queue: only the head talks to DynamoDB,
 * and a release hands the lock straight to the next local caller in one conditional write.
 */
export class LockManager {
  /** The options in force, defaults applied. */
  readonly options: ResolvedLockOptions;
  /** The client passed as `client`, or the one this manager created (and destroys at `close()`). */
  private readonly givenClient: DynamoDBClient | undefined;
  private createdClient: DynamoDBClient | undefined;
  private readonly clientConfig: DynamoLockOptions['clientConfig'];
  private readonly store: LockStorePort;
  /** What this process learned about contended keys. */
  private readonly history = new KeyHistory();
  /** The callbacks of `Lock` handles. */
  private readonly lockHost: LockHost = {
    release: (lock) => this.release(lock),
    extend: (lock, leaseDuration) => this.extend(lock, leaseDuration),
    checkHeld: (lock) => this.checkHeld(lock),
  };
  /** What remote acquisitions use of this manager. */
  private readonly acquisitionHost: AcquisitionHost;
  private readonly context = new LockContext();
  private readonly slots = new Map<string, KeySlot>();
  private readonly leases = new Map<Lock, HeldLease>();
  /** Locks whose re-entrant scope ended before their release (see {@link endScope}). */
  private readonly scopesEnded = new WeakSet<Lock>();
  private readonly scheduler = new HeartbeatScheduler<HeldLease>(
    (lease) => void this.heartbeat(lease),
    (lease) => this.lose(lease, 'expired'),
  );
  /** Acquisitions talking to DynamoDB now; shutdown waits for them. */
  private readonly attempts = new Set<Promise<void>>();
  private readonly listeners = new Set<LockEventListener>();
  private telemetry: LockTelemetry | undefined;
  private telemetryLoaded: Promise<void> = Promise.resolve();
  private closed = false;

  /** @throws LockConfigurationError when an option is invalid. */
  constructor(options: DynamoLockOptions = {}) {
    this.options = resolveLockOptions(options);
    this.givenClient = options.client;
    this.clientConfig = options.clientConfig;
    if (this.options.onEvent) this.listeners.add(this.options.onEvent);
    if (this.options.telemetry) this.loadTelemetry();
    this.store =
      options.store ??
      new LockStore(this.client, {
        tableName: this.options.tableName,
        ttlDays: this.options.ttlDays,
        logger: this.options.logger,
        requestTimeoutMs: this.options.requestTimeoutMs,
      });
    const { store, history } = this;
    this.acquisitionHost = {
      store,
      history,
      options: this.options,
      hold: (waiter, record, validFrom, via) => this.hold(waiter, record, validFrom, via),
      emit: (event, trace) => this.emit(event, trace),
      noteWaiting: (waiter) => this.noteWaiting(waiter),
      busyError: (waiter) => this.busyError(waiter),
      deadlineError: (waiter) => this.deadlineError(waiter),
    };
    exposeInternals(this, {
      store,
      runHolding: (lock, fn) => this.runHolding(lock, fn),
      releaseQuietly: (lock) => this.releaseQuietly(lock),
      endScope: (lock) => this.endScope(lock),
    });
  }

  /**
   * The DynamoDB client in use: the `client` option, or one created from `clientConfig` on first
   * use (with a custom `store`, such as `forTesting()`'s memory store, none is created unless asked for).
   */
  get client(): DynamoDBClient {
    return this.givenClient ?? (this.createdClient ??= createDynamoClient(this.clientConfig));
  }

  /**
   * Checks that the table exists with the right schema, creating it when `createTable` is set.
   * @throws LockConfigurationError when the table is missing or has another key schema.
   */
  async init(): Promise<void> {
    await this.telemetryLoaded;
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
   * @throws LockValidationError for a bad key, duration or data, before any request.
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
      const storedKey = toStoredKey(key, this.options.keyPrefix);
      const nested = this.context.get(storedKey, this.inScope);
      if (nested) return Promise.resolve(nestedLock(nested));
      waiter = this.newWaiter(key, storedKey, options);
      waiter.trace = this.telemetry?.startAcquire(key, waiter.owner, waiter.deadline - waiter.startedAt);
    } catch (error) {
      return Promise.reject(error);
    }
    return new Promise<Lock>((resolve, reject) => {
      waiter.resolve = resolve;
      waiter.reject = reject;
      this.enqueue(waiter, options.signal);
    });
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
    const run = () => this.context.run(toStoredKey(lock.key, this.options.keyPrefix), lock, fn);
    const trace = this.leases.get(lock)?.trace;
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
    return this.context.get(key === undefined ? undefined : this.options.keyPrefix + key, this.inScope);
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
  private readonly inScope = (lock: Lock): boolean => !this.scopesEnded.has(lock) && lock.isHeld;

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
    if (own) return this.extend(own.lock, leaseDuration);
    const result = await this.store.heartbeat(storedKey, leaseId, leaseMs, leaseMs ?? this.options.leaseMs);
    if (result.ok) return;
    // Servers that do not return the blocking item (dynalite) need a read to tell "taken" from "gone".
    const current = result.current ?? (await this.store.read(storedKey).catch(() => undefined));
    throw new LockLostError(NOT_HELD_FOR_EXTEND(key), key, current?.token ? 'taken' : 'gone');
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
    if (own) return this.release(own.lock);
    return this.store.release(storedKey, leaseId, this.options.leaseMs);
  }

  /** The lease this manager holds for a stored key with owner token `leaseId`, if any. */
  private heldLease(storedKey: string, leaseId: string): HeldLease | undefined {
    const holder = this.slots.get(storedKey)?.holder;
    return holder?.token === leaseId && holder.state === 'held' ? holder : undefined;
  }

  /** Who holds a key now (one strongly consistent read), or `null` when it is free. */
  async inspect(key: string): Promise<LockInfo | null> {
    const storedKey = toStoredKey(key, this.options.keyPrefix);
    const record = await this.store.read(storedKey);
    return record?.token ? this.toInfo(record) : null;
  }

  /** Every held lock whose key starts with `prefix` (a Scan: for tools and diagnostics). */
  async list(prefix = ''): Promise<LockInfo[]> {
    const found: LockInfo[] = [];
    for await (const record of this.store.scanHeld(this.options.keyPrefix + prefix)) found.push(this.toInfo(record));
    return found.sort((a, b) => a.key.localeCompare(b.key));
  }

  /** Number of locks this manager holds now. */
  get heldCount(): number {
    return this.leases.size;
  }

  /**
   * Stops the manager: rejects waiting callers, releases every held lock, stops the timer,
   * and destroys the DynamoDB client if the manager created it.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const slot of this.slots.values()) {
      for (const waiter of slot.waiters) this.settle(waiter, new LockConfigurationError(MANAGER_CLOSED()));
    }
    await Promise.allSettled([...this.attempts]);
    const held = [...this.leases.values()];
    // Code still running under these locks must stop before another owner can take them.
    for (const lease of held) lease.controller.abort(new LockLostError(RELEASED_AT_SHUTDOWN(lease.lock.key), lease.lock.key, 'shutdown'));
    await Promise.allSettled(held.map((lease) => this.release(lease.lock)));
    this.scheduler.close();
    this.createdClient?.destroy();
  }

  // ---- LockHost: called by Lock handles ----

  /** Whether a lock is still held; loses it first when its lease ran out on the local clock. */
  private checkHeld(lock: Lock): boolean {
    const lease = this.leases.get(lock);
    if (!lease || lease.state !== 'held') return false;
    if (monotonicNow() >= lease.validUntil) {
      this.lose(lease, 'expired');
      return false;
    }
    return true;
  }

  /** Releases a held lock: to the next local waiter, a waiter queued in the item, or DynamoDB. */
  private async release(lock: Lock): Promise<boolean> {
    const lease = this.leases.get(lock);
    if (!lease || lease.state !== 'held') return false;
    lease.state = 'released';
    this.scheduler.delete(lease);
    this.leases.delete(lock);
    this.history.forgetObservation(lease.storedKey);
    // Work still running under this lock (detached timers, listeners, nested handles) must stop.
    lease.controller.abort(new LockLostError(LOCK_RELEASED(lock.key), lock.key, 'released'));
    const slot = this.slots.get(lease.storedKey);
    if (slot?.holder === lease) slot.holder = undefined;
    const heldMs = monotonicNow() - lease.acquiredAt;
    this.history.recordHold(lease.storedKey, heldMs);
    // Waiters of other processes queued in the item come first; then the local queue.
    // Never while a remote attempt runs for the slot: the waiter would be served twice.
    const handing =
      slot !== undefined && !this.closed && !slot.polling && lease.queuedElsewhere === 0 && this.nextWaiter(slot) !== undefined;
    // Claim the slot for the hand-over now, so no remote attempt starts for the next waiter meanwhile.
    if (handing) slot.polling = true;
    const base = { key: lock.key, owner: lock.owner, fencingToken: lock.fencingToken, heldMs: Math.round(heldMs) };
    const released = (handedOver: boolean) => this.emitFor(lease, { type: 'released', ...base, handedOver });
    const failed = (outcome: 'not-held' | 'error', error?: unknown) =>
      this.emitFor(lease, { type: 'release-failed', ...base, outcome, error });
    return this.serial(lease, async () => {
      const next = handing ? this.nextWaiter(slot) : undefined;
      let done: boolean;
      try {
        if (next) done = await this.handOver(lease, next, slot!, () => released(true));
        else {
          if (handing) slot.polling = false;
          done = await this.releaseRemote(lease, heldMs);
          if (done) released(lease.queuedElsewhere > 0);
        }
      } catch (error) {
        // The release may not have happened: if this process finds the token still holding the
        // lock later, it takes it over at once instead of waiting out the lease.
        this.history.addOrphan(lease.storedKey, lease.token);
        failed('error', error);
        throw error;
      }
      if (!done) {
        this.options.logger.warn?.(RELEASE_NOT_HELD(lease.lock.key));
        failed('not-held');
      }
      return done;
    }).finally(() => {
      // The slot in the map now: the one seen at the start may have been dropped meanwhile.
      const current = this.slots.get(lease.storedKey);
      if (current) this.pump(current);
    });
  }

  /** Renews a held lock now, optionally with a new lease. */
  private async extend(lock: Lock, leaseDuration?: Duration): Promise<void> {
    const lease = this.leases.get(lock);
    const leaseMs = leaseDuration === undefined ? lease?.targetLeaseMs : parseLease(leaseDuration);
    // Why it is not held is the reason its signal carries (expired, taken, gone, shutdown...); the
    // `Lock` handle rethrows it too once the lease is forgotten here.
    const notHeld = (): unknown =>
      lease?.controller.signal.aborted
        ? lease.controller.signal.reason
        : new LockLostError(NOT_HELD_FOR_EXTEND(lock.key), lock.key, 'gone');
    if (!lease || !this.checkHeld(lock) || leaseMs === undefined) throw notHeld();
    await this.serial(lease, () => this.renew(lease, leaseMs, true));
    if (lease.state !== 'held') throw notHeld();
    this.emitFor(lease, { type: 'extended', key: lock.key, owner: lock.owner, fencingToken: lock.fencingToken, leaseMs });
  }

  /**
   * Adds a listener of every lock event (as the `onEvent` option does).
   * @returns a function that removes the listener.
   */
  subscribe(listener: LockEventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Passes an event to the trace of its acquisition or hold and to the listeners, never letting one break the lock. */
  private emit(event: LockEvent, trace?: LockTrace): void {
    const failed = (error: unknown) => {
      this.options.logger.warn?.(EVENT_LISTENER_FAILED(event.type, error));
    };
    for (const listener of trace ? [trace.onEvent.bind(trace), ...this.listeners] : this.listeners) {
      try {
        const result: unknown = listener(event);
        // An async listener: its rejection is logged too, never left unhandled.
        if (typeof (result as PromiseLike<unknown> | undefined)?.then === 'function') Promise.resolve(result).catch(failed);
      } catch (error) {
        failed(error);
      }
    }
  }

  /** Emits an event of a held lease, unless no caller ever saw that lease (see `hold()`). */
  private emitFor(lease: HeldLease, event: LockEvent): void {
    if (!lease.quiet) this.emit(event, lease.trace);
  }

  /** Emits the `waiting` event of a waiter, once: the key is busy and the call waits. */
  private noteWaiting(waiter: Waiter): void {
    if (waiter.waiting) return;
    waiter.waiting = true;
    this.emit({ type: 'waiting', key: waiter.key, owner: waiter.owner, holder: waiter.holder }, waiter.trace);
  }

  /** Uses OpenTelemetry when `@opentelemetry/api` is installed: at once, or (ES module) by `init()`. */
  private loadTelemetry(): void {
    const use = (telemetry: LockTelemetry | undefined) => {
      this.telemetry = telemetry;
      if (telemetry) this.listeners.add((event) => telemetry.record(event));
    };
    const failed = (error: unknown) => {
      this.options.logger.warn?.(TELEMETRY_UNAVAILABLE(error));
    };
    try {
      const loaded = LockTelemetry.load();
      if (loaded instanceof Promise) this.telemetryLoaded = loaded.then(use, failed);
      else use(loaded);
    } catch (error) {
      failed(error);
    }
  }

  // ---- Waiting ----

  private newWaiter(key: string, storedKey: string, options: AcquireOptions): Waiter {
    const leaseMs = options.leaseDuration === undefined ? this.options.leaseMs : parseLease(options.leaseDuration);
    const waitMs = options.wait === undefined ? this.options.waitMs : resolveWait(options.wait);
    const data = serializeData(key, options.data);
    if (this.closed) throw new LockConfigurationError(MANAGER_CLOSED());
    options.signal?.throwIfAborted();
    const startedAt = monotonicNow();
    return {
      key,
      storedKey,
      token: randomToken(),
      owner: this.options.ownerName,
      leaseMs,
      data,
      heartbeat: options.heartbeat ?? true,
      startedAt,
      deadline: startedAt + waitMs,
      cancel: new AbortController(),
      settled: false,
      resolve: () => undefined,
      reject: () => undefined,
    };
  }

  private enqueue(waiter: Waiter, signal: AbortSignal | undefined): void {
    const slot = this.slotFor(waiter.storedKey);
    // Another caller of this process holds the key, or is ahead in the queue for it.
    const behind = slot.holder !== undefined || this.nextWaiter(slot) !== undefined;
    if (behind && waiter.deadline <= waiter.startedAt) return this.settle(waiter, this.busyError(waiter));
    slot.waiters.push(waiter);
    const onAbort = () => this.settle(waiter, signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    // At the deadline (at once for a single attempt), a waiter whose own request may be in flight
    // and that never saw another holder gets one request limit more: a slow answer must not make a
    // free key look busy. The slack lets that request's own time-out, which has the cause, come first.
    const atDeadline = () => {
      if (!this.mayAnswerLate(waiter)) return this.settle(waiter, this.deadlineError(waiter));
      timer = setTimeout(() => this.settle(waiter, this.deadlineError(waiter)), this.options.requestTimeoutMs + LATE_ANSWER_SLACK_MS);
    };
    let timer = Number.isFinite(waiter.deadline) ? setTimeout(atDeadline, waiter.deadline - waiter.startedAt) : undefined;
    waiter.cancel.signal.addEventListener('abort', () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    });
    if (behind) {
      if (slot.holder)
        waiter.holder = { owner: this.options.ownerName, fencingToken: slot.holder.lock.fencingToken, leaseDuration: slot.holder.leaseMs };
      this.noteWaiting(waiter);
    }
    this.pump(slot);
  }

  /** Settles a waiter once, with a lock or an error, and takes it out of the queue. */
  private settle(waiter: Waiter, outcome: unknown): void {
    if (waiter.settled) return;
    waiter.settled = true;
    const slot = this.slots.get(waiter.storedKey);
    if (slot) slot.waiters = slot.waiters.filter((w) => w !== waiter);
    if (outcome instanceof Lock) {
      waiter.cancel.abort();
      waiter.resolve(outcome);
    } else {
      if (outcome instanceof LockBusyError) {
        this.emit({ type: 'busy', key: waiter.key, owner: waiter.owner, holder: outcome.holder, waitedMs: outcome.waitedMs }, waiter.trace);
      } else waiter.trace?.fail(outcome);
      waiter.cancel.abort(outcome);
      waiter.reject(outcome);
    }
  }

  /** Starts the head waiter's acquisition when the key is neither held here nor being polled. */
  private pump(slot: KeySlot): void {
    if (slot.holder || slot.polling) return;
    const waiter = this.nextWaiter(slot);
    if (!waiter) {
      // Only the slot in the map, never a newer one for the same key.
      if (slot.waiters.length === 0 && this.slots.get(slot.storedKey) === slot) this.slots.delete(slot.storedKey);
      return;
    }
    slot.polling = true;
    const attempt = new RemoteAcquisition(this.acquisitionHost, waiter).run().then(
      (lease) => {
        slot.polling = false;
        slot.holder = lease;
        if (waiter.settled) void this.releaseQuietly(lease.lock);
        else this.settle(waiter, lease.lock);
        this.pump(slot);
      },
      (error) => {
        slot.polling = false;
        this.settle(waiter, error);
        this.pump(slot);
      },
    );
    this.attempts.add(attempt);
    void attempt.finally(() => this.attempts.delete(attempt));
  }

  /** Hands a released lock straight to the next local waiter: one write that swaps the owner token. */
  private async handOver(from: HeldLease, waiter: Waiter, slot: KeySlot, released: () => void): Promise<boolean> {
    const sentAt = monotonicNow();
    try {
      const result = await this.store.acquire({ ...writeOf(waiter), condition: { kind: 'handover', fromToken: from.token } });
      if (!result.ok) return false;
      released();
      const lease = this.hold(waiter, result.record, sentAt, 'handover');
      slot.holder = lease;
      if (waiter.settled) void this.releaseQuietly(lease.lock);
      else this.settle(waiter, lease.lock);
      return true;
    } catch (error) {
      // Unknown outcome: the waiter's own token may hold the item now, since this write was sent;
      // a lease later found there counts from then, not from a later acquisition's start.
      waiter.uncertainSince = Math.min(waiter.uncertainSince ?? sentAt, sentAt);
      void this.store.release(from.storedKey, from.token, from.leaseMs).catch(() => undefined);
      throw error;
    } finally {
      slot.polling = false;
    }
  }

  /**
   * Gives a lock back to DynamoDB: to the head of the item's queue when waiters of other
   * processes are queued (one write), else a plain release (one write).
   */
  private async releaseRemote(lease: HeldLease, heldMs: number): Promise<boolean> {
    if (lease.queuedElsewhere > 0) {
      const promoted = await this.store.promote(lease.storedKey, lease.token, lease.leaseMs, heldMs);
      if (promoted.ok) {
        this.history.recordBusy(lease.storedKey, monotonicNow());
        return true;
      }
      const current = promoted.current ?? (await this.store.read(lease.storedKey));
      if (current?.released === lease.token) return true; // our promotion, retried after a lost response
      if (current?.token !== lease.token) return false;
    }
    return this.store.release(lease.storedKey, lease.token, lease.leaseMs, heldMs);
  }

  /**
   * At the deadline: busy when an answer showed another holder, or a caller of this process holds
   * the key or is ahead of `waiter` for it; otherwise unavailable, with the last DynamoDB error.
   */
  private deadlineError(waiter: Waiter): LockBusyError | LockUnavailableError {
    const slot = this.slots.get(waiter.storedKey);
    const ahead = slot !== undefined && !waiter.settled && this.nextWaiter(slot) !== waiter ? this.nextWaiter(slot) : undefined;
    if (waiter.holder !== undefined || slot?.holder !== undefined || ahead !== undefined) {
      waiter.holder ??= ahead?.holder;
      return this.busyError(waiter);
    }
    const waited = Math.round(monotonicNow() - waiter.startedAt);
    const cause = waiter.lastError;
    return new LockUnavailableError(
      LOCK_UNAVAILABLE(waiter.key, waiter.deadline <= waiter.startedAt ? undefined : waited, cause),
      waiter.key,
      waited,
      this.options.requestTimeoutMs,
      cause === undefined ? undefined : { cause },
    );
  }

  /** Whether `waiter` is the one talking to DynamoDB for its key and has seen no holder yet. */
  private mayAnswerLate(waiter: Waiter): boolean {
    const slot = this.slots.get(waiter.storedKey);
    return slot !== undefined && slot.polling && !slot.holder && waiter.holder === undefined && this.nextWaiter(slot) === waiter;
  }

  /** The busy error of a waiter: the holder it saw (or the local one), and when it may release. */
  private busyError(waiter: Waiter): LockBusyError {
    const local = this.slots.get(waiter.storedKey)?.holder;
    if (!waiter.holder && local) {
      waiter.holder = { owner: this.options.ownerName, fencingToken: local.lock.fencingToken, leaseDuration: local.leaseMs };
      const usual = this.history.holdEstimate(waiter.storedKey);
      waiter.expectedReleaseAt = usual === undefined ? undefined : local.acquiredAt + usual;
    }
    const now = monotonicNow();
    const waited = Math.round(now - waiter.startedAt);
    const releaseInMs = waiter.expectedReleaseAt === undefined ? undefined : Math.max(0, Math.round(waiter.expectedReleaseAt - now));
    return new LockBusyError(
      LOCK_BUSY(waiter.key, waiter.holder?.owner, waiter.holder?.fencingToken, waiter.deadline <= waiter.startedAt ? undefined : waited),
      waiter.key,
      waiter.holder,
      waited,
      releaseInMs,
    );
  }

  // ---- Holding ----

  /** Starts holding a lock whose lease counts from monotonic time `sentAt`. */
  private hold(waiter: Waiter, record: LockRecord, sentAt: number, via: AcquiredVia): HeldLease {
    const controller = new AbortController();
    const lock = createLock({
      key: waiter.key,
      owner: this.options.ownerName,
      fencingToken: record.fencingToken ?? 0,
      acquiredAt: new Date(),
      leaseId: waiter.token,
      controller,
      host: this.lockHost,
    });
    // A promoted waiter holds the item's (claim) lease until its first heartbeat renews it to its own.
    const leaseMs = Math.min(record.leaseMs ?? waiter.leaseMs, waiter.leaseMs);
    const heartbeatMs = waiter.heartbeat ? heartbeatIntervalFor(this.options, leaseMs) : Number.POSITIVE_INFINITY;
    const lease: HeldLease = {
      storedKey: waiter.storedKey,
      token: waiter.token,
      leaseMs,
      targetLeaseMs: waiter.leaseMs,
      heartbeatMs,
      validUntil: sentAt + leaseMs - safetyMargin(leaseMs),
      nextBeatAt: sentAt + heartbeatMs,
      busy: false,
      state: 'held',
      lock,
      controller,
      writes: Promise.resolve(),
      acquiredAt: monotonicNow(),
      queuedElsewhere: record.queue.length,
    };
    this.leases.set(lock, lease);
    this.scheduler.add(lease);
    // Held by a live lease: no longer an orphan to take back, nor a version to watch.
    this.history.dropOrphan(waiter.storedKey, waiter.token);
    this.history.forgetObservation(waiter.storedKey);
    // A caller that gave up while the write was in flight never sees this lock, which is released
    // at once: no event tells of it.
    lease.quiet = waiter.settled;
    if (lease.quiet) return lease;
    // A promotion leaves the data out and starts on the claim lease: write them now where no
    // heartbeat would (the data at all; the lease of a holder that renews by hand).
    const missingData = waiter.data !== undefined && record.data !== waiter.data;
    // Not awaited: the caller has the lock already (a slow write must not make it miss its deadline).
    if (missingData || (!waiter.heartbeat && leaseMs < waiter.leaseMs)) void this.completePromotion(lease, waiter.leaseMs, waiter.data);
    const waitedMs = Math.round(monotonicNow() - waiter.startedAt);
    if (via === 'takeover') {
      this.emit(
        { type: 'takeover', key: waiter.key, owner: waiter.owner, fencingToken: lock.fencingToken, previousHolder: waiter.holder },
        waiter.trace,
      );
    }
    this.emit({ type: 'acquired', key: waiter.key, owner: waiter.owner, fencingToken: lock.fencingToken, waitedMs, via }, waiter.trace);
    lease.trace = waiter.trace?.startHold(waiter.key, waiter.owner, lock.fencingToken);
    return lease;
  }

  /**
   * Writes a promoted lease's own lease and data, retrying transient failures while it is held
   * (until then the lease is the claim lease, and the `Lock` counts that one).
   */
  private async completePromotion(lease: HeldLease, leaseMs: number, data: string | undefined): Promise<void> {
    for (let pause = RETRY_MIN_MS; lease.state === 'held'; pause = Math.min(pause * 2, 2_000)) {
      await this.serial(lease, () => this.renew(lease, leaseMs, false, data)).catch(() => undefined);
      if (lease.lastError === undefined) return;
      await sleep(jitter(pause), lease.controller.signal).catch(() => undefined);
    }
  }

  /** Runs a write of `lease` after its earlier writes, marking it busy for the scheduler. */
  private serial<T>(lease: HeldLease, write: () => Promise<T>): Promise<T> {
    const run = lease.writes.then(async () => {
      lease.busy = true;
      try {
        return await write();
      } finally {
        lease.busy = false;
        this.scheduler.touch(lease);
      }
    });
    lease.writes = run.catch(() => undefined);
    return run;
  }

  private async heartbeat(lease: HeldLease): Promise<void> {
    if (lease.busy || lease.state !== 'held') return;
    await this.serial(lease, () => this.renew(lease, lease.targetLeaseMs, false)).catch(() => undefined);
  }

  /**
   * One heartbeat write. Validity counts from when the write was sent, not answered.
   * A transient failure is retried until the lease runs out; `extend` rethrows it.
   */
  private async renew(lease: HeldLease, leaseMs: number, rethrow: boolean, data?: string): Promise<void> {
    if (lease.state !== 'held') return;
    const sentAt = monotonicNow();
    try {
      const result = await this.store.heartbeat(lease.storedKey, lease.token, leaseMs, leaseMs, data);
      if (lease.state !== 'held') return;
      if (!result.ok) {
        // Servers that do not return the blocking item (dynalite) need a read to tell "taken" from "gone".
        const current = result.current ?? (await this.store.read(lease.storedKey).catch(() => undefined));
        this.lose(lease, current?.token ? 'taken' : 'gone', undefined, current?.owner);
        return;
      }
      lease.leaseMs = leaseMs;
      lease.targetLeaseMs = leaseMs;
      lease.queuedElsewhere = result.record.queue.length;
      if (Number.isFinite(lease.heartbeatMs)) lease.heartbeatMs = heartbeatIntervalFor(this.options, leaseMs);
      lease.validUntil = sentAt + leaseMs - safetyMargin(leaseMs);
      lease.nextBeatAt = sentAt + lease.heartbeatMs;
      lease.lastError = undefined;
      if (monotonicNow() >= lease.validUntil)
        this.lose(lease, 'expired', { kind: 'late-answer', answeredAfterMs: Math.round(monotonicNow() - sentAt) });
    } catch (error) {
      if (lease.state !== 'held') return;
      lease.lastError = error;
      const left = Math.round(lease.validUntil - monotonicNow());
      this.options.logger.warn?.(HEARTBEAT_FAILED(lease.lock.key, error, left));
      if (Number.isFinite(lease.heartbeatMs)) {
        lease.nextBeatAt = monotonicNow() + Math.min(jitter(Math.max(RETRY_MIN_MS, lease.heartbeatMs / 4)), Math.max(0, left / 2));
      }
      const delayMs = Math.max(0, Math.round(lease.nextBeatAt - monotonicNow()));
      this.emitFor(lease, { type: 'retry', key: lease.lock.key, owner: lease.lock.owner, operation: 'heartbeat', error, delayMs });
      if (rethrow) throw error;
    }
  }

  /** Marks a lease lost and aborts its signal with a {@link LockLostError}. */
  private lose(lease: HeldLease, reason: Exclude<LockLostReason, 'released' | 'shutdown'>, expiry?: ExpiryCause, newHolder?: string): void {
    if (lease.state !== 'held') return;
    lease.state = 'lost';
    this.scheduler.delete(lease);
    this.leases.delete(lease.lock);
    // Ran out locally: the item may still carry the token, which no caller holds now.
    if (reason === 'expired') this.history.addOrphan(lease.storedKey, lease.token);
    const slot = this.slots.get(lease.storedKey);
    const key = lease.lock.key;
    const cause = reason === 'expired' ? lease.lastError : undefined;
    const message = lossMessage(key, reason, newHolder, () =>
      LOCK_EXPIRED(key, Math.round(monotonicNow() - lease.validUntil), expiry ?? expiryCause(lease)),
    );
    const error = new LockLostError(message, key, reason, cause === undefined ? undefined : { cause });
    this.options.logger.warn?.(message);
    this.emitFor(lease, {
      type: 'lost',
      key,
      owner: this.options.ownerName,
      fencingToken: lease.lock.fencingToken,
      heldMs: Math.round(monotonicNow() - lease.acquiredAt),
      reason,
    });
    lease.controller.abort(error);
    if (slot?.holder === lease) {
      slot.holder = undefined;
      this.pump(slot);
    }
  }

  // ---- Helpers ----

  private slotFor(storedKey: string): KeySlot {
    let slot = this.slots.get(storedKey);
    if (!slot) {
      slot = { storedKey, waiters: [], polling: false };
      this.slots.set(storedKey, slot);
    }
    return slot;
  }

  private nextWaiter(slot: KeySlot): Waiter | undefined {
    return slot.waiters.find((w) => !w.settled);
  }

  private toInfo(record: LockRecord): LockInfo {
    return {
      key: record.key.slice(this.options.keyPrefix.length),
      owner: record.owner ?? '',
      fencingToken: record.fencingToken ?? 0,
      acquiredAt: new Date(record.acquiredAt ?? 0),
      updatedAt: new Date(record.updatedAt ?? record.acquiredAt ?? 0),
      leaseDuration: record.leaseMs ?? 0,
      data: record.data === undefined ? undefined : JSON.parse(record.data),
    };
  }
}

/** The message of a loss; `expired` builds the expiry message only when needed. */
function lossMessage(key: string, reason: 'expired' | 'taken' | 'gone', newHolder: string | undefined, expired: () => string): string {
  if (reason === 'expired') return expired();
  return reason === 'taken' ? LOCK_TAKEN(key, newHolder) : LOCK_GONE(key);
}

/** Why a lease ran out, from what its holder knows: no heartbeats, failing ones, one unanswered, or none ran. */
function expiryCause(lease: HeldLease): ExpiryCause {
  if (!Number.isFinite(lease.heartbeatMs)) return { kind: 'no-heartbeat' };
  if (lease.lastError !== undefined) return { kind: transientKind(lease.lastError), error: lease.lastError };
  return lease.busy ? { kind: 'unanswered' } : { kind: 'paused' };
}

/**
 * How much earlier than the lease a holder stops trusting its lock: covers clock-rate
 * differences between hosts and the time between a check and the protected action.
 */
function safetyMargin(leaseMs: number): number {
  return Math.min(1_000, Math.ceil(leaseMs * 0.1));
}

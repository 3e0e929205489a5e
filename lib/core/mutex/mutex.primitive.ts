import { LockBusyError, LockLostError, LockValidationError } from '../../errors/lock.errors';
import { KEY_IS_MUTEX, LEASE_ID_INVALID, NOT_HELD_FOR_EXTEND, RELEASED_AT_SHUTDOWN } from '../../errors/lock.messages';
import type { AcquireOptions } from '../../interfaces/acquire-options.interface';
import type { JobFire } from '../../interfaces/job-fire.interface';
import type { LockInfo } from '../../interfaces/lock-info.interface';
import { isHeld } from '../../store/mutex/mutex.record';
import type { MutexStorePort } from '../../store/mutex/mutex-store.port';
import { type Duration, parseLease } from '../../utils/duration';
import { toStoredKey } from '../../utils/lock-key.validation';
import { FencedWriter } from '../engine/fenced-writer';
import { jobFireOf, lockInfoOf } from '../engine/lock-info.mapper';
import { KeyHistory } from '../engine/key-history';
import { LeaseKeeper } from '../engine/lease.keeper';
import type { Lock, LockHost } from '../engine/lock';
import type { HeldLease, Waiter } from '../engine/lock-state';
import { createWaiter } from '../engine/waiter.factory';
import type { LockPrimitive, PrimitiveContext, PrimitiveKey } from '../engine/primitive.interface';
import { acquireAllAtOnce, type SetKey } from './all-at-once';
import { KeyQueues } from './key.queues';
import { type KeyView, KeyWatcher } from './key.watcher';
import { LockReleaser } from './lock.releaser';
import { RunWatch } from './run.watch';

/**
 * The mutex (`acquire(key)`): one holder per key, callers of one process in a local FIFO queue
 * whose head alone talks to DynamoDB, a line of tickets across processes, hand-over to the next
 * local caller in one write. Its collaborators each do one job: `KeyQueues` (the local queues and
 * remote acquisitions), `LeaseKeeper` (held leases and heartbeats), `LockReleaser` (release and
 * hand-over), `KeyWatcher` (reads of a key held elsewhere, for leadership).
 */
export class MutexPrimitive implements LockPrimitive {
  /** What this process learned about contended keys. */
  private readonly history = new KeyHistory();
  private readonly store: MutexStorePort;
  private readonly keeper: LeaseKeeper;
  private readonly queues: KeyQueues;
  private readonly releaser: LockReleaser;
  private readonly watcher: KeyWatcher;
  private readonly runs: RunWatch;
  /** `lock.transact()` and `lock.fencedWrite()`. */
  private readonly fenced: FencedWriter;
  private closed = false;

  constructor(private readonly context: PrimitiveContext) {
    const { options, events } = context;
    const releaseQuietly = (lock: Lock) => context.releaseQuietly(lock);
    const store = (this.store = context.stores.mutex);
    const { history } = this;
    const lockHost: LockHost = {
      release: (lock) => this.releaser.release(lock),
      extend: (lock, leaseDuration) => this.keeper.extend(lock, leaseDuration),
      checkHeld: (lock) => this.keeper.checkHeld(lock),
      transact: (lock, items, callOptions) => this.fenced.transact(lock, items, callOptions),
      fencedWrite: (lock, item, callOptions) => this.fenced.fencedWrite(lock, item, callOptions),
    };
    this.keeper = new LeaseKeeper({ options, store, history, events, lockHost, onLost: (lease) => this.queues.onLost(lease) });
    this.fenced = new FencedWriter(context.stores, this.keeper);
    this.queues = new KeyQueues({
      options,
      store,
      history,
      events,
      hold: (waiter, record, validFrom, via, leaseMs) => this.keeper.hold(waiter, record, validFrom, via, leaseMs),
      releaseQuietly,
    });
    const { keeper, queues } = this;
    this.releaser = new LockReleaser({
      options,
      store,
      history,
      events,
      keeper,
      queues,
      isClosed: () => this.closed,
      releaseQuietly,
    });
    this.watcher = new KeyWatcher(store, history, options.leaseMs);
    this.runs = new RunWatch({
      store,
      watcher: this.watcher,
      owner: options.ownerName,
      emit: (event) => events.emit(event),
      holdsHere: (storedKey, token) => token !== undefined && this.queues.slot(storedKey)?.holder?.token === token,
    });
  }

  serves(options: AcquireOptions): boolean {
    return options.limit === undefined;
  }

  resolveKey(_scope: string, key: string): PrimitiveKey {
    const storedKey = toStoredKey(key, this.context.options.keyPrefix);
    return { storedKey, itemKey: storedKey };
  }

  itemKeyOf(storedKey: string): string {
    return storedKey;
  }

  acquire(key: string, { storedKey }: PrimitiveKey, options: AcquireOptions): Promise<Lock> {
    let waiter: Waiter;
    try {
      waiter = createWaiter(this.context.options, () => this.context.assertOpen(), key, storedKey, options);
      waiter.trace = this.context.events.startAcquire(key, waiter.owner, waiter.deadline - waiter.startedAt);
    } catch (error) {
      return Promise.reject(error);
    }
    const lock = new Promise<Lock>((resolve, reject) => {
      waiter.resolve = resolve;
      waiter.reject = reject;
      this.queues.enqueue(waiter, options.signal);
    });
    if (waiter.fire === undefined) return lock;
    // A scheduled fire skipped while a run holds the job elsewhere: watch that run until it ends,
    // so that a run whose instance died is passed in time for the next fire.
    return lock.catch((error: unknown) => {
      // Not for a run of this process (this is the instance to know when it ends).
      if (error instanceof LockBusyError && error.holder !== undefined && this.queues.slot(storedKey)?.holder === undefined) {
        this.runs.start(key, storedKey, error.holder.leaseDuration ?? this.context.options.leaseMs);
      }
      throw error;
    });
  }

  /**
   * Takes a set of keys in one all-or-none write where it can (see `acquireAllAtOnce()`); not part
   * of the primitive seam: multi-key locks are mutex locks.
   * @returns the locks, in the order of `keys`; `undefined` when the keys must be taken one by one.
   */
  acquireAll(keys: readonly SetKey[], options: AcquireOptions): Promise<Lock[] | undefined> {
    const { options: defaults, events } = this.context;
    const host = { options: defaults, store: this.store, history: this.history, events, queues: this.queues };
    return acquireAllAtOnce({ ...host, assertOpen: () => this.context.assertOpen() }, keys, options);
  }

  uses(storedKey: string): boolean {
    return this.queues.slot(storedKey) !== undefined;
  }

  inUse(key: string): string {
    return KEY_IS_MUTEX(key);
  }

  lease(lock: Lock): HeldLease | undefined {
    return this.keeper.get(lock);
  }

  /** Reads a key held elsewhere once, noting its version as a waiter's view does (leadership's followers). */
  watch(storedKey: string): Promise<KeyView> {
    return this.watcher.watch(storedKey);
  }

  /**
   * Renews a lease known only by its key and `leaseId`: one conditional write (through its `Lock`
   * when this process holds it, so the handle keeps counting the lease it really has).
   * @throws LockLostError when that lease no longer holds the lock.
   */
  async renewLease(key: string, leaseId: string, leaseDuration?: Duration): Promise<void> {
    const storedKey = toStoredKey(key, this.context.options.keyPrefix);
    if (typeof leaseId !== 'string' || leaseId.length === 0) throw new LockValidationError(LEASE_ID_INVALID(leaseId));
    const leaseMs = leaseDuration === undefined ? undefined : parseLease(leaseDuration);
    const own = this.heldLease(storedKey, leaseId);
    if (own) return this.keeper.extend(own.lock, leaseDuration);
    const { options } = this.context;
    const result = await this.store.heartbeat({
      key: storedKey,
      holding: { token: leaseId },
      owner: options.ownerName,
      leaseMs,
      ttlLeaseMs: leaseMs ?? options.leaseMs,
    });
    if (result.ok) return;
    // Servers that do not return the blocking item (dynalite) need a read to tell "taken" from "gone".
    const current = result.current ?? (await this.store.read(storedKey).catch(() => undefined));
    throw new LockLostError(NOT_HELD_FOR_EXTEND(key), key, isHeld(current) ? 'taken' : 'gone');
  }

  /**
   * Releases a lease known only by its key and `leaseId`: one conditional write (through its
   * `Lock` when this process holds it: timers stopped, waiters served).
   * @returns `true` when that lease's release is done; `false` when it no longer held the lock.
   */
  async releaseLease(key: string, leaseId: string): Promise<boolean> {
    if (typeof leaseId !== 'string' || leaseId.length === 0) throw new LockValidationError(LEASE_ID_INVALID(leaseId));
    const storedKey = toStoredKey(key, this.context.options.keyPrefix);
    const own = this.heldLease(storedKey, leaseId);
    if (own) return (await this.releaser.release(own.lock)) === 'released';
    return this.store.release(storedKey, { token: leaseId }, this.context.options.leaseMs);
  }

  /** The lease this manager holds for a stored key with owner token `leaseId`, if any. */
  private heldLease(storedKey: string, leaseId: string): HeldLease | undefined {
    const holder = this.queues.slot(storedKey)?.holder;
    return holder?.token === leaseId && holder.state === 'held' ? holder : undefined;
  }

  /** The last scheduled fire claimed on a key (one strongly consistent read), or `null` when none was. */
  async lastFire(key: string): Promise<JobFire | null> {
    const record = await this.store.read(toStoredKey(key, this.context.options.keyPrefix));
    return record?.fire ? jobFireOf(record.fire) : null;
  }

  async inspect(_key: string, storedKey: string): Promise<LockInfo | null | undefined> {
    const record = await this.store.read(storedKey);
    if (record === undefined) return undefined;
    return isHeld(record) ? lockInfoOf(record, this.context.options.keyPrefix) : null;
  }

  async list(prefix: string): Promise<LockInfo[]> {
    const found: LockInfo[] = [];
    for await (const record of this.store.scanHeld(this.context.options.keyPrefix + prefix))
      found.push(lockInfoOf(record, this.context.options.keyPrefix));
    return found;
  }

  get heldCount(): number {
    return this.keeper.size;
  }

  async close(error: unknown): Promise<void> {
    this.closed = true;
    // Watches and waiting callers stop at once; what they still send (a place in line to leave) is
    // waited for after the held locks are released, not before: the next holders, in other
    // processes, wait for those releases.
    const stopping = Promise.all([this.runs.close(), this.queues.close(error)]);
    const releasing = this.releaseHeld();
    await stopping;
    // A waiter served while it stopped (its clean-up found its ticket served) holds now: released too.
    await Promise.all([releasing, this.releaseHeld()]);
    // Releases started before (a caller's, a lock whose caller had given up) finish with the client.
    await this.releaser.idle();
  }

  /** Releases every lock held now (shutdown), whatever each release ends with. */
  private async releaseHeld(): Promise<void> {
    const held = this.keeper.all();
    // A run cut short by the shutdown did not end well (one that returned said so already).
    for (const lease of held) if (lease.fire !== undefined) lease.fireOutcome ??= 'failed';
    // Code still running under these locks must stop before another owner can take them.
    for (const lease of held) lease.controller.abort(new LockLostError(RELEASED_AT_SHUTDOWN(lease.lock.key), lease.lock.key, 'shutdown'));
    await Promise.allSettled(held.map((lease) => this.releaser.release(lease.lock)));
  }

  /** Stops the heartbeat timer, once nothing is held any more. */
  stop(): void {
    this.keeper.close();
  }
}

import { DynamoLockError, LockBusyError } from '../../errors/lock.errors';
import { LOCK_BUSY } from '../../errors/lock.messages';
import type { AcquireOptions } from '../../interfaces/acquire-options.interface';
import { isHeld, type LockRecord } from '../../store/mutex/mutex.record';
import type { MutexStorePort } from '../../store/mutex/mutex-store.port';
import type { AcquireAllResult, AcquireAllWrite } from '../../store/mutex/mutex-store.protocol';
import { monotonicNow, sleep } from '../../utils/clock';
import { randomToken } from '../../utils/random-token';
import { holderOf, type KeyHistory } from '../engine/key-history';
import type { Lock } from '../engine/lock';
import type { LockEvents } from '../engine/lock.events';
import type { ResolvedLockOptions } from '../engine/lock-options.resolver';
import type { Waiter } from '../engine/lock-state';
import { createWaiter } from '../engine/waiter.factory';
import { settleWaiter } from '../engine/waiter.settle';
import { RetryBackoff } from '../waiting/retry.backoff';
import { reportRetry, takeTransient, unavailableError } from '../waiting/transient.retry';
import type { KeyQueues } from './key.queues';

/** What the one-request acquisition of a set needs of the mutex. */
export interface AllAtOnceHost {
  readonly options: ResolvedLockOptions;
  readonly store: MutexStorePort;
  readonly history: KeyHistory;
  readonly events: LockEvents;
  readonly queues: Pick<KeyQueues, 'reserve' | 'unreserve' | 'adoptGranted' | 'later' | 'attempt' | 'shutdown'>;
  /** @throws LockConfigurationError when the manager is shut down. */
  assertOpen(): void;
}

/** A key of the set: as the caller named it, and as stored. */
export interface SetKey {
  readonly key: string;
  readonly storedKey: string;
}

/**
 * The fast path of a multi-key lock: every key in one all-or-none write of free acquires (on
 * DynamoDB one `TransactWriteItems`, 2 WCU per key), each key then an ordinary held lease. Tried
 * only where it can work: the store has transactions, no caller of this process uses a key, and
 * none was just seen busy. Each key's fencing counter is pinned to what this process last knew
 * (its own last hold, or an item it saw), a new item's to none; a wrong guess writes nothing and
 * the refusal shows the items, so it is sent once more with their counters when they are free.
 *
 * A lost answer: the same write is sent again (same `ClientRequestToken`: applied at most once)
 * until the wait ends, and the leases count from the first send. Given up with the outcome
 * unknown, the keys are read and whatever holds this call's tokens is released in the background.
 * @returns the locks, in the order of `keys`; `undefined` when the keys must be taken one by one
 *   (no transactions, a key in use or busy, a refusal: busy keys are noted, so their turn queues at once).
 * @throws LockBusyError for a single attempt (`wait: false`) that found a key held or waited for;
 *   LockUnavailableError, or the signal's reason, when the wait ended with the outcome unknown.
 */
export async function acquireAllAtOnce(host: AllAtOnceHost, keys: readonly SetKey[], options: AcquireOptions): Promise<Lock[] | undefined> {
  const { store, history, queues, events } = host;
  const now = monotonicNow();
  if (!store.acquireAll || keys.some(({ storedKey }) => history.probablyBusy(storedKey, now))) return undefined;
  const waiters = keys.map(({ key, storedKey }) => createWaiter(host.options, () => host.assertOpen(), key, storedKey, options));
  const reserved = waiters.filter((waiter) => queues.reserve(waiter.storedKey));
  if (reserved.length < waiters.length) {
    for (const waiter of reserved) queues.unreserve(waiter.storedKey);
    return undefined;
  }
  for (const waiter of waiters) waiter.trace = events.startAcquire(waiter.key, waiter.owner, waiter.deadline - waiter.startedAt);
  let locks: Lock[] | undefined;
  try {
    // Tracked: shutdown waits for it (a grant that arrives after shutdown started is released).
    locks = await queues.attempt(() => new AllAtOnce(host, waiters, options.signal).run());
    return locks;
  } catch (error) {
    // The key found busy is settled (its `busy` event); the others end with the error.
    for (const waiter of waiters) {
      if (error instanceof LockBusyError) waiter.trace?.endWith('set-busy');
      else settleWaiter(events, waiter, error);
    }
    throw error;
  } finally {
    if (!locks) for (const waiter of waiters) queues.unreserve(waiter.storedKey);
    // The set goes on one key at a time, each key in an acquisition (and a trace) of its own.
    if (!locks) for (const waiter of waiters) waiter.trace?.endWith('ordered');
  }
}

/** One attempt to take a set at once, with its resends. */
class AllAtOnce {
  private write: AcquireAllWrite;
  /** Monotonic time of the first send of a write whose outcome was unknown: a grant counts from then. */
  private uncertainSince: number | undefined;
  /** The last send was answered `TransactionInProgressException`: the first one may land yet. */
  private inProgress = false;
  /** Sent again once more with fresh counters (a refusal by a counter only), or after a conflict. */
  private resends = { fence: 1, conflict: 1 };
  private readonly backoff = new RetryBackoff();
  private readonly lead: Waiter;

  constructor(
    private readonly host: AllAtOnceHost,
    private readonly waiters: Waiter[],
    private readonly signal: AbortSignal | undefined,
  ) {
    this.lead = waiters[0];
    this.write = this.newWrite();
  }

  async run(): Promise<Lock[] | undefined> {
    // A single attempt may still resend a lost write for one request limit.
    const deadline = Math.max(this.lead.deadline, monotonicNow() + this.host.options.requestTimeoutMs);
    for (;;) {
      const sentAt = monotonicNow();
      let result: AcquireAllResult;
      try {
        result = await this.host.store.acquireAll!(this.write);
        this.inProgress = false;
      } catch (error) {
        this.uncertainSince ??= sentAt;
        await this.pauseOrGiveUp(error, deadline);
        continue;
      }
      if (result.kind === 'unsupported') return undefined;
      if (result.kind === 'granted') return this.granted(result.records, this.uncertainSince ?? sentAt);
      // A resend of a write applied already (a server that does not replay by the request token).
      const own = result.current.every((record, i) => record?.token === this.write.parts[i].token);
      if (this.uncertainSince !== undefined && own) return this.granted(result.current as LockRecord[], this.uncertainSince);
      if (!this.refused(result)) return undefined;
    }
  }

  /** After a refusal (nothing written): `true` to send again with what it showed, else the set goes one by one. */
  private refused(result: Extract<AcquireAllResult, { kind: 'refused' }>): boolean {
    const { history } = this.host;
    const now = monotonicNow();
    const busy = this.waiters.findIndex((_, i) => result.failed[i] && (!result.current[i] || !isFree(result.current[i])));
    for (const [i, waiter] of this.waiters.entries()) {
      const current = result.current[i];
      if (current?.fencingToken !== undefined && isFree(current)) history.noteFence(waiter.storedKey, current.fencingToken);
      // The ordered path queues at once behind a holder (no free write bound to fail).
      if (result.failed[i] && current && !isFree(current)) history.recordBusy(waiter.storedKey, now);
    }
    // An earlier send may still have landed (nothing proves it did not): its tokens are released.
    if (this.uncertainSince !== undefined) this.cleanUp();
    if (busy >= 0 && result.current[busy] && this.lead.deadline <= this.lead.startedAt) throw this.busyError(busy, result.current[busy]);
    const again = result.conflict ? this.resends.conflict-- > 0 : busy < 0 && this.resends.fence-- > 0;
    if (!again || this.uncertainSince !== undefined) return false;
    this.write = this.newWrite();
    return true;
  }

  /**
   * Every key granted, its lease counting from `from`. A grant of unknown age (the answer to a
   * resend: DynamoDB answers a replay of an applied request as a success, whatever happened to
   * the items since) with half its lease gone may have run out, and another process passed this
   * silent holder meanwhile: each key is confirmed first, as `RemoteAcquisition.confirm()` does.
   * A caller that gave up, or a shutdown, meanwhile: the keys are released and its reason thrown.
   * @returns the locks, each an ordinary lease of its waiter; `undefined`: a key was lost, go one by one.
   */
  private async granted(records: LockRecord[], from: number): Promise<Lock[] | undefined> {
    const { host } = this;
    if (this.uncertainSince !== undefined && from + this.lead.leaseMs / 2 <= monotonicNow()) {
      const confirmed = await this.confirm(records);
      if (!confirmed) return undefined;
      ({ records, from } = confirmed);
    }
    const { shutdown } = host.queues;
    const stop = shutdown.aborted
      ? { reason: shutdown.reason as unknown }
      : this.signal?.aborted
        ? { reason: this.signal.reason as unknown }
        : undefined;
    if (stop) {
      this.cleanUp(true);
      throw stop.reason;
    }
    return this.waiters.map((waiter, i) => host.queues.adoptGranted(waiter, records[i], from).lock);
  }

  /**
   * One heartbeat per key, on the condition that it still holds this call's token at the version
   * written. All renewed: the records and when the heartbeats were sent. Otherwise the keys still
   * held are released; a single attempt ends busy (or unavailable), a wait goes one by one.
   */
  private async confirm(records: LockRecord[]): Promise<{ records: LockRecord[]; from: number } | undefined> {
    const { store, options } = this.host;
    const sentAt = monotonicNow();
    const results = await Promise.allSettled(
      this.waiters.map((waiter, i) =>
        store.heartbeat({
          key: waiter.storedKey,
          holding: { token: waiter.token },
          rvn: records[i].rvn,
          owner: waiter.owner,
          leaseMs: waiter.leaseMs,
          ttlLeaseMs: waiter.leaseMs,
        }),
      ),
    );
    const renewed = results.map((result) => (result.status === 'fulfilled' && result.value.ok ? result.value.record : undefined));
    if (renewed.every((record) => record !== undefined)) return { records: renewed, from: sentAt };
    this.cleanUp();
    if (this.lead.deadline > this.lead.startedAt) return undefined;
    const taken = results.findIndex((result) => result.status === 'fulfilled' && !result.value.ok);
    if (taken >= 0) {
      const answer = results[taken] as PromiseFulfilledResult<{ ok: false; current: LockRecord | undefined }>;
      throw this.busyError(taken, answer.value.current);
    }
    const failed = results.find((result): result is PromiseRejectedResult => result.status === 'rejected');
    throw unavailableError(this.lead, options.requestTimeoutMs, failed?.reason);
  }

  /**
   * A failed send: retried after a pause while the wait lasts (a transient error, or
   * `TransactionInProgressException`: the first send still runs, its outcome unknown); after it,
   * or at shutdown, or for a permanent error (wrapped in `LockUnavailableError`), clean-up and the error.
   */
  private async pauseOrGiveUp(error: unknown, deadline: number): Promise<void> {
    try {
      this.inProgress = error instanceof Error && error.name === 'TransactionInProgressException';
      if (this.inProgress) this.lead.lastError = error;
      else takeTransient(this.lead, error);
      this.host.assertOpen();
      this.signal?.throwIfAborted();
      const left = deadline - monotonicNow();
      if (left <= 0) throw unavailableError(this.lead, this.host.options.requestTimeoutMs, error);
      const pause = Math.round(this.backoff.next(left));
      reportRetry({ options: this.host.options, emit: (event) => this.host.events.emit(event) }, this.lead, error, pause);
      await sleep(pause, this.signal ? AbortSignal.any([this.signal, this.host.queues.shutdown]) : this.host.queues.shutdown);
    } catch (failure) {
      this.cleanUp();
      if (this.host.queues.shutdown.aborted) throw this.host.queues.shutdown.reason;
      if (failure instanceof DynamoLockError || failure === this.signal?.reason) throw failure;
      throw unavailableError(this.lead, this.host.options.requestTimeoutMs, failure);
    }
  }

  /**
   * Whatever holds this call's tokens is released (in the background; shutdown waits for it).
   * @param held the grant is known (no read first).
   */
  private cleanUp(held = false): void {
    const { history, queues } = this.host;
    for (const waiter of this.waiters) history.addOrphan(waiter.storedKey, waiter.token);
    queues.later(async () => {
      await Promise.all(this.waiters.map((waiter) => this.cleanUpKey(waiter, held)));
    });
  }

  /** The clean-up of one key: `cleanup` says `released`, or `failed` when a request failed (its lease runs out). */
  private async cleanUpKey(waiter: Waiter, held: boolean): Promise<void> {
    const { store, history, events } = this.host;
    const emit = (outcome: 'released' | 'failed') => events.emit({ type: 'cleanup', key: waiter.key, owner: waiter.owner, outcome });
    try {
      if (!held) {
        const record = await store.read(waiter.storedKey);
        // Not there (yet): a send still in progress may land later, and the orphan is kept for it.
        if (record?.token !== waiter.token) return this.inProgress ? undefined : history.dropOrphan(waiter.storedKey, waiter.token);
      }
      if (!(await store.release(waiter.storedKey, { token: waiter.token }, waiter.leaseMs))) return;
      history.dropOrphan(waiter.storedKey, waiter.token);
      emit('released');
    } catch {
      emit('failed');
    }
  }

  /** The busy error of a single attempt, naming the key found held (its `busy` event emitted). */
  private busyError(index: number, current: LockRecord | undefined): LockBusyError {
    const waiter = this.waiters[index];
    if (current && isHeld(current)) waiter.holder = holderOf(current);
    const waited = Math.round(monotonicNow() - waiter.startedAt);
    const error = new LockBusyError(
      LOCK_BUSY(waiter.key, waiter.holder?.owner, waiter.holder?.fencingToken, undefined),
      waiter.key,
      waiter.holder,
      waited,
    );
    settleWaiter(this.host.events, waiter, error);
    return error;
  }

  /** A write of the set with every value fixed (resent as it is), its counters as this process knows them. */
  private newWrite(): AcquireAllWrite {
    const { lead } = this;
    return {
      parts: this.waiters.map((waiter) => ({
        key: waiter.storedKey,
        token: waiter.token,
        rvn: randomToken(),
        fence: this.host.history.fenceOf(waiter.storedKey),
      })),
      owner: lead.owner,
      leaseMs: lead.leaseMs,
      now: Date.now(),
      requestToken: randomToken(),
    };
  }
}

/** Nobody holds the item or waits for it: a free acquire's condition holds. */
function isFree(record: LockRecord): boolean {
  return !isHeld(record) && (record.head === undefined || record.head === record.tail);
}

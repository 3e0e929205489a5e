import type { LockLogger } from '../interfaces/lock-logger.interface';
import type { LockBusyError, LockUnavailableError } from '../errors/lock.errors';
import { TRANSIENT_RETRY } from '../errors/lock.messages';
import type { LockRecord } from '../store/lock-record';
import { type AcquireCondition, CLAIM_LEASE_MS, type WriteResult } from '../store/lock-store.protocol';
import type { LockStorePort } from '../store/lock-store.interface';
import { isTransientError } from '../store/transient-error';
import { nextRetryMs, RETRY_MIN_MS } from '../utils/backoff';
import { jitter, monotonicNow, sleep } from '../utils/clock';
import type { KeyHistory, RecordObservation } from './key-history';
import type { AcquiredVia, LockEvent } from '../interfaces/lock-event.interface';
import type { LockTrace } from '../observability/lock.telemetry';
import { type HeldLease, type Waiter, writeOf } from './lock-state';

/** Shortest pause between polls, and the first one when nothing is known about the holder. */
const POLL_MIN_MS = 2;
const FIRST_POLL_MS = 5;
/** Growth of the pause while a release is overdue or nothing is known. */
const POLL_GROWTH = 1.5;

/** What a remote acquisition needs from the manager. */
export interface AcquisitionHost {
  readonly store: LockStorePort;
  readonly history: KeyHistory;
  readonly options: { readonly logger: LockLogger; readonly leaseMs: number; readonly maxPollMs: number };
  /** Starts holding the lock described by `record`, valid from monotonic time `validFrom`. */
  hold(waiter: Waiter, record: LockRecord, validFrom: number, via: AcquiredVia): HeldLease;
  emit(event: LockEvent, trace?: LockTrace): void;
  /** Emits the `waiting` event of a waiter, once. */
  noteWaiting(waiter: Waiter): void;
  busyError(waiter: Waiter): LockBusyError;
  /** The error of a wait that ended: busy when a holder was seen, else unavailable (an outage). */
  deadlineError(waiter: Waiter): LockBusyError | LockUnavailableError;
}

const VIA: Record<AcquireCondition['kind'], AcquiredVia> = { free: 'free', head: 'queue-head', takeover: 'takeover', handover: 'handover' };

type Step = { kind: 'write'; condition: AcquireCondition; queuedAt?: number; via?: AcquiredVia } | { kind: 'enqueue' } | { kind: 'wait' };

/**
 * Takes a lock from DynamoDB for one waiter: the head of this process's local queue.
 *
 * - Free lock: one conditional write.
 * - Busy lock: the waiter records itself in the item's queue (one write), and the holder's
 *   release hands the lock to the queue's head in the same write. Waiters are served in arrival
 *   order across processes, and the releaser cannot jump the queue.
 * - While queued, the waiter polls with strongly consistent reads (a fifth of a write's price),
 *   timed by how long this key's holders usually keep it, to learn it was promoted.
 * - A holder that stops renewing is taken over once its record version stayed the same for a
 *   whole lease on this host's monotonic clock: no wall clocks are compared.
 */
export class RemoteAcquisition {
  private current: LockRecord | undefined;
  private known = false;
  /** The record version being watched, its lease, and when this process first saw it (kept in the key's history). */
  private observed: RecordObservation | undefined;
  private holderToken: string | undefined;
  private holderSince = 0;
  /** This waiter's index in the item's queue, when queued. */
  private queuedAt: number | undefined;
  /**
   * Send time of the last request whose answer showed another owner. Until one was answered, no
   * write of this acquisition can have put the waiter's token in the item before it started.
   */
  private lastNotMineAt = monotonicNow();
  /** How the lock was granted by a write answered too late to trust its lease (see {@link loop}). */
  private grantedVia: AcquiredVia | undefined;
  private uncertain = false;
  private retryMs = RETRY_MIN_MS;
  private pollStreak = 0;
  private rttMs = 2;
  private lastAnswerAt = monotonicNow();

  constructor(
    private readonly host: AcquisitionHost,
    private readonly waiter: Waiter,
  ) {
    this.observed = host.history.observation(waiter.storedKey);
    // A write of this waiter before this acquisition (a hand-over) may hold the item already:
    // whatever ends the acquisition, clean-up looks.
    this.uncertain = waiter.uncertainSince !== undefined;
  }

  /** Runs until the lock is held, the wait ends (busy error) or the caller gives up. */
  async run(): Promise<HeldLease> {
    try {
      return await this.loop();
    } catch (error) {
      const promoted = await this.cleanUp();
      if (promoted) return promoted;
      throw error;
    }
  }

  private async loop(): Promise<HeldLease> {
    const { waiter, host } = this;
    if (host.history.probablyBusy(waiter.storedKey, monotonicNow()) && waiter.deadline > waiter.startedAt) {
      this.known = true;
      this.current = { key: waiter.storedKey, token: '?', queue: [] };
    }
    for (;;) {
      waiter.cancel.signal.throwIfAborted();
      if (this.known && this.current?.token === waiter.token) {
        const promoted = await this.confirmPromotion(this.current);
        if (promoted) return promoted;
        continue;
      }
      const step = this.nextStep();
      if (step.kind === 'wait') {
        await sleep(this.pollDelay(), waiter.cancel.signal);
        await this.read();
        continue;
      }
      const sentAt = monotonicNow();
      const result = await this.request(() =>
        this.sendWrite(sentAt, () =>
          step.kind === 'enqueue'
            ? host.store.enqueue(writeOf(waiter))
            : host.store.acquire({ ...writeOf(waiter), condition: step.condition, queuedAt: step.queuedAt }),
        ),
      );
      // Taken over: no longer an orphan (a failed attempt keeps the mark for the next one).
      if (result?.ok && step.kind === 'write' && step.condition.kind === 'handover')
        host.history.dropOrphan(waiter.storedKey, step.condition.fromToken);
      if (result?.ok && step.kind === 'write' && step.condition.kind === 'takeover' && step.condition.holder)
        host.history.dropOrphan(waiter.storedKey, step.condition.holder);
      if (result?.ok && step.kind === 'write') {
        const via = step.via ?? VIA[step.condition.kind];
        // The write set a new record version, so the lease counts from when it was sent. When the
        // answer took so long (the SDK's own retries, a slow server) that half of it is gone, the
        // next turn renews it with one heartbeat before the caller gets it, or finds it taken.
        if (this.fresh(sentAt, result.record)) return host.hold(waiter, result.record, sentAt, via);
        this.grantedVia = via;
      }
      // Queued behind the holder its answer showed.
      if (result?.ok && step.kind === 'enqueue') host.noteWaiting(waiter);
      // Servers that do not return the blocking item (dynalite) need a read.
      if (result && !result.ok && !result.current) await this.read();
    }
  }

  /**
   * A release handed the lock to this waiter, on the short claim lease and without its data
   * (the manager writes both right after, when the holder's heartbeats would not). Its lease
   * counts from before the last answer that still showed another owner; when much of it is gone
   * already (a slow poll, a pause), one heartbeat first makes it fresh, or shows it was taken over.
   */
  private async confirmPromotion(record: LockRecord): Promise<HeldLease | undefined> {
    const { waiter } = this;
    const via = this.grantedVia ?? 'promotion';
    if (this.fresh(this.validFrom(), record)) return this.host.hold(waiter, record, this.validFrom(), via);
    const sentAt = monotonicNow();
    const result = await this.request(() =>
      this.sendWrite(sentAt, () => this.host.store.heartbeat(waiter.storedKey, waiter.token, waiter.leaseMs, waiter.leaseMs, waiter.data)),
    );
    if (result?.ok) return this.host.hold(waiter, result.record, sentAt, via);
    // Taken or gone: whatever grants the lock later is not that write.
    if (result) this.grantedVia = undefined;
    // Not ours any more: a server that does not return the item needs a read, or the view would
    // still show this waiter as the holder and the loop would try again at once.
    if (result && !result.current) await this.read();
    return undefined;
  }

  /**
   * The earliest time a write of this waiter may have put its token in the item: the last answer
   * that showed another owner, or an earlier write whose outcome is unknown (a lost response, a
   * hand-over that failed that way). A lease found in the item counts from then.
   */
  private validFrom(): number {
    return Math.min(this.lastNotMineAt, this.waiter.uncertainSince ?? Number.POSITIVE_INFINITY);
  }

  /** Whether a lease counted from `from` still has more than half of it left. */
  private fresh(from: number, record: LockRecord): boolean {
    const leaseMs = Math.min(record.leaseMs ?? this.waiter.leaseMs, this.waiter.leaseMs);
    return from + leaseMs / 2 > monotonicNow();
  }

  /** Sends a write carrying the waiter's token; one that fails may still have been applied. */
  private async sendWrite(sentAt: number, send: () => Promise<WriteResult>): Promise<WriteResult> {
    try {
      return await send();
    } catch (error) {
      this.waiter.uncertainSince = Math.min(this.waiter.uncertainSince ?? sentAt, sentAt);
      // Whatever the error, the write may have been applied: clean-up looks at the item.
      this.uncertain = true;
      throw error;
    }
  }

  /** Decides the next request from the last view of the item. */
  private nextStep(): Step {
    const { waiter, current } = this;
    const now = monotonicNow();
    // Seen unchanged for a whole lease, by this call or an earlier one of this process (a single
    // attempt too): its holder (or the queue's head) is gone.
    if (this.observed && now - this.observed.at >= this.observed.leaseMs) {
      // The record did not change for a whole lease: its holder (or the queue's head) is gone.
      // Without a holder (a queue head that never claimed the lock) there is no previous holder to report.
      if (this.observed.holder === undefined) waiter.holder = undefined;
      // A single attempt may take over what an earlier call saw: that is the previous holder.
      else waiter.holder ??= this.observed.holderInfo;
      return {
        kind: 'write',
        condition: { kind: 'takeover', rvn: this.observed.rvn, holder: this.observed.holder },
        queuedAt: this.queuedAt,
      };
    }
    if (!this.known || !current) return { kind: 'write', condition: { kind: 'free' } };
    const orphanRvn = current.token ? this.host.history.orphanAt(waiter.storedKey, current.token, current.rvn) : undefined;
    if (current.token && orphanRvn !== undefined) {
      // Our own token that no caller holds (a lease that ran out, a failed release, an abandoned
      // waiter): take it over now.
      // A lease that was handed out is taken only at the version this process left: renewed since
      // (a lease id renewed elsewhere), it is a live holder, watched like any other.
      const condition: AcquireCondition =
        orphanRvn === null ? { kind: 'handover', fromToken: current.token } : { kind: 'takeover', rvn: orphanRvn, holder: current.token };
      return { kind: 'write', condition, queuedAt: this.queuedAt, via: 'takeover' };
    }
    if (!current.token) {
      if (current.queue.length === 0) return { kind: 'write', condition: { kind: 'free' } };
      if (this.queuedAt === 0) return { kind: 'write', condition: { kind: 'head' }, queuedAt: 0 };
    }
    // Checked before polling: a waiter let past its deadline for a late answer polls no more.
    if (now >= waiter.deadline) throw this.host.busyError(waiter);
    if (this.queuedAt !== undefined) return { kind: 'wait' };
    return { kind: 'enqueue' };
  }

  /**
   * Sends one request and takes in what its answer shows. Transient errors are retried here with
   * backoff until the deadline; a write that failed that way may have been applied, which a later
   * view reveals (our token in the item).
   */
  private async request(send: () => Promise<WriteResult>, isRead = false): Promise<WriteResult | undefined> {
    const sentAt = monotonicNow();
    try {
      const result = await send();
      this.rttMs += 0.2 * (monotonicNow() - sentAt - this.rttMs);
      this.retryMs = RETRY_MIN_MS;
      // Answered: whatever failed before is over (callers behind this one are not in an outage).
      this.waiter.lastError = undefined;
      if (result.ok) this.see(result.record, sentAt);
      else if (result.current || isRead) this.see(result.current, sentAt);
      return result;
    } catch (error) {
      if (!isTransientError(error)) throw error;
      this.uncertain = true;
      this.waiter.lastError = error;
      if (monotonicNow() >= this.waiter.deadline) throw this.host.deadlineError(this.waiter);
      const pause = Math.round(Math.min(jitter(this.retryMs), Math.max(0, this.waiter.deadline - monotonicNow())));
      this.host.options.logger.warn?.(TRANSIENT_RETRY('Acquisition', this.waiter.key, error, pause));
      this.host.emit(
        { type: 'retry', key: this.waiter.key, owner: this.waiter.owner, operation: 'acquire', error, delayMs: pause },
        this.waiter.trace,
      );
      await sleep(pause, this.waiter.cancel.signal);
      this.retryMs = nextRetryMs(this.retryMs);
      return undefined;
    }
  }

  /** One strongly consistent read of the item, taken into the view. */
  private read(): Promise<WriteResult | undefined> {
    return this.request(() => this.host.store.read(this.waiter.storedKey).then((current) => ({ ok: false as const, current })), true);
  }

  /** Updates the view: queue position, watched record version, holder changes and their timing. */
  private see(record: LockRecord | undefined, sentAt: number): void {
    const now = monotonicNow();
    const { waiter, host } = this;
    this.current = record ?? { key: waiter.storedKey, queue: [] };
    this.known = true;
    const index = this.current.queue.findIndex((entry) => entry.token === waiter.token);
    this.queuedAt = index < 0 ? undefined : index;
    const holder = this.current.token;
    if (holder === waiter.token) {
      this.observed = undefined;
      host.history.forgetObservation(waiter.storedKey);
      return;
    }
    this.lastNotMineAt = sentAt;
    if (holder) {
      waiter.holder = { owner: this.current.owner, fencingToken: this.current.fencingToken, leaseDuration: this.current.leaseMs };
      host.history.recordBusy(waiter.storedKey, now);
    }
    if (holder !== this.holderToken) {
      // The change happened between the previous answer and this one; when the previous holder's
      // start is known, it most likely ended one usual hold later.
      const estimate = this.holdEstimate();
      this.holderSince = this.changeTime(now, estimate);
      this.holderToken = holder;
      this.pollStreak = 0;
    }
    this.lastAnswerAt = now;
    if (holder) {
      // For the busy error: when this holder will likely release (a hint for callers' retries).
      const estimate = this.holdEstimate();
      waiter.expectedReleaseAt = estimate === undefined ? undefined : Math.max(now, this.holderSince + estimate);
    }
    // A free lock with a queue waits for the queue's head; if the head never takes it (a waiter
    // that died), the others go ahead after a claim lease.
    const watched = holder || this.current.queue.length > 0 ? this.current.rvn : undefined;
    if (watched === undefined) {
      this.observed = undefined;
      host.history.forgetObservation(waiter.storedKey);
    } else {
      const leaseMs = holder ? (this.current.leaseMs ?? host.options.leaseMs) : CLAIM_LEASE_MS;
      this.observed = host.history.observe(waiter.storedKey, watched, leaseMs, holder, now, holder ? waiter.holder : undefined);
    }
  }

  /**
   * When the holder seen at `now` most likely took over: unknown for the first holder seen (now);
   * one usual hold after the previous holder's start when that is known; else halfway between the
   * previous answer and this one.
   */
  private changeTime(now: number, estimate: number | undefined): number {
    if (this.holderToken === undefined) return now;
    if (estimate === undefined) return (this.lastAnswerAt + now) / 2;
    return Math.min(now, Math.max(this.lastAnswerAt, this.holderSince + estimate));
  }

  /**
   * How long to wait before the next poll: until the release this waiter's turn depends on is
   * expected (from the key's usual hold time), then briefly and growing while it is overdue;
   * never past the takeover check or the deadline.
   */
  private pollDelay(): number {
    const now = monotonicNow();
    const estimate = this.holdEstimate();
    let delay: number;
    const expected = estimate === undefined ? undefined : this.holderSince + estimate * ((this.queuedAt ?? 0) + 1) - this.rttMs;
    if (expected !== undefined && expected - now > POLL_MIN_MS && this.pollStreak === 0) delay = expected - now;
    else delay = (estimate === undefined ? FIRST_POLL_MS : POLL_MIN_MS) * POLL_GROWTH ** this.pollStreak++;
    if (this.observed) delay = Math.min(delay, Math.max(0, this.observed.at + this.observed.leaseMs - now));
    return Math.max(0, Math.min(delay, this.host.options.maxPollMs, this.waiter.deadline - now));
  }

  /** How long holders of this key usually keep it: learned here, or as the last holder wrote it. */
  private holdEstimate(): number | undefined {
    return this.host.history.holdEstimate(this.waiter.storedKey) ?? this.current?.lastHoldMs;
  }

  /**
   * After a failure or cancellation: leaves the item's queue, so no release promotes a waiter
   * that is gone. If the lock was handed to this waiter meanwhile, returns it (the manager then
   * passes it on).
   */
  private async cleanUp(): Promise<HeldLease | undefined> {
    if (this.queuedAt === undefined && !this.uncertain) return undefined;
    const { store } = this.host;
    const { waiter } = this;
    // The token may still be promoted (or hold the lock) while no caller waits for it.
    this.host.history.addOrphan(waiter.storedKey, waiter.token);
    try {
      for (let attempt = 0; attempt < 5; attempt++) {
        const sentAt = monotonicNow();
        const record = await store.read(waiter.storedKey);
        if (record?.token === waiter.token) {
          // Promoted meanwhile: held on the claim lease as it is (the manager passes it on), unless
          // the caller would get it with half of its lease gone: then it is given back at once.
          if (waiter.settled || this.fresh(this.validFrom(), record)) return this.host.hold(waiter, record, this.validFrom(), 'promotion');
          await store.release(waiter.storedKey, waiter.token, waiter.leaseMs);
          return undefined;
        }
        this.lastNotMineAt = sentAt;
        const index = record?.queue.findIndex((entry) => entry.token === waiter.token) ?? -1;
        // Out of the queue. The token stays marked: a copy of its enqueue still in flight could put
        // it back and have it promoted, and this process then takes it back at once.
        if (index < 0 || (await store.leave(waiter.storedKey, waiter.token, index)).ok) return undefined;
      }
    } catch {
      // Best effort: a waiter left in the queue is skipped one lease after it is promoted.
    }
    return undefined;
  }
}

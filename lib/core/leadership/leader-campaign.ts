import type { Lock } from '../engine/lock';
import type { KeyView } from '../mutex/key.watcher';
import { DynamoLockError, LockLostError } from '../../errors/lock.errors';
import { LEADERSHIP_ENDED, LEADERSHIP_LISTENER_FAILED, LEADERSHIP_NOT_LEADING, LEADERSHIP_RETRY } from '../../errors/lock.messages';
import type { LockEvent } from '../../interfaces/lock-event.interface';
import type { LockLogger } from '../../interfaces/lock-logger.interface';
import { sleep } from '../../utils/clock';
import { RetryBackoff } from '../waiting/retry.backoff';
import type { LeadSettings } from './lead-options';

/** What a campaign needs from the lock manager. */
export interface CampaignHost {
  readonly logger: LockLogger;
  /** One attempt at the leadership's lock (a lease this process saw stall for a whole lease is passed). */
  tryAcquire(settings: LeadSettings): Promise<Lock | null>;
  /** One read of the leadership's lock, noted in the key's history. */
  watch(name: string): Promise<KeyView>;
  /** Releases a lock, logging (not throwing) a failure. */
  releaseQuietly(lock: Lock): Promise<void>;
  /** The campaign has ended: the manager forgets it. */
  ended(campaign: LeaderCampaign): void;
  /** Passes an `elected` or `revoked` event to the manager's listeners (and telemetry). */
  emit(event: LockEvent): void;
}

/** A caller of `whenLeader()` waiting for an election. */
interface ElectionWaiter {
  resolve(lock: Lock): void;
  reject(reason: unknown): void;
}

/**
 * One process's campaign for a leadership: the loop behind a `Leadership` handle.
 *
 * - Follower: reads the leadership's lock once every `watchInterval` (a strongly consistent read,
 *   never a failed conditional write), and once more when the leader's lease would run out if its
 *   record version stayed the same. A free lock, or a leader silent for a whole lease on this
 *   host's monotonic clock, is taken with one attempt of the ordinary engine (`tryAcquire()`).
 * - Leader: holds an ordinary `Lock`, renewed by its heartbeats (one write each); the term ends
 *   when the lock is lost (its `signal` aborts: expired on the local clock, taken, gone), and the
 *   campaign goes on as a follower.
 * - Ended by `resign()` (the lock is released, so a follower takes over at its next read) or by
 *   the manager's shutdown (which releases it the same way).
 */
export class LeaderCampaign {
  /** Settles when the loop has stopped. */
  readonly done: Promise<void>;
  /**
   * The outcome of the first round: the term's lock when elected (it may be lost since), `null` when
   * another instance leads. Rejects with the error of the first failed request (the loop itself
   * retries it), or a `DynamoLockError` when the campaign ended first.
   */
  readonly firstRound: Promise<Lock | null>;
  private decide: { resolve(lock: Lock | null): void; reject(reason: unknown): void } | undefined;
  private term: Lock | undefined;
  /** The signal of the last term, aborted with the reason it ended. */
  private lastSignal: AbortSignal | undefined;
  private readonly stopping = new AbortController();
  private readonly electedListeners = new Set<(lock: Lock) => void>();
  private readonly revokedListeners = new Set<(reason: LockLostError) => void>();
  private waiters: ElectionWaiter[] = [];
  private readonly backoff = new RetryBackoff();
  private failing = false;

  constructor(
    private readonly host: CampaignHost,
    readonly settings: LeadSettings,
  ) {
    this.firstRound = new Promise((resolve, reject) => (this.decide = { resolve, reject }));
    // Read only by `lead --no-wait`: a failure nobody awaits is not an unhandled rejection.
    this.firstRound.catch(() => undefined);
    this.done = this.run().finally(() => this.undecided(this.endedError()));
  }

  /** The lock of the current term, while its lease holds on the local clock. */
  get lock(): Lock | undefined {
    return this.term?.isHeld ? this.term : undefined;
  }

  /** Whether the campaign was resigned or shut down. */
  get ended(): boolean {
    return this.stopping.signal.aborted;
  }

  /** The current term's signal; when not leading, the last term's, or one aborted from the start. */
  get signal(): AbortSignal {
    const lock = this.lock;
    if (lock) return lock.signal;
    this.lastSignal ??= AbortSignal.abort(new LockLostError(LEADERSHIP_NOT_LEADING(this.settings.name), this.settings.name, 'gone'));
    return this.lastSignal;
  }

  /** Resolves with the lock of the term as soon as this process leads. */
  whenLeader(signal?: AbortSignal): Promise<Lock> {
    const lock = this.lock;
    if (lock) return Promise.resolve(lock);
    if (this.ended) return Promise.reject(this.endedError());
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<Lock>((resolve, reject) => {
      const onAbort = () => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(signal?.reason);
      };
      const waiter: ElectionWaiter = {
        resolve: (lock) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(lock);
        },
        reject: (reason) => {
          signal?.removeEventListener('abort', onAbort);
          reject(reason);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  /** Adds a listener of elections; returns the function that removes it. */
  onElected(listener: (lock: Lock) => void): () => void {
    this.electedListeners.add(listener);
    return () => this.electedListeners.delete(listener);
  }

  /** Adds a listener of the ends of terms; returns the function that removes it. */
  onRevoked(listener: (reason: LockLostError) => void): () => void {
    this.revokedListeners.add(listener);
    return () => this.revokedListeners.delete(listener);
  }

  /** Ends the campaign: stops watching and, when leading, releases the lock (one write). */
  async resign(): Promise<void> {
    this.stop();
    const lock = this.term;
    if (lock) await this.host.releaseQuietly(lock);
    await this.done;
  }

  /** Ends the campaign without releasing: the manager's shutdown releases the lock itself. */
  stop(): void {
    if (this.ended) return;
    this.stopping.abort();
    this.host.ended(this);
    const error = this.endedError();
    for (const waiter of this.waiters) waiter.reject(error);
    this.waiters = [];
  }

  private async run(): Promise<void> {
    // Started by the constructor: the first request waits for the caller's synchronous code.
    await Promise.resolve();
    while (!this.ended) {
      try {
        const view = await this.host.watch(this.settings.name);
        if (this.ended) break;
        this.recovered();
        if (view.held && !view.orphan && view.unchangedMs < view.leaseMs) {
          // Reads timed by the lease: one per interval, and one when a silent leader's lease runs out.
          this.decided(null);
          await this.pause(Math.min(this.settings.watchMs, view.leaseMs - view.unchangedMs + 1));
          continue;
        }
        const lock = await this.host.tryAcquire(this.settings);
        if (!lock) {
          // Another follower was faster, or the leader wrote meanwhile.
          this.decided(null);
          await this.pause(this.settings.watchMs);
          continue;
        }
        if (this.ended) {
          await this.host.releaseQuietly(lock);
          break;
        }
        await this.serve(lock);
      } catch (error) {
        if (this.ended) break;
        this.undecided(error);
        await this.pause(this.failed(error));
      }
    }
  }

  /** Leads until the lock is lost, released or the campaign ends, telling the listeners. */
  private async serve(lock: Lock): Promise<void> {
    this.term = lock;
    this.decided(lock);
    const signal = lock.signal;
    this.lastSignal = signal;
    const waiters = this.waiters;
    this.waiters = [];
    for (const waiter of waiters) waiter.resolve(lock);
    const term = { key: this.settings.name, owner: lock.owner, fencingToken: lock.fencingToken };
    this.host.emit({ type: 'elected', ...term });
    this.tell('onElected', this.electedListeners, lock);
    if (!signal.aborted) await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
    this.term = undefined;
    const reason: unknown = signal.reason;
    if (!(reason instanceof LockLostError)) return;
    this.host.emit({ type: 'revoked', ...term, reason: reason.reason });
    this.tell('onRevoked', this.revokedListeners, reason);
  }

  /** Calls each listener, logging (never rethrowing) what one throws. */
  private tell<T>(kind: 'onElected' | 'onRevoked', listeners: Set<(value: T) => void>, value: T): void {
    for (const listener of [...listeners]) {
      try {
        listener(value);
      } catch (error) {
        this.host.logger.warn?.(LEADERSHIP_LISTENER_FAILED(this.settings.name, kind, error));
      }
    }
  }

  /** Resolves {@link firstRound}, unless it has settled. */
  private decided(lock: Lock | null): void {
    this.decide?.resolve(lock);
    this.decide = undefined;
  }

  /** Rejects {@link firstRound}, unless it has settled. */
  private undecided(reason: unknown): void {
    this.decide?.reject(reason);
    this.decide = undefined;
  }

  /** Logs a failed request (a warning for the first of a series) and returns the pause before the next. */
  private failed(error: unknown): number {
    const delayMs = this.backoff.next(this.settings.watchMs);
    const message = LEADERSHIP_RETRY(this.settings.name, error, delayMs);
    if (this.failing) this.host.logger.debug?.(message);
    else this.host.logger.warn?.(message);
    this.failing = true;
    return delayMs;
  }

  private recovered(): void {
    this.failing = false;
    this.backoff.reset();
  }

  /** Sleeps, or returns early when the campaign ends. */
  private async pause(ms: number): Promise<void> {
    await sleep(ms, this.stopping.signal).catch(() => undefined);
  }

  private endedError(): DynamoLockError {
    return new DynamoLockError(LEADERSHIP_ENDED(this.settings.name));
  }
}

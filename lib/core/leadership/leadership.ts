import type { Lock } from '../engine/lock';
import type { LockLostError } from '../../errors/lock.errors';
import type { LeaderCampaign } from './leader-campaign';

let create: (campaign: LeaderCampaign) => Leadership;
let campaignOf: (leadership: Leadership) => LeaderCampaign;

/** Creates the handle of a campaign (for the lock manager). */
export function createLeadership(campaign: LeaderCampaign): Leadership {
  return create(campaign);
}

/**
 * The outcome of a campaign's first round: the term's lock when elected, `null` when another
 * instance leads; rejects on the first failed request, or when the campaign ended first. For the
 * CLI's `lead --no-wait`; not part of the public API.
 */
export function firstRoundOf(leadership: Leadership): Promise<Lock | null> {
  return campaignOf(leadership).firstRound;
}

/**
 * This process's campaign for a leadership, from `lead(name)`: one instance of a fleet leads at a
 * time, holding an ordinary lock named `name` (with its fencing token), renewed by heartbeats; the
 * others follow, reading the lock once per `watchInterval`, and take over one lease after the
 * leader's last heartbeat, or within one interval when it resigns or shuts down gracefully.
 *
 * `isLeader` checks only local state (no request): the term's lease on the local monotonic clock.
 *
 * @example
 * ```ts
 * const leadership = locks.lead('scheduler');
 * const lock = await leadership.whenLeader();
 * while (leadership.isLeader) await runBatch({ fencingToken: lock.fencingToken, signal: leadership.signal });
 * ```
 */
export class Leadership implements AsyncDisposable {
  readonly #campaign: LeaderCampaign;

  static {
    create = (campaign) => new Leadership(campaign);
    campaignOf = (leadership) => leadership.#campaign;
  }

  /** Leaderships are created by `lead()` only. */
  private constructor(campaign: LeaderCampaign) {
    this.#campaign = campaign;
  }

  /** The leadership's name: the key of its lock. */
  get name(): string {
    return this.#campaign.settings.name;
  }

  /**
   * Whether this process leads now: elected, and the term's lease still valid on the local clock
   * (a process paused past its lease reads `false` at once). No request is sent.
   */
  get isLeader(): boolean {
    return this.#campaign.lock !== undefined;
  }

  /**
   * The lock of the current term while leading (its `fencingToken` orders the terms: pass it to the
   * resources the leader writes to); `undefined` otherwise.
   */
  get lock(): Lock | undefined {
    return this.#campaign.lock;
  }

  /**
   * Aborts when the current term ends (lease expired on the local clock, taken, gone, resigned, shut
   * down), with a `LockLostError` as `reason`. While not leading it is already aborted (the last
   * term's, or before the first election one with reason `gone`): read it anew after an election.
   */
  get signal(): AbortSignal {
    return this.#campaign.signal;
  }

  /** Whether the campaign was ended by `resign()` or at shutdown. */
  get resigned(): boolean {
    return this.#campaign.ended;
  }

  /**
   * Resolves with the term's lock once this process leads (at once if it does).
   * @throws DynamoLockError when the campaign ends first; the signal's reason when `signal` aborts.
   */
  whenLeader(signal?: AbortSignal): Promise<Lock> {
    return this.#campaign.whenLeader(signal);
  }

  /**
   * Calls `listener` each time this process is elected, with the term's lock. A listener that
   * throws is logged and ignored.
   * @returns a function that removes the listener.
   */
  onElected(listener: (lock: Lock) => void): () => void {
    return this.#campaign.onElected(listener);
  }

  /**
   * Calls `listener` each time a term of this process ends, with why (the `LockLostError` of the
   * term's signal: `expired`, `taken`, `gone`, `released` after `resign()`, `shutdown`).
   * @returns a function that removes the listener.
   */
  onRevoked(listener: (reason: LockLostError) => void): () => void {
    return this.#campaign.onRevoked(listener);
  }

  /**
   * Ends the campaign: stops watching and, when leading, releases the lock (one write), so a
   * follower takes over at its next read. A later `lead()` of the same name starts a new campaign.
   */
  resign(): Promise<void> {
    return this.#campaign.resign();
  }

  /** Resigns at the end of an `await using` block. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.resign();
  }
}

import { LockBusyError, LockConfigurationError, type LockUnavailableError } from '../../errors/lock.errors';
import { SEMAPHORE_BUSY, SEMAPHORE_LIMIT_MISMATCH } from '../../errors/lock.messages';
import type { AcquiredVia, LockEvent } from '../../interfaces/lock-event.interface';
import type { LockLogger } from '../../interfaces/lock-logger.interface';
import { CLAIM_LEASE_MS } from '../../store/mutex/mutex-store.protocol';
import { holderEntryOf, type SemaphoreHolderRecord, type SemaphoreRecord } from '../../store/semaphore/semaphore.record';
import type { SemaphoreStorePort, SemaphoreWriteResult } from '../../store/semaphore/semaphore-store.port';
import { jitter, monotonicNow, sleep } from '../../utils/clock';
import type { KeyHistory } from '../engine/key-history';
import type { LockTrace } from '../../observability/lock.telemetry';
import type { Waiter } from '../engine/lock-state';
import { RetryBackoff } from '../waiting/retry.backoff';
import { stepUntilGranted, unavailableError } from '../waiting/transient.retry';

/** Shortest pause between reads of a waiter. */
const POLL_MIN_MS = 5;
/** Growth of the pause while nothing moves. */
const POLL_GROWTH = 1.5;
/** While nothing moves, a waiter reads at least once per this many slot turnovers (hold / limit). */
const OVERDUE_TURNOVERS = 4;
/**
 * How long the waiter at the head of the line may stay silent while a slot is free before the
 * waiters behind pass it. The head reads at least three times in that span.
 */
export const SEMAPHORE_CLAIM_MS = CLAIM_LEASE_MS;

/** What a semaphore acquisition needs from its manager. */
export interface SemaphoreAcquisitionHost {
  readonly store: SemaphoreStorePort;
  /** Versions of holders and of the line's head as first seen, per key, across calls; hold times. */
  readonly history: KeyHistory;
  readonly options: { readonly logger: LockLogger; readonly maxPollMs: number; readonly requestTimeoutMs: number };
  /** The last item this process saw per key (a first write may try it before reading). */
  lastSeen(storedKey: string): SemaphoreRecord | undefined;
  remember(record: SemaphoreRecord): void;
  emit(event: LockEvent, trace?: LockTrace): void;
  /** Emits the `waiting` event of a waiter, once. */
  noteWaiting(waiter: Waiter): void;
}

/** A slot granted: the item as the grant wrote it, the holder's entry, and from when its lease counts. */
export interface SemaphoreGranted {
  record: SemaphoreRecord;
  holder: SemaphoreHolderRecord;
  /** Monotonic send time of the write that granted it (the earliest such write whose outcome was unknown). */
  sentAt: number;
  via: AcquiredVia;
}

/**
 * Takes one slot of a semaphore for one caller.
 *
 * - A free slot and nobody in line: one conditional write (after one read, the first time this
 *   process sees the key: the write is conditioned on the fencing counter it read).
 * - Otherwise the caller takes a ticket (one write) and reads the item when its turn is due, from
 *   its place in line, the free slots and how long holders keep theirs; admitted in ticket order
 *   (one write), so a caller that just released never jumps ahead of the line.
 * - A holder whose own version stayed unchanged for its lease on this host's monotonic clock is
 *   passed (one write conditioned on that version); so is a head of line that stays silent for
 *   {@link SEMAPHORE_CLAIM_MS} while a slot is free. No wall clocks are compared.
 * - A caller that gives up with a ticket marks it given up, so the line skips it at once.
 */
export class SemaphoreAcquisition {
  /** The item as last answered, or remembered from an earlier call; `fresh` when it is an answer of this acquisition. */
  private current: SemaphoreRecord | undefined;
  private fresh = false;
  private ticket: number | undefined;
  /** Monotonic send time of the earliest grant of unknown outcome. */
  private uncertainSince: number | undefined;
  /** A write was tried before reading (once per acquisition: a refusal without the item means a read next). */
  private blindTried = false;
  private passedHolder = false;
  private readonly backoff = new RetryBackoff();
  private streak = 0;
  private lastState = '';
  /** The last answer that showed the line, to measure its pace from (ms per ticket admitted). */
  private paceFrom: { head: number; at: number } | undefined;
  private paceMs: number | undefined;
  private readonly single: boolean;

  constructor(
    private readonly host: SemaphoreAcquisitionHost,
    private readonly waiter: Waiter,
    private readonly limit: number,
  ) {
    this.single = waiter.deadline <= waiter.startedAt;
    this.current = host.lastSeen(waiter.storedKey);
  }

  /** Runs until a slot is granted, the wait ends (busy or unavailable) or the caller gives up. */
  run(): Promise<SemaphoreGranted> {
    return stepUntilGranted({
      waiter: this.waiter,
      reporter: this.host,
      backoff: this.backoff,
      single: this.single,
      step: () => this.step(),
      failed: () => {
        this.fresh = false;
      },
      deadlineError: () => this.deadlineError(),
      cleanUp: () => this.leaveLine(),
    });
  }

  /** One step: a read, a write, or a pause and a read. Returns the grant when this caller got a slot. */
  private async step(): Promise<SemaphoreGranted | undefined> {
    const { waiter } = this;
    const record = this.current;
    if (!this.fresh) {
      // Unknown, or known only from before: one write on the chance of a free slot, else a read.
      if (!this.blindTried && this.ticket === undefined && (!record || looksFree(record, this.limit))) {
        this.blindTried = true;
        return this.grant(record, false);
      }
      // Seen with a line before: a waiting caller takes its ticket at once (the answer tells the rest).
      if (!this.single && this.ticket === undefined && record?.limit === this.limit && firstLiveTicket(record) !== undefined) {
        return void (await this.enqueue());
      }
      return void (await this.read());
    }
    if (!record) return this.grant(undefined, true);
    if (record.limit !== this.limit) {
      throw new LockConfigurationError(SEMAPHORE_LIMIT_MISMATCH(waiter.key, record.limit, this.limit));
    }
    const mine = holderEntryOf(record, waiter.token);
    if (mine) return this.granted(record, mine, this.uncertainSince ?? monotonicNow(), this.ticket === undefined ? 'free' : 'promotion');
    if (this.ticket !== undefined && record.head > this.ticket) this.ticket = undefined;
    const now = monotonicNow();
    const dead = this.deadHolder(record, now);
    if (record.count >= this.limit && dead) return void (await this.pass(dead));
    const firstLive = firstLiveTicket(record);
    if (this.ticket === undefined && firstLive === undefined && record.count < this.limit) return this.grant(record, false);
    if (this.ticket !== undefined && firstLive === this.ticket && record.count < this.limit) return this.grant(record, false);
    if (firstLive !== undefined && firstLive !== this.ticket && this.stalledHead(record, now)) return void (await this.passHead(record));
    this.noteHolder(record);
    if (this.single) throw this.busyError(record);
    if (this.ticket === undefined) return void (await this.enqueue());
    if (monotonicNow() >= waiter.deadline) throw this.deadlineError();
    await sleep(Math.min(this.pollDelay(record), waiter.deadline - monotonicNow()), waiter.cancel.signal);
    await this.read();
    return undefined;
  }

  private async read(): Promise<void> {
    const record = await this.host.store.read(this.waiter.storedKey);
    this.see(record, true);
  }

  /** Takes in an answer: the item now (`fresh`), or the item a failed write returned. */
  private see(record: SemaphoreRecord | undefined, fresh: boolean): void {
    this.current = record;
    this.fresh = fresh;
    if (record) this.host.remember(record);
    if (record && fresh) this.measurePace(record);
    const state = record ? `${record.head}/${record.count}/${record.fencingToken}` : '';
    this.streak = state === this.lastState ? this.streak + 1 : 0;
    this.lastState = state;
  }

  /** Takes in the answer of a write: its item when it succeeded; the blocking item, or nothing (read next), when it failed. */
  private after(result: SemaphoreWriteResult): SemaphoreRecord | undefined {
    if (result.ok) {
      this.see(result.record, true);
      return result.record;
    }
    if (result.current) this.see(result.current, true);
    else {
      // Refused without the item (dynalite): read it before anything else.
      this.current = undefined;
      this.fresh = false;
    }
    return undefined;
  }

  /** The grant write: a new item (`create`), a free slot with nobody in line, or this caller's turn in line. */
  private async grant(record: SemaphoreRecord | undefined, create: boolean): Promise<SemaphoreGranted | undefined> {
    const { waiter } = this;
    const sentAt = monotonicNow();
    let result: SemaphoreWriteResult;
    try {
      result = await this.host.store.grant({
        key: waiter.storedKey,
        limit: this.limit,
        token: waiter.token,
        owner: waiter.owner,
        leaseMs: waiter.leaseMs,
        create,
        line: this.ticket === undefined || !record ? undefined : { ticket: this.ticket, seenHead: record.head },
      });
    } catch (error) {
      // Perhaps applied: a later answer naming this caller as a holder counts its lease from now.
      this.uncertainSince ??= sentAt;
      throw error;
    }
    const written = this.after(result);
    const holder = holderEntryOf(written, waiter.token);
    if (!written || !holder) return undefined;
    const via: AcquiredVia = this.passedHolder ? 'takeover' : this.ticket === undefined ? 'free' : 'promotion';
    return this.granted(written, holder, this.uncertainSince ?? sentAt, via);
  }

  private granted(record: SemaphoreRecord, holder: SemaphoreHolderRecord, sentAt: number, via: AcquiredVia): SemaphoreGranted {
    this.ticket = undefined;
    return { record, holder, sentAt, via };
  }

  private async enqueue(): Promise<void> {
    const { waiter } = this;
    const result = await this.host.store.enqueue(waiter.storedKey, this.limit, waiter.token);
    const written = this.after(result);
    if (written) this.ticket = written.tail - 1;
    else if (!result.ok && result.current?.tailToken === waiter.token) this.ticket = result.current.tail - 1;
    if (this.ticket !== undefined) this.host.noteWaiting(waiter);
  }

  private async pass(dead: SemaphoreHolderRecord): Promise<void> {
    const result = await this.host.store.pass(this.waiter.storedKey, dead.token, dead.version);
    if (result.ok) {
      this.passedHolder = true;
      this.waiter.holder = { owner: dead.owner, fencingToken: dead.fencingToken, leaseDuration: dead.leaseMs };
    }
    this.after(result);
  }

  private async passHead(record: SemaphoreRecord): Promise<void> {
    this.after(await this.host.store.passHead(this.waiter.storedKey, record.head));
  }

  /** A holder (not this caller) whose version this process has seen unchanged for its whole lease. */
  private deadHolder(record: SemaphoreRecord, now: number): SemaphoreHolderRecord | undefined {
    const { history, waiter } = { history: this.host.history, waiter: this.waiter };
    let dead: SemaphoreHolderRecord | undefined;
    for (const holder of record.holders) {
      if (holder.token === waiter.token) continue;
      const seen = history.observe(
        `${waiter.storedKey}\u0000${holder.token}`,
        { version: holder.version, rvn: holder.version, leaseMs: holder.leaseMs, holder: holder.token },
        now,
      );
      if (!dead && now - seen.at >= holder.leaseMs) dead = holder;
    }
    return dead;
  }

  /** Whether the head of the line stayed at one ticket for the claim lease while a slot was free. */
  private stalledHead(record: SemaphoreRecord, now: number): boolean {
    if (record.count >= this.limit) return false;
    const seen = this.host.history.observe(
      `${this.waiter.storedKey}\u0000head`,
      { version: String(record.head), rvn: String(record.head), leaseMs: SEMAPHORE_CLAIM_MS, holder: undefined },
      now,
    );
    return now - seen.at >= SEMAPHORE_CLAIM_MS || record.gone.includes(record.head);
  }

  /**
   * The line's pace: the fastest time per ticket admitted between two of this acquisition's answers
   * (the fastest, so that a line slowed by late readers does not slow its readers further).
   */
  private measurePace(record: SemaphoreRecord): void {
    const now = monotonicNow();
    const from = this.paceFrom;
    this.paceFrom = { head: record.head, at: now };
    if (!from || record.head <= from.head) return;
    const sample = (now - from.at) / (record.head - from.head);
    this.paceMs = Math.min(this.paceMs ?? sample, sample);
  }

  /**
   * When to read next: when enough slots should have been released for this caller's turn (by
   * how long holders keep theirs, and by the pace the line was seen moving), sooner at the head.
   */
  private pollDelay(record: SemaphoreRecord): number {
    const ticket = this.ticket ?? record.tail;
    let ahead = 0;
    for (let t = record.head; t < ticket; t++) if (!record.gone.includes(t)) ahead++;
    const releasesNeeded = Math.max(0, ahead + 1 - (this.limit - record.count));
    const holdMs = record.lastHoldMs ?? this.host.history.holdEstimate(this.waiter.storedKey);
    // The last `limit` releases before this caller's turn are awaited at the rate slots turn over
    // (never late); further back, at the line's pace when it is slower.
    const perRelease = holdMs === undefined ? 0 : holdMs / this.limit;
    const far = Math.max(0, releasesNeeded - this.limit);
    const estimate = far * Math.max(perRelease, this.paceMs ?? 0) + Math.min(releasesNeeded, this.limit) * perRelease;
    // Nothing moved since the last read: back off, but not past a few slot turnovers when the
    // hold time is known (a slower reader would leave freed slots idle, which slows the line more).
    const backoff = POLL_MIN_MS * POLL_GROWTH ** Math.min(this.streak, 30);
    const growth = holdMs === undefined ? backoff : Math.min(backoff, Math.max(POLL_MIN_MS, OVERDUE_TURNOVERS * perRelease));
    const cap = ahead === 0 ? Math.min(this.host.options.maxPollMs, SEMAPHORE_CLAIM_MS / 3) : this.host.options.maxPollMs;
    return jitter(Math.min(cap, Math.max(POLL_MIN_MS, estimate, growth)), 0.1);
  }

  private noteHolder(record: SemaphoreRecord): void {
    const first = record.holders[0];
    if (first) this.waiter.holder = { owner: first.owner, fencingToken: first.fencingToken, leaseDuration: first.leaseMs };
  }

  /** A caller that ends without a slot marks its ticket given up, so the line skips it at once. */
  private async leaveLine(): Promise<void> {
    const ticket = this.ticket;
    if (ticket === undefined) return;
    this.ticket = undefined;
    await this.host.store.abandon(this.waiter.storedKey, ticket).catch(() => undefined);
  }

  private busyError(record: SemaphoreRecord | undefined): LockBusyError {
    const { waiter } = this;
    const waited = Math.round(monotonicNow() - waiter.startedAt);
    return new LockBusyError(
      SEMAPHORE_BUSY(waiter.key, this.limit, record?.count ?? 0, this.single ? undefined : waited),
      waiter.key,
      waiter.holder,
      waited,
    );
  }

  /** At the deadline: busy when an answer showed the semaphore full or a line, else unavailable (an outage). */
  private deadlineError(): LockBusyError | LockUnavailableError {
    const { waiter } = this;
    if (this.current && this.current.limit === this.limit && waiter.lastError === undefined) return this.busyError(this.current);
    if (waiter.holder) return this.busyError(this.current);
    return unavailableError(waiter, this.host.options.requestTimeoutMs, waiter.lastError);
  }
}

/** Whether a record (perhaps from before) shows a free slot and nobody in line. */
function looksFree(record: SemaphoreRecord, limit: number): boolean {
  return record.count < limit && firstLiveTicket(record) === undefined;
}

/** The first ticket in line not given up, or `undefined` when nobody waits. */
function firstLiveTicket(record: SemaphoreRecord): number | undefined {
  for (let t = record.head; t < record.tail; t++) if (!record.gone.includes(t)) return t;
  return undefined;
}

import type { LockLogger } from '../../interfaces/lock-logger.interface';
import type { LockBusyError, LockHolder, LockUnavailableError } from '../../errors/lock.errors';
import { TRANSIENT_RETRY } from '../../errors/lock.messages';
import { isHeld, type LockRecord } from '../../store/mutex/mutex.record';
import { CLAIM_LEASE_MS, claimLeaseOf, type WriteResult } from '../../store/mutex/mutex-store.protocol';
import type { MutexStorePort } from '../../store/mutex/mutex-store.port';
import { isTransientError } from '../../store/dynamo/transient-error';
import { nextRetryMs, RETRY_MIN_MS } from '../../utils/backoff';
import { jitter, monotonicNow, sleep } from '../../utils/clock';
import { type KeyHistory, type RecordObservation, silentMs, versionOf } from '../engine/key-history';
import type { AcquiredVia, LockEvent } from '../../interfaces/lock-event.interface';
import type { LockTrace } from '../../observability/lock.telemetry';
import { type HeldLease, type Waiter, writeOf } from '../engine/lock-state';
import { ReadScheduler } from '../waiting/read.scheduler';

/** What a remote acquisition needs from the manager. */
export interface AcquisitionHost {
  readonly store: MutexStorePort;
  readonly history: KeyHistory;
  readonly options: { readonly logger: LockLogger; readonly leaseMs: number; readonly maxPollMs: number };
  /** Aborts at shutdown: a place in line kept for a caller that gave up is dropped then. */
  readonly closing: AbortSignal;
  /** Starts holding the lock described by `record`, for `leaseMs` from monotonic time `validFrom`. */
  hold(waiter: Waiter, record: LockRecord, validFrom: number, via: AcquiredVia, leaseMs: number): HeldLease;
  emit(event: LockEvent, trace?: LockTrace): void;
  /** Emits the `waiting` event of a waiter, once. */
  noteWaiting(waiter: Waiter): void;
  busyError(waiter: Waiter): LockBusyError;
  /** The error of a wait that ended: busy when a holder was seen, else unavailable (an outage). */
  deadlineError(waiter: Waiter): LockBusyError | LockUnavailableError;
  /** The first caller of this process still waiting for `storedKey`, to take over a ticket. */
  nextWaiter(storedKey: string): Waiter | undefined;
}

/**
 * Far back, the longest pause between timing reads, as a share of the claim lease: a waiter served
 * while it sleeps reads before the others could pass it (a claim lease after they see it).
 */
const TIMING_READ_SHARE = 0.75;

type Step =
  | { kind: 'free' }
  /** Take back a token of this process that no caller holds (an orphan). */
  | { kind: 'handover'; from: string }
  /** Pass the holder of `seen`, silent for its whole lease; `mine`: the target is this waiter's own ticket. */
  | { kind: 'skip'; target: number; mine: boolean; seen: LockRecord }
  | { kind: 'enqueue' }
  | { kind: 'mark-alive' }
  | { kind: 'wait' };

/**
 * Takes a lock from DynamoDB for the head of this process's local queue for a key.
 *
 * - Free lock: one conditional write.
 * - Busy lock: the waiter takes a ticket (one write that moves the item's `tail` on), and the
 *   holder's release serves the next ticket in the same write that frees the lock (`head` moves
 *   on). The promoted waiter learns it from a read and holds without writing: one write to queue,
 *   one to release, whatever the number of waiters, and waiters are served in ticket order across
 *   processes. The item holds two counters, never a list, so no write or read grows with the queue.
 * - While queued, the waiter reads the item when the release its turn depends on is due, from
 *   its position and how long this key's holders keep it: a few reads per acquisition.
 * - A holder, or a promoted waiter, that stays silent for its lease on this host's monotonic
 *   clock is passed (no wall clocks compared): waiters that see it stall answer a roll call, and the
 *   write that passes it goes to the first live one, past any number of dead tickets at once.
 * - A caller that gives up leaves its ticket to the next caller of this process for the key, or
 *   keeps it quietly and releases the lock as soon as it is served, so the line never waits on it.
 */
export class RemoteAcquisition {
  private current: LockRecord | undefined;
  private known = false;
  /** Queue up at once: the key was just seen busy (a free attempt would be a failed write). */
  private enqueueFirst = false;
  /** The version being watched, its lease, and when this process first saw it (kept in the key's history). */
  private observed: RecordObservation | undefined;
  /**
   * The item as the watch of {@link observed} started from it: the last strongly consistent view,
   * or a newer eventually consistent copy that showed the line moved. A roll call or a pass is
   * written on its version (on an older one it could only fail).
   */
  private watched: LockRecord | undefined;
  /** This process's ticket: its place in line, while it can still be served. */
  private ticket: number | undefined;
  /** An enqueue of this waiter was sent: the item's `tailToken` names it when it took the last ticket. */
  private enqueued = false;
  /** The claim lease the ticket was taken with (the item's claim leases include it while it waits). */
  private ticketClaimMs = CLAIM_LEASE_MS;
  /** The version this waiter answered the roll call of. */
  private markedAlive: string | undefined;
  /**
   * An eventually consistent read showed the item otherwise than the watched version (written
   * since, or free, or gone) without the line moving: the next read near the turn is strongly
   * consistent, so that the watch follows the item.
   */
  private recheck = false;
  /**
   * The earliest time a write may have made this waiter the holder: the send time of the last
   * answer that showed another holder, or of the enqueue that found the lock free.
   */
  private lastNotMineAt = monotonicNow();
  /** How the lock was granted by a write answered too late to trust its lease (see {@link loop}). */
  private grantedVia: AcquiredVia | undefined;
  /** This acquisition passed a silent holder and left the lock free: its next grant is a takeover. */
  private passedHolder = false;
  private uncertain = false;
  /** The caller gave up and nobody of this process took the ticket over: served, it releases at once. */
  private quiet = false;
  private retryMs = RETRY_MIN_MS;
  /** When to read next. */
  private readonly schedule: ReadScheduler;

  constructor(
    private readonly host: AcquisitionHost,
    private waiter: Waiter,
  ) {
    this.observed = host.history.observation(waiter.storedKey);
    this.schedule = new ReadScheduler(host.history, waiter.storedKey, host.options.maxPollMs, monotonicNow());
    // A write of this waiter before this acquisition (a hand-over) may hold the item already:
    // whatever ends the acquisition, clean-up looks.
    this.uncertain = waiter.uncertainSince !== undefined;
  }

  /** The caller served: the one this acquisition started for, or a later one that took over its ticket. */
  get served(): Waiter {
    return this.waiter;
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
    this.enqueueFirst = host.history.probablyBusy(waiter.storedKey, monotonicNow()) && waiter.deadline > waiter.startedAt;
    for (;;) {
      this.checkCaller();
      const mine = this.heldByMe();
      if (mine) {
        const held = await this.confirm(mine);
        if (held) return held;
        continue;
      }
      const step = this.nextStep();
      if (step.kind === 'wait') {
        const far = this.schedule.readsFar(this.ticket, monotonicNow(), this.claimMs() / 2);
        await this.pause(this.pollDelay(far));
        // The pass of a silent head is a write conditioned on the version watched: the waiter it
        // goes to sends it as soon as it is due, without a read first (a version changed since
        // makes it fail, and its answer shows the item). The others read first, and mostly find
        // it passed: a read costs less than a failed write.
        if (this.passDue() && !this.recheck && this.passesToSelf()) continue;
        // Strongly consistent when the schedule asks, and near the turn when no watch runs, when
        // the item was seen otherwise at the same place in line, or when the roll call or the
        // pass of a silent head falls due by the time the read is answered (far back, an
        // eventually consistent read shows first whether the line moved; a roll call or a pass
        // is a write conditioned on the version, never a risk).
        const strong = this.schedule.readsStrong || (!far && (!this.observed || this.recheck || this.watchDue()));
        await (strong ? this.read() : this.peek());
        continue;
      }
      if (step.kind === 'mark-alive') {
        await this.markAlive();
        continue;
      }
      if (step.kind === 'enqueue') {
        await this.enqueue();
        continue;
      }
      const held = await this.write(step);
      if (held) return held;
    }
  }

  /**
   * When the caller gave up: a later caller of this process takes the ticket over, or the
   * acquisition goes on quietly (its ticket is served, then released at once); without a ticket it
   * ends. At shutdown it ends whatever it holds.
   */
  private checkCaller(): void {
    this.host.closing.throwIfAborted();
    if (!this.waiter.cancel.signal.aborted) return;
    if (this.ticket === undefined) this.waiter.cancel.signal.throwIfAborted();
    // A caller whose own token may be in the item (a write of unknown outcome) keeps the ticket.
    const next = this.waiter.uncertainSince === undefined ? this.host.nextWaiter(this.waiter.storedKey) : undefined;
    if (next && next !== this.waiter) {
      this.waiter = next;
      this.quiet = false;
      this.grantedVia = undefined;
      this.schedule.restart();
      this.host.noteWaiting(next);
      return;
    }
    this.quiet = true;
  }

  /** Sleeps; a caller giving up meanwhile ends it early (then {@link checkCaller} decides). */
  private async pause(ms: number): Promise<void> {
    try {
      const due = monotonicNow() + ms;
      await sleep(ms, this.quiet ? this.host.closing : this.waiter.cancel.signal);
      this.host.history.recordTimerLateness(monotonicNow() - due);
    } catch (error) {
      if (this.host.closing.aborted || this.ticket === undefined) throw error;
    }
  }

  /** Whether the last view shows this waiter holding: by its token, or as the promoted owner of the ticket served. */
  private heldByMe(): 'token' | 'ticket' | undefined {
    const { current } = this;
    if (!this.known || !current) return undefined;
    if (current.token === this.waiter.token) return 'token';
    if (this.ticket !== undefined && current.token === undefined && current.head === this.ticket && isHeld(current)) return 'ticket';
    return undefined;
  }

  /**
   * The last view shows this waiter holding. Its lease counts from the earliest write that could
   * have granted it; when much of it is gone already (a slow answer, a pause), one heartbeat first
   * makes it fresh or shows it was passed. A promoted waiter holds without writing on the claim
   * lease (its heartbeats write its token and own lease), unless it renews by hand or has data:
   * then it writes them before the caller gets the lock, so the item shows them while it is held.
   */
  private async confirm(kind: 'token' | 'ticket'): Promise<HeldLease | undefined> {
    const { waiter, host, current } = this;
    const record = current!;
    const via = this.grantedVia ?? (kind === 'ticket' ? 'promotion' : this.passedHolder ? 'takeover' : 'free');
    const leaseMs = kind === 'ticket' ? this.claimMs() : Math.min(record.leaseMs ?? waiter.leaseMs, waiter.leaseMs);
    const mustWrite = kind === 'ticket' && (!waiter.heartbeat || waiter.data !== undefined);
    const from = this.validFrom();
    if (!mustWrite && from + leaseMs / 2 > monotonicNow()) return host.hold(waiter, record, from, via, leaseMs);
    const sentAt = monotonicNow();
    const result = await this.request(() =>
      this.sendWrite(sentAt, () =>
        host.store.heartbeat({
          key: waiter.storedKey,
          holding: { token: waiter.token, ticket: this.ticket },
          owner: waiter.owner,
          leaseMs: waiter.leaseMs,
          ttlLeaseMs: waiter.leaseMs,
          data: waiter.data,
        }),
      ),
    );
    if (result?.ok) return host.hold(waiter, result.record, sentAt, via, waiter.leaseMs);
    // Passed or gone: whatever grants the lock later is not that write.
    if (result) this.grantedVia = undefined;
    // A server that does not return the item needs a read, or the view would still show this
    // waiter as the holder and the loop would try again at once.
    if (result && !result.current) await this.read();
    return undefined;
  }

  /**
   * What a promoted waiter holds for before it writes: its claim lease, and never more than the
   * one its ticket was taken with (a later caller of this process may have taken the ticket over).
   */
  private claimMs(): number {
    return Math.min(claimLeaseOf(this.waiter.leaseMs), this.ticketClaimMs);
  }

  /**
   * The earliest time a write of this waiter may have made it the holder: the last answer that
   * showed another holder, or an earlier write whose outcome is unknown (a lost answer, a
   * hand-over that failed that way). A lease found in the item counts from then.
   */
  private validFrom(): number {
    return Math.min(this.lastNotMineAt, this.waiter.uncertainSince ?? Number.POSITIVE_INFINITY);
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
    if (!this.known || !current) return { kind: this.enqueueFirst ? 'enqueue' : 'free' };
    if (!isHeld(current)) return { kind: 'free' };
    const now = monotonicNow();
    // Seen unchanged for a whole lease, by this call or an earlier one of this process (a single
    // attempt too): its holder, or a promoted waiter that never wrote, is gone.
    if (this.observed && this.passDue()) {
      // A single attempt may pass what an earlier call saw: that is the previous holder.
      waiter.holder ??= this.observed.holderInfo;
      return this.skipStep(this.watched ?? current);
    }
    const orphanRvn = current.token ? this.host.history.orphanAt(waiter.storedKey, current.token, current.rvn) : undefined;
    if (current.token && orphanRvn !== undefined) {
      // Our own token that no caller holds (a lease that ran out, a failed release, a late
      // hand-over): take it now. A lease that was handed out is taken only at the version this
      // process left: renewed since (a lease id renewed elsewhere), it is a live holder.
      return orphanRvn === null ? { kind: 'handover', from: current.token } : this.skipStep(current);
    }
    if (this.ticket === undefined) {
      // Checked before queueing: a single attempt, or a wait that is over, does not take a ticket.
      if (now >= waiter.deadline) throw this.host.busyError(waiter);
      return { kind: 'enqueue' };
    }
    if (this.shouldMarkAlive(now, this.watched ?? current)) return { kind: 'mark-alive' };
    return { kind: 'wait' };
  }

  /** Passing the holder of `seen`: to the smallest ticket that answered the roll call, this waiter's own, or the next one. */
  private skipStep(seen: LockRecord): Extract<Step, { kind: 'skip' }> {
    const candidate = Math.min(seen.live ?? Number.POSITIVE_INFINITY, this.ticket ?? Number.POSITIVE_INFINITY);
    const target = Number.isFinite(candidate) ? candidate : (seen.head ?? 0) + 1;
    return { kind: 'skip', target, mine: target === this.ticket, seen };
  }

  /** Whether to answer the roll call now: the watched head (of `seen`) stalled for half its lease. */
  private shouldMarkAlive(now: number, seen: LockRecord): boolean {
    const { observed } = this;
    return observed !== undefined && this.answersRollCall(seen) && now - observed.at >= observed.leaseMs / 2;
  }

  /**
   * Whether this waiter answers the roll call of the watched head, as `seen` shows it: a ticket
   * behind that head (its own is passed, never chosen) that has not answered yet, with no smaller
   * ticket answered (then the pass goes there, and this waiter only waits for it).
   */
  private answersRollCall(seen: LockRecord | undefined): boolean {
    const { observed, ticket } = this;
    if (!seen || !observed || ticket === undefined || observed.version === this.markedAlive) return false;
    if (seen.head === undefined || ticket <= seen.head) return false;
    return seen.live === undefined || seen.live > ticket;
  }

  /** Takes a ticket. The answer shows the line: this waiter holds already when its ticket is served. */
  private async enqueue(): Promise<void> {
    const { waiter, host } = this;
    const sentAt = monotonicNow();
    this.enqueued = true;
    this.ticketClaimMs = claimLeaseOf(waiter.leaseMs);
    const result = await this.request(() =>
      host.store.enqueue({ key: waiter.storedKey, token: waiter.token, claimMs: this.ticketClaimMs }),
    );
    if (!result) return;
    if (!result.ok && !result.current) {
      await this.read();
      return;
    }
    if (this.ticket === undefined) return;
    if (result.ok && this.current?.head === this.ticket) {
      // The lock was free: this ticket is served from the enqueue itself. (A retry that failed
      // and shows the ticket served was served earlier, perhaps long before it was sent: the
      // lease counts from the last answer that showed another holder.)
      this.lastNotMineAt = Math.max(this.lastNotMineAt, sentAt);
      this.grantedVia = this.passedHolder ? 'takeover' : 'free';
    } else if (this.current?.head !== this.ticket) host.noteWaiting(waiter);
  }

  /** Answers the roll call of the stalled head, at the version watched, with this waiter's ticket. */
  private async markAlive(): Promise<void> {
    const { waiter, host, current, observed } = this;
    const seen = this.watchedView;
    const result = await this.request(() => host.store.markAlive(waiter.storedKey, seen?.rvn ?? '', this.ticket ?? 0), 'none');
    // No answer (a transient error, retried after its pause): applied or not, the next turn
    // answers again, or the pass could go past this ticket. Answered: once per version.
    if (!result) return;
    this.markedAlive = observed?.version;
    if (!result.ok || !seen) return;
    this.watched = { ...seen, live: this.ticket };
    if (seen === current) this.current = this.watched;
  }

  /** A write that may grant the lock: free, taking back an orphan, or passing a silent holder. */
  private async write(step: Extract<Step, { kind: 'free' | 'handover' | 'skip' }>): Promise<HeldLease | undefined> {
    const { waiter, host, current } = this;
    const sentAt = monotonicNow();
    const result = await this.request(() =>
      this.sendWrite(sentAt, () => {
        if (step.kind === 'free') return host.store.acquire({ ...writeOf(waiter), condition: { kind: 'free' } });
        if (step.kind === 'handover')
          return host.store.acquire({ ...writeOf(waiter), condition: { kind: 'handover', from: { token: step.from } } });
        return host.store.skip({
          key: waiter.storedKey,
          rvn: step.seen.rvn ?? '',
          live: step.seen.live,
          target: step.target,
          holder: step.mine ? { token: waiter.token, owner: waiter.owner, leaseMs: waiter.leaseMs, data: waiter.data } : undefined,
        });
      }),
    );
    const passed = step.kind === 'skip' ? step.seen : current;
    if (result?.ok && step.kind !== 'free' && passed?.token) host.history.dropOrphan(waiter.storedKey, passed.token);
    if (result?.ok && step.kind === 'skip' && !isHeld(result.record)) this.passedHolder = true;
    if (result?.ok && result.record.token === waiter.token) {
      const via: AcquiredVia = step.kind === 'free' ? (this.passedHolder ? 'takeover' : 'free') : 'takeover';
      // The write set a new record version, so the lease counts from when it was sent. When the
      // answer took so long (the SDK's own retries, a slow server) that half of it is gone, the
      // next turn renews it with one heartbeat before the caller gets it, or finds it taken.
      if (sentAt + waiter.leaseMs / 2 > monotonicNow()) return host.hold(waiter, result.record, sentAt, via, waiter.leaseMs);
      this.grantedVia = via;
    }
    // Servers that do not return the blocking item (dynalite) need a read.
    if (result && !result.ok && !result.current) await this.read();
    return undefined;
  }

  /**
   * Sends one request and takes in what its answer shows (`answer`: the item written or blocking
   * the write, the item read, or nothing on success). Transient errors are retried here with
   * backoff until the deadline (for ever, quietly, while a ticket is kept for nobody); a write
   * that failed that way may have been applied, which a later view reveals.
   */
  private async request(
    send: () => Promise<WriteResult>,
    answer: 'item' | 'read' | 'none' | 'peek' = 'item',
  ): Promise<WriteResult | undefined> {
    const sentAt = monotonicNow();
    try {
      const result = await send();
      this.schedule.noteRoundTrip(monotonicNow() - sentAt);
      this.retryMs = RETRY_MIN_MS;
      // Answered: whatever failed before is over (callers behind this one are not in an outage).
      this.waiter.lastError = undefined;
      // A write that asks for nothing back ('none') answers a success with the key alone.
      if (answer === 'peek') return result;
      if (result.ok && answer !== 'none') this.see(result.record, sentAt);
      else if (!result.ok && (result.current || answer === 'read')) this.see(result.current, sentAt);
      return result;
    } catch (error) {
      if (!isTransientError(error)) throw error;
      this.uncertain = true;
      this.waiter.lastError = error;
      const deadline = this.quiet ? Number.POSITIVE_INFINITY : this.waiter.deadline;
      if (monotonicNow() >= deadline) throw this.host.deadlineError(this.waiter);
      const pause = Math.round(Math.min(jitter(this.retryMs), Math.max(0, deadline - monotonicNow())));
      this.host.options.logger.warn?.(TRANSIENT_RETRY('Acquisition', this.waiter.key, error, pause));
      this.host.emit(
        { type: 'retry', key: this.waiter.key, owner: this.waiter.owner, operation: 'acquire', error, delayMs: pause },
        this.waiter.trace,
      );
      await this.pause(pause);
      this.retryMs = nextRetryMs(this.retryMs);
      return undefined;
    }
  }

  /** One strongly consistent read of the item, taken into the view. */
  private read(): Promise<WriteResult | undefined> {
    return this.request(() => this.host.store.read(this.waiter.storedKey).then((current) => ({ ok: false as const, current })), 'read');
  }

  /**
   * One eventually consistent read: where the line is and how fast it moves. It may show the
   * item a little old, so a lease never counts from it ({@link validFrom} is the last strongly
   * consistent answer that showed another holder). It may show this waiter served: a release or
   * a pass did serve its ticket, after that strong answer, so holding on that lease is safe
   * however old the copy is (when much of it is gone, {@link confirm} writes first, on the
   * condition that the ticket is still served). A newer version shown starts its watch (see below).
   */
  private async peek(): Promise<void> {
    const { waiter } = this;
    const result = await this.request(
      () => this.host.store.read(waiter.storedKey, 'eventual').then((current) => ({ ok: false as const, current })),
      'peek',
    );
    if (!result || result.ok) return;
    const record = result.current;
    if (record && this.ticket !== undefined && record.head === this.ticket && record.token === undefined && isHeld(record)) {
      this.current = record;
      this.known = true;
      if (this.observed) this.schedule.notePromotion(record);
      this.stopWatch();
      return;
    }
    if (!this.schedule.noteTimingView(record, monotonicNow(), this.ticket)) {
      if (this.observed && record?.rvn !== this.observed.rvn) this.recheck = true;
      return;
    }
    // The line moved: the version watched is gone (a pass or a roll call at it would only fail),
    // and the one shown is newer than any seen. Its watch starts now: however old the copy, that
    // version was written before this answer, so a lease counted from here ends after its
    // holder's (a pass is conditioned on the version, and fails if it changed meanwhile).
    if (record?.rvn === undefined || this.observed?.rvn === record.rvn) return;
    waiter.holder = holderOf(record);
    this.startWatch(record, record.rvn, monotonicNow());
  }

  /** Updates the view: this waiter's ticket, the watched version, holder changes and their timing. */
  private see(record: LockRecord | undefined, sentAt: number): void {
    const now = monotonicNow();
    const { waiter, host } = this;
    const current = record ?? { key: waiter.storedKey };
    this.current = current;
    this.known = true;
    this.recheck = false;
    // The last ticket taken is this waiter's (a retried enqueue learns it from the item too).
    if (this.ticket === undefined && this.enqueued && current.tailToken === waiter.token && current.tail !== undefined) {
      this.ticket = current.tail - 1;
      this.enqueued = false;
    }
    // Passed without being served (a dead-ticket roll call it missed, an item deleted): queue anew.
    if (this.ticket !== undefined && (current.head === undefined || current.head > this.ticket)) this.ticket = undefined;
    const mine = this.heldByMe();
    if (mine) {
      // Served by a release while watching: how late it was learned times others' reads.
      if (mine === 'ticket' && this.observed) this.schedule.notePromotion(current);
      this.stopWatch();
      return;
    }
    this.lastNotMineAt = sentAt;
    const held = isHeld(current);
    if (held) {
      waiter.holder = holderOf(current);
      host.history.recordBusy(waiter.storedKey, now);
    }
    this.schedule.noteView(current, now, this.ticket);
    // For the busy error: when this holder will likely release (a hint for callers' retries).
    if (held) waiter.expectedReleaseAt = this.schedule.expectedRelease(now);
    if (!held || current.rvn === undefined) {
      this.stopWatch();
      return;
    }
    this.startWatch(current, current.rvn, now);
  }

  /**
   * Watches the version `record` shows, from `now` (or from when this process first saw it): a
   * holder that wrote promised its lease; a promoted waiter that has not written, its claim lease.
   */
  private startWatch(record: LockRecord, rvn: string, now: number): void {
    const seen = { ...versionOf({ ...record, rvn }, this.host.options.leaseMs), holderInfo: this.waiter.holder };
    this.observed = this.host.history.observe(this.waiter.storedKey, seen, now);
    this.watched = record;
  }

  /** No version to watch (free, gone, or this waiter's own). */
  private stopWatch(): void {
    this.observed = undefined;
    this.watched = undefined;
    this.host.history.forgetObservation(this.waiter.storedKey);
  }

  /** The item as the watch started from it (see {@link watched}), else the last view. */
  private get watchedView(): LockRecord | undefined {
    return this.watched ?? this.current;
  }

  /**
   * How long to wait before the next read: as the schedule times it, and never past the roll call
   * or the pass of a head that stalls, nor past the deadline.
   */
  private pollDelay(far: boolean): number {
    const now = monotonicNow();
    // A promoted lease counts from the last strongly consistent answer that showed another
    // holder: one older than a quarter of the claim lease would make the waiter write soon after
    // it holds (its first heartbeat falls due a third of the way through).
    const claimMs = this.claimMs();
    const plan = {
      ticket: this.ticket,
      viewAgeMs: now - this.lastNotMineAt,
      viewValidMs: claimMs / 4,
      far,
      farReadMs: claimMs / 2,
      timingReadMs: TIMING_READ_SHARE * claimMs,
    };
    let delay = this.schedule.delay(now, plan);
    const due = this.watchDueAt(far);
    if (due !== undefined) delay = Math.min(delay, Math.max(0, due - now));
    if (!this.quiet) delay = Math.min(delay, this.waiter.deadline - now);
    return Math.max(0, delay);
  }

  /**
   * When the watched head's roll call falls due (a waiter that sees it stall answers half-way
   * through its lease, wherever it is in line, so the pass goes to the first live ticket), or its
   * pass (answered already, or a smaller ticket did). A timing read far back, in a line seen
   * moving, waits for three quarters of the lease instead: the line has mostly moved on by then,
   * and if it stalled, that read shows it and the answer goes at once. (One that saw the stall
   * later than another waiter behind it by more than a quarter of the lease may be passed over,
   * and queue anew: only when every ticket ahead of it is dead.)
   */
  private watchDueAt(timing = false): number | undefined {
    const { observed } = this;
    if (!observed) return undefined;
    if (!this.answersRollCall(this.watchedView)) return observed.at + observed.leaseMs;
    return observed.at + (timing ? TIMING_READ_SHARE : 0.5) * observed.leaseMs;
  }

  /** Whether the pass of the watched head goes to this waiter's ticket, by the view the watch started from. */
  private passesToSelf(): boolean {
    const seen = this.watchedView;
    return seen !== undefined && this.skipStep(seen).mine;
  }

  /** Whether the watched head has been silent for its whole lease: its pass is due. */
  private passDue(): boolean {
    const { observed } = this;
    return observed !== undefined && monotonicNow() - observed.at >= observed.leaseMs;
  }

  /** Whether the roll call or the pass falls due by the time a read sent now is answered. */
  private watchDue(): boolean {
    const due = this.watchDueAt();
    return due !== undefined && monotonicNow() + this.host.history.roundTrip() >= due;
  }

  /**
   * After a failure, a shutdown or a caller that gave up without a ticket: if a write of unknown
   * outcome or the ticket made this waiter the holder meanwhile, returns the lock (the manager
   * passes it on), or gives it back at once when half its lease is gone. A ticket that is still
   * waiting is left to be passed by the others (at shutdown only: a caller that gives up keeps it).
   */
  private async cleanUp(): Promise<HeldLease | undefined> {
    if (this.ticket === undefined && !this.uncertain) return undefined;
    const { store } = this.host;
    const { waiter } = this;
    // The token may hold the lock while no caller waits for it.
    this.host.history.addOrphan(waiter.storedKey, waiter.token);
    try {
      const sentAt = monotonicNow();
      const record = await store.read(waiter.storedKey);
      this.current = record;
      this.known = true;
      const mine = this.heldByMe();
      if (!mine) {
        this.lastNotMineAt = sentAt;
        return undefined;
      }
      const leaseMs = mine === 'ticket' ? this.claimMs() : Math.min(record?.leaseMs ?? waiter.leaseMs, waiter.leaseMs);
      const from = this.validFrom();
      if (waiter.settled || from + leaseMs / 2 > monotonicNow()) return this.host.hold(waiter, record!, from, 'promotion', leaseMs);
      await store.release(waiter.storedKey, { token: waiter.token, ticket: this.ticket }, waiter.leaseMs);
    } catch {
      // Best effort: a ticket left behind is passed by the others after one claim lease.
    }
    return undefined;
  }
}

/** Who holds the lock a record shows, as the busy error and the takeover event name it. */
function holderOf(record: LockRecord): LockHolder {
  return { owner: record.owner, fencingToken: record.fencingToken, leaseDuration: record.leaseMs ?? silentMs(record) };
}

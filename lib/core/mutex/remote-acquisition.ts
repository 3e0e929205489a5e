import { hasLeft, isHeld, type LeftRun, leftRun } from '../../store/mutex/mutex.record';
import { claimLeaseOf, type WriteResult } from '../../store/mutex/mutex-store.protocol';
import { monotonicNow, sleep } from '../../utils/clock';
import type { AcquiredVia } from '../../interfaces/lock-event.interface';
import { type HeldLease, type Waiter, writeOf } from '../engine/lock-state';
import type { AcquisitionHost, Step } from './acquisition.host';
import { cleanUpAcquisition } from './acquisition.cleanup';
import { skipTarget } from './head.watch';
import { LineView } from './line.view';
import { RetryBackoff } from '../waiting/retry.backoff';
import { reportRetry, takeTransient } from '../waiting/transient.retry';

/**
 * Takes a lock from DynamoDB for the head of this process's local queue for a key.
 *
 * - Free lock: one conditional write.
 * - Busy lock: the waiter takes a ticket (a write that moves the item's `tail` on); a release
 *   serves the next ticket in the write that frees the lock (`head` moves on), and the promoted
 *   waiter learns it from a read: one write to queue, one to release, in ticket order across
 *   processes. The item holds counters and a small bounded set, never a list of waiters.
 * - While queued, the waiter reads the item when its turn is due, from its position and how long
 *   this key's holders keep it: a few reads per acquisition.
 * - A holder, or a promoted waiter, silent for its lease on this host's monotonic clock is passed:
 *   waiters answer a roll call, and the pass goes to the first live one, past every dead ticket.
 * - A caller that gives up leaves its ticket to the next caller of this process for the key, or
 *   leaves the line (its ticket, marked left, is passed at once by whoever sees it served). Should
 *   the leave not land, it keeps the ticket quietly and releases the lock as soon as it is served.
 */
export class RemoteAcquisition {
  /** Queue up at once: the key was just seen busy (a free attempt would be a failed write). */
  private enqueueFirst = false;
  /** What this waiter knows of the item and the line. */
  private readonly line: LineView;
  /** How the lock was granted by a write answered too late to trust its lease (see {@link loop}). */
  private grantedVia: AcquiredVia | undefined;
  /** This acquisition passed a silent holder and left the lock free: its next grant is a takeover. */
  private passedHolder = false;
  private uncertain = false;
  /** The caller gave up and nobody of this process took the ticket over: served, it releases at once. */
  private quiet = false;
  /** A quiet acquisition leaves the line: `due` until a leave was answered (`done`), whatever it said. */
  private leave: 'none' | 'due' | 'done' = 'none';
  private readonly backoff = new RetryBackoff();

  constructor(
    private readonly host: AcquisitionHost,
    private waiter: Waiter,
  ) {
    this.line = new LineView(host.history, waiter.storedKey, host.options);
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
      const promoted = await cleanUpAcquisition(this.host, this.waiter, this.line, this.uncertain);
      if (promoted) return promoted;
      throw error;
    }
  }

  private async loop(): Promise<HeldLease> {
    const { waiter, host } = this;
    this.enqueueFirst = host.history.probablyBusy(waiter.storedKey, monotonicNow()) && waiter.deadline > waiter.startedAt;
    for (;;) {
      this.checkCaller();
      const mine = this.line.heldByMe(this.waiter.token);
      if (mine) {
        const held = await this.confirm(mine);
        if (held) return held;
        continue;
      }
      const step = this.nextStep();
      if (step.kind === 'wait') {
        const far = this.line.schedule.readsFar(this.line.ticket, monotonicNow(), this.line.claimMs(this.waiter.leaseMs) / 2);
        await this.pause(this.line.pollDelay(this.waiter, far, this.quiet));
        // The pass of a silent head is a write conditioned on the version watched: the waiter it
        // goes to sends it as soon as it is due, without a read first (a version changed since
        // makes it fail, and its answer shows the item). The others read first, and mostly find
        // it passed: a read costs less than a failed write.
        if (this.line.watch.passDue(monotonicNow()) && !this.line.recheck && this.line.watch.passesTo(this.line.current, this.line.ticket))
          continue;
        // Strongly consistent when the schedule asks, and near the turn when no watch runs, when
        // the item was seen otherwise at the same place in line, or when the roll call or the
        // pass of a silent head falls due by the time the read is answered (far back, an
        // eventually consistent read shows first whether the line moved; a roll call or a pass
        // is a write conditioned on the version, never a risk).
        const strong =
          this.line.schedule.readsStrong ||
          (!far &&
            (!this.line.watch.observed || this.line.recheck || this.line.watch.due(this.line.current, this.line.ticket, monotonicNow())));
        await (strong ? this.read() : this.peek());
        continue;
      }
      if (step.kind === 'mark-alive') await this.markAlive();
      else if (step.kind === 'enqueue') await this.enqueue();
      else if (step.kind === 'leave') await this.leaveLine();
      else if (step.kind === 'pass-left') await this.passLeft(step.run);
      else if (step.kind === 'read') await this.read();
      if (step.kind !== 'free' && step.kind !== 'handover' && step.kind !== 'skip') continue;
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
    const { cancel } = this.waiter;
    if (!cancel.aborted) return;
    if (this.line.ticket === undefined) throw cancel.reason;
    // A caller whose own token may be in the item (a write of unknown outcome) keeps the ticket.
    const next = this.waiter.uncertainSince === undefined ? this.host.nextWaiter(this.waiter.storedKey) : undefined;
    if (next && next !== this.waiter) {
      this.waiter = next;
      this.quiet = false;
      this.leave = 'none';
      this.grantedVia = undefined;
      this.line.schedule.restart();
      this.host.noteWaiting(next);
      return;
    }
    this.quiet = true;
    if (this.leave === 'none') this.leave = 'due';
  }

  /** Sleeps; a caller giving up meanwhile ends it early (then {@link checkCaller} decides). */
  private async pause(ms: number): Promise<void> {
    try {
      const due = monotonicNow() + ms;
      await sleep(ms, this.quiet ? this.host.closing : this.waiter.cancel.signal);
      this.host.history.recordTimerLateness(monotonicNow() - due);
    } catch (error) {
      if (this.host.closing.aborted || this.line.ticket === undefined) throw error;
    }
  }

  /**
   * The last view shows this waiter holding. Its lease counts from the earliest write that could
   * have granted it; when much of it is gone already (a slow answer, a pause), one heartbeat first
   * makes it fresh or shows it was passed. A promoted waiter holds without writing on the claim
   * lease (its heartbeats write its token and own lease), unless it renews by hand or has data:
   * then it writes them before the caller gets the lock, so the item shows them while it is held.
   */
  private async confirm(kind: 'token' | 'ticket'): Promise<HeldLease | undefined> {
    const { waiter, host } = this;
    const { current } = this.line;
    const record = current!;
    const via = this.grantedVia ?? (kind === 'ticket' ? 'promotion' : this.passedHolder ? 'takeover' : 'free');
    const leaseMs = kind === 'ticket' ? this.line.claimMs(this.waiter.leaseMs) : Math.min(record.leaseMs ?? waiter.leaseMs, waiter.leaseMs);
    const mustWrite = kind === 'ticket' && (!waiter.heartbeat || waiter.data !== undefined);
    const from = this.line.validFrom(this.waiter.uncertainSince);
    if (!mustWrite && from + leaseMs / 2 > monotonicNow()) return host.hold(waiter, record, from, via, leaseMs);
    const sentAt = monotonicNow();
    const result = await this.request(() =>
      this.sendWrite(sentAt, () =>
        host.store.heartbeat({
          key: waiter.storedKey,
          holding: { token: waiter.token, ticket: this.line.ticket },
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
    const { waiter } = this;
    const { current } = this.line;
    // A write unanswered, no view: a read shows what it did (a free write resent blindly fails, a write unit each).
    if (!this.line.known || !current) return { kind: this.uncertain ? 'read' : this.enqueueFirst ? 'enqueue' : 'free' };
    // The scheduled fire asked for, or a later one, was claimed already: it ran (or runs) elsewhere.
    if (waiter.fire !== undefined && current.fire !== undefined && current.fire.at >= waiter.fire) {
      waiter.fireClaimed = current.fire;
      throw this.host.busyError(waiter);
    }
    // Tickets served whose waiters left: passed at once, by whoever sees them.
    const run = leftRun(current);
    if (run) return { kind: 'pass-left', run };
    if (this.leave === 'due' && this.line.ticket !== undefined) return { kind: 'leave' };
    if (!isHeld(current)) return { kind: 'free' };
    const now = monotonicNow();
    // Seen unchanged for a whole lease, by this call or an earlier one of this process (a single
    // attempt too): its holder, or a promoted waiter that never wrote, is gone.
    const { observed } = this.line.watch;
    if (observed && this.line.watch.passDue(now)) {
      // A single attempt may pass what an earlier call saw: that is the previous holder.
      waiter.holder ??= observed.holderInfo;
      return { kind: 'skip', ...skipTarget(this.line.watch.view(current)!, this.line.ticket) };
    }
    const orphanRvn = current.token ? this.host.history.orphanAt(waiter.storedKey, current.token, current.rvn) : undefined;
    if (current.token && orphanRvn !== undefined) {
      // Our own token that no caller holds (a lease that ran out, a failed release, a late
      // hand-over): take it now. A lease that was handed out is taken only at the version this
      // process left: renewed since (a lease id renewed elsewhere), it is a live holder.
      return orphanRvn === null ? { kind: 'handover', from: current.token } : { kind: 'skip', ...skipTarget(current, this.line.ticket) };
    }
    if (this.line.ticket === undefined) {
      // Checked before queueing: a single attempt, or a wait that is over, does not take a ticket.
      if (now >= waiter.deadline) throw this.host.busyError(waiter);
      return { kind: 'enqueue' };
    }
    if (this.line.watch.shouldMarkAlive(now, this.line.watch.view(current)!, this.line.ticket)) return { kind: 'mark-alive' };
    return { kind: 'wait' };
  }

  /** Takes a ticket. The answer shows the line: this waiter holds already when its ticket is served. */
  private async enqueue(): Promise<void> {
    const { waiter, host } = this;
    const sentAt = monotonicNow();
    this.line.enqueued = true;
    this.line.ticketClaimMs = claimLeaseOf(waiter.leaseMs);
    const result = await this.request(() =>
      host.store.enqueue({ key: waiter.storedKey, token: waiter.token, claimMs: this.line.ticketClaimMs }),
    );
    if (!result) return;
    if (!result.ok && !result.current) {
      await this.read();
      return;
    }
    if (this.line.ticket === undefined) return;
    if (result.ok && this.line.current?.head === this.line.ticket) {
      // The lock was free: this ticket is served from the enqueue itself. (A retry that failed
      // and shows the ticket served was served earlier, perhaps long before it was sent: the
      // lease counts from the last answer that showed another holder.)
      this.line.lastNotMineAt = Math.max(this.line.lastNotMineAt, sentAt);
      this.grantedVia = this.passedHolder ? 'takeover' : 'free';
    } else if (this.line.current?.head !== this.line.ticket) host.noteWaiting(waiter);
  }

  /**
   * Leaves the line for a caller that gave up; landed, the acquisition ends. Refused, the answer shows
   * why: served (then released at once), passed, or the set of left tickets full (the ticket is kept
   * quietly). No answer: sent again next turn (landing twice is harmless).
   */
  private async leaveLine(): Promise<void> {
    const { waiter, host } = this;
    const ticket = this.line.ticket!;
    const result = await this.request(() => host.store.leave(waiter.storedKey, ticket), 'none');
    if (!result) return;
    this.leave = 'done';
    if (!result.ok && !result.current) await this.read();
    // Landed now, or earlier with its answer lost (the item shows the ticket left).
    if (result.ok || hasLeft(this.line.current, ticket)) {
      this.line.ticket = undefined;
      host.emit({ type: 'cleanup', key: waiter.key, owner: waiter.owner, outcome: 'left' });
      throw waiter.cancel.reason;
    }
  }

  /** Passes the tickets served whose waiters left (a server that does not return the item blocking it needs a read). */
  private async passLeft(run: LeftRun): Promise<void> {
    const result = await this.request(() => this.host.store.passLeft(this.waiter.storedKey, run));
    if (result && !result.ok && !result.current) await this.read();
  }

  /** Answers the roll call of the stalled head, at the version watched, with this waiter's ticket. */
  private async markAlive(): Promise<void> {
    const { waiter, host } = this;
    const { current } = this.line;
    const seen = this.line.watch.view(current);
    const result = await this.request(() => host.store.markAlive(waiter.storedKey, seen?.rvn ?? '', this.line.ticket ?? 0), 'none');
    // No answer (a transient error, retried after its pause): applied or not, the next turn
    // answers again, or the pass could go past this ticket. Answered: once per version.
    if (!result) return;
    const watched = this.line.watch.answered(seen, this.line.ticket, result.ok);
    if (watched && seen === current) this.line.current = watched;
  }

  /** A write that may grant the lock: free, taking back an orphan, or passing a silent holder. */
  private async write(step: Extract<Step, { kind: 'free' | 'handover' | 'skip' }>): Promise<HeldLease | undefined> {
    const { waiter, host } = this;
    const { current } = this.line;
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
          holder: step.mine
            ? { token: waiter.token, owner: waiter.owner, leaseMs: waiter.leaseMs, data: waiter.data, fire: waiter.fire }
            : undefined,
          // A silent holder running a scheduled fire: that run is lost (a claim of this writer's replaces it).
          fireLost: step.seen.fire?.outcome === 'running' && !(step.mine && waiter.fire !== undefined),
          leftPassed: step.leftPassed,
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
      this.line.schedule.noteRoundTrip(monotonicNow() - sentAt);
      this.backoff.reset();
      // Answered: whatever failed before is over (callers behind this one are not in an outage).
      this.waiter.lastError = undefined;
      // A write that asks for nothing back ('none') answers a success with the key alone.
      if (answer === 'peek') return result;
      if (result.ok && answer !== 'none') this.line.see(result.record, sentAt, this.waiter);
      else if (!result.ok && (result.current || answer === 'read')) this.line.see(result.current, sentAt, this.waiter);
      return result;
    } catch (error) {
      takeTransient(this.waiter, error);
      this.uncertain = true;
      const deadline = this.quiet ? Number.POSITIVE_INFINITY : this.waiter.deadline;
      if (monotonicNow() >= deadline) throw this.host.deadlineError(this.waiter);
      const pause = Math.round(this.backoff.next(Math.max(0, deadline - monotonicNow())));
      reportRetry(this.host, this.waiter, error, pause);
      await this.pause(pause);
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
    if (result && !result.ok) this.line.peeked(result.current, waiter);
  }
}

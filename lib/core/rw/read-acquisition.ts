import { LockBusyError, type LockUnavailableError } from '../../errors/lock.errors';
import { READ_BUSY, type ReadBusyReason } from '../../errors/lock.messages';
import type { AcquiredVia, LockEvent } from '../../interfaces/lock-event.interface';
import type { LockLogger } from '../../interfaces/lock-logger.interface';
import type { LockTrace } from '../../observability/lock.telemetry';
import { isHeld, type LockRecord, leftRun, ticketsWaiting } from '../../store/mutex/mutex.record';
import type { MutexStorePort } from '../../store/mutex/mutex-store.port';
import type { WriteResult } from '../../store/mutex/mutex-store.protocol';
import { isReadGroup, MAX_READERS, newEntry, type ReaderEntry, readerIdOf, readerOf, readersOf } from '../../store/rw/read.record';
import type { ReadStorePort } from '../../store/rw/read-store.port';
import { jitter, monotonicNow, sleep } from '../../utils/clock';
import { holderOf, type KeyHistory, versionOf } from '../engine/key-history';
import type { Waiter } from '../engine/lock-state';
import { RetryBackoff } from '../waiting/retry.backoff';
import { silentReaders } from './reader.watch';
import { stepUntilGranted, unavailableError } from '../waiting/transient.retry';

/** Shortest pause between reads of a waiting reader. */
const POLL_MIN_MS = 5;
/** Growth of the pause while nothing moves. */
const POLL_GROWTH = 1.5;
/** While nothing moves, a waiting reader reads at least once per this many usual holds of the key. */
const OVERDUE_HOLDS = 4;

/** What a read acquisition needs from its primitive. */
export interface ReadAcquisitionHost {
  readonly store: ReadStorePort;
  /** The mutex item's reads, and the writes that pass a silent head (the mutex's own). */
  readonly mutex: Pick<MutexStorePort, 'read' | 'skip' | 'passLeft'>;
  readonly history: KeyHistory;
  readonly options: {
    readonly logger: LockLogger;
    readonly maxPollMs: number;
    readonly requestTimeoutMs: number;
    readonly leaseMs: number;
  };
  emit(event: LockEvent, trace?: LockTrace): void;
  noteWaiting(waiter: Waiter): void;
}

/** A read lock granted: the item as the grant wrote it, the reader's entry, and from when its lease counts. */
export interface ReadGranted {
  record: LockRecord;
  entry: ReaderEntry;
  sentAt: number;
  via: AcquiredVia;
  /** Readers of the group the grant showed silent for their lease: passed next, in the background. */
  dead: ReaderEntry[];
}

/**
 * Takes a read lock for one caller, on the key's mutex item.
 *
 * - Free key: one write starts a read group (the reader takes the line's next ticket, served at once).
 * - A read group holds and nobody waits in line: one write joins it.
 * - A writer holds or waits (a ticket in line): the reader does not take a ticket; it reads the item
 *   when a release is due and enters once the line is empty again, so writers go first.
 * - A reader of the group whose entry stayed unchanged for its lease is passed (its process is
 *   gone); so is a silent head of the line (a writer, or a waiter served that never claimed), as a
 *   waiter of the line passes it, serving the next ticket. No wall clocks compared.
 */
export class ReadAcquisition {
  private current: LockRecord | undefined;
  /** The item was answered by this acquisition (not only remembered). */
  private fresh = false;
  /** Monotonic send time of the earliest write whose outcome is unknown (an error): clean-up looks then. */
  private uncertainSince: number | undefined;
  /**
   * Monotonic send time of this acquisition's first start or join: an entry of this reader that an
   * answer shows later was written by one of them (the SDK may have resent one whose answer was
   * lost, and its resend be refused), so its lease counts from then.
   */
  private firstWriteAt: number | undefined;
  private readonly id: string;
  private readonly backoff = new RetryBackoff();
  private streak = 0;
  private lastState = '';
  private readonly single: boolean;
  private passed = false;
  /** A write was tried before reading (once per acquisition: a refusal without the item means a read next). */
  private blindTried = false;
  private busyReason: ReadBusyReason = 'writer';

  constructor(
    private readonly host: ReadAcquisitionHost,
    private readonly waiter: Waiter,
    remembered: LockRecord | undefined,
    /** An upgradeable reader (`mode: 'upgradeable'`): it takes the group's one upgrader slot. */
    private readonly upgradeable = false,
  ) {
    this.single = waiter.deadline <= waiter.startedAt;
    this.id = readerIdOf(waiter.token);
    this.current = remembered;
  }

  /** Runs until the read lock is held, the wait ends (busy or unavailable) or the caller gives up. */
  run(): Promise<ReadGranted> {
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
      cleanUp: () => this.cleanUp(),
    });
  }

  /** One step: a write, a read, or a pause and a read. Returns the grant when this reader holds. */
  private async step(): Promise<ReadGranted | undefined> {
    const record = this.current;
    const mine = readerOf(record, this.id);
    if (mine && record) return this.confirm(record, mine);
    if (!this.fresh) {
      // Unknown, or remembered from an earlier call: one write on the chance that it is free, else a read.
      if (!this.blindTried && (!record || startable(record) || joinable(record, this.upgradeable))) {
        this.blindTried = true;
        return this.write(record, !record || startable(record) ? 'start' : 'join');
      }
      return void (await this.read());
    }
    if (!record || startable(record)) return this.write(record, 'start');
    if (joinable(record, this.upgradeable)) return this.write(record, 'join');
    const now = monotonicNow();
    const run = leftRun(record);
    if (run) return void this.after(await this.host.mutex.passLeft(this.waiter.storedKey, run));
    const dead = this.deadReader(record, now);
    if (dead) return void (await this.pass(dead));
    if (!isReadGroup(record) && this.silentHead(record, now)) return void (await this.skip(record));
    this.noteBusy(record);
    if (this.single) throw this.busyError();
    if (now >= this.waiter.deadline) throw this.deadlineError();
    this.host.noteWaiting(this.waiter);
    await sleep(Math.min(this.pollDelay(), this.waiter.deadline - now), this.waiter.cancel.signal);
    await this.read();
    return undefined;
  }

  /** Starts a group on a free item, or joins the one holding it while nobody waits. */
  private async write(record: LockRecord | undefined, kind: 'start' | 'join'): Promise<ReadGranted | undefined> {
    const { waiter, host } = this;
    const entry = newEntry(waiter.token, waiter.leaseMs, waiter.owner);
    const sentAt = monotonicNow();
    this.firstWriteAt ??= sentAt;
    let result: WriteResult;
    try {
      result =
        kind === 'start'
          ? await host.store.start({ key: waiter.storedKey, entry, upgradeable: this.upgradeable })
          : await host.store.join({ key: waiter.storedKey, entry, upgradeable: this.upgradeable, ...lineOf(record!) });
    } catch (error) {
      // Perhaps applied: a later answer showing this reader's entry counts its lease from the first such send.
      this.uncertainSince ??= sentAt;
      throw error;
    }
    if (!this.after(result)) return undefined;
    const own = readerOf(this.current, this.id);
    if (!own || !this.current) return undefined;
    // Granted by this very write (a join or start that succeeded created the entry).
    return this.granted(this.current, own, sentAt);
  }

  /**
   * An answer shows this reader's entry, written by a write whose answer was lost: its lease counts
   * from that write's send. Half of it gone already, one heartbeat renews it first (or shows it passed).
   */
  private async confirm(record: LockRecord, entry: ReaderEntry): Promise<ReadGranted | undefined> {
    const from = Math.min(this.uncertainSince ?? Number.POSITIVE_INFINITY, this.firstWriteAt ?? monotonicNow());
    if (from + this.waiter.leaseMs / 2 > monotonicNow()) return this.granted(record, entry, from);
    const { waiter } = this;
    const sentAt = monotonicNow();
    const result = await this.host.store.heartbeat({ key: waiter.storedKey, entry: newEntry(waiter.token, waiter.leaseMs, waiter.owner) });
    if (!this.after(result)) return undefined;
    const own = readerOf(this.current, this.id);
    return own && this.current ? this.granted(this.current, own, sentAt) : undefined;
  }

  private granted(record: LockRecord, entry: ReaderEntry, sentAt: number): ReadGranted {
    const via: AcquiredVia = this.passed ? 'takeover' : 'free';
    return { record, entry, sentAt, via, dead: this.deadReaders(record, monotonicNow()) };
  }

  private async read(): Promise<void> {
    const record = await this.host.mutex.read(this.waiter.storedKey);
    this.see(record);
  }

  /** Takes in an answer: the item now. */
  private see(record: LockRecord | undefined): void {
    this.current = record;
    this.fresh = true;
    const state = record ? `${record.rvn}/${record.head}/${record.tail}/${Object.keys(record.readers ?? {}).length}` : '';
    this.streak = state === this.lastState ? this.streak + 1 : 0;
    this.lastState = state;
  }

  /** Takes in a write's answer; `true` when it succeeded. A refusal without the item (dynalite) means a read next. */
  private after(result: WriteResult): boolean {
    if (result.ok) this.see(result.record);
    else if (result.current) this.see(result.current);
    else {
      this.current = undefined;
      this.fresh = false;
    }
    return result.ok;
  }

  /** A reader of the group, not this one, whose entry this process has seen unchanged for its whole lease. */
  private deadReader(record: LockRecord, now: number): ReaderEntry | undefined {
    return this.deadReaders(record, now)[0];
  }

  /** Every such reader (each entry seen is watched, across calls). */
  private deadReaders(record: LockRecord, now: number): ReaderEntry[] {
    const others = readersOf(record).filter((entry) => entry.id !== this.id);
    return silentReaders(this.host.history, this.waiter.storedKey, others, now);
  }

  private async pass(dead: ReaderEntry): Promise<void> {
    const result = await this.host.store.pass(this.waiter.storedKey, dead);
    if (result.ok) this.passed = true;
    this.after(result);
  }

  /**
   * Whether the line's head (a writer, or a waiter served that never wrote) stayed silent for its
   * lease (its claim lease when it never wrote), on this host's monotonic clock, as a waiter of the
   * line watches it: its process is gone. Without this a reader, which holds no ticket, would poll
   * for ever behind a dead writer that no later writer comes to pass.
   */
  private silentHead(record: LockRecord, now: number): boolean {
    if (!record.rvn || !isHeld(record)) return false;
    const seen = versionOf({ ...record, rvn: record.rvn }, this.host.options.leaseMs);
    const watched = this.host.history.observe(`${this.waiter.storedKey}\u0000head`, seen, now);
    return now - watched.at >= watched.leaseMs;
  }

  /**
   * Passes the silent head as a waiter of the line would, without taking its place: `head` moves on
   * by one (conditioned on the version watched and the roll call), so the next ticket is served, or
   * the item is free when none waits (the next step starts a group).
   */
  private async skip(record: LockRecord): Promise<void> {
    const head = record.head ?? 0;
    const result = await this.host.mutex.skip({
      key: this.waiter.storedKey,
      rvn: record.rvn ?? '',
      live: record.live,
      target: head + 1,
      holder: undefined,
      fireLost: record.fire?.outcome === 'running',
    });
    if (result.ok) {
      this.passed = true;
      this.waiter.holder = holderOf(record);
    }
    this.after(result);
  }

  private noteBusy(record: LockRecord): void {
    if (isReadGroup(record)) {
      this.busyReason =
        readersOf(record).length >= MAX_READERS ? 'full' : this.upgradeable && record.upgrader !== undefined ? 'upgrader' : 'line';
      return;
    }
    this.busyReason = 'writer';
    this.waiter.holder = holderOf(record);
  }

  /**
   * When to read next: half the key's usual hold at first, then backing off while nothing moves,
   * up to a few holds (a line of writers takes several) and never past `maxPollMs`. A reader waits
   * behind writers without a ticket, so waiting readers read on their own: the cap keeps a crowd of
   * them from flooding the item with reads while a writer waits for the group to drain.
   */
  private pollDelay(): number {
    const holdMs = this.current?.lastHoldMs ?? this.host.history.holdEstimate(this.waiter.storedKey);
    const growth = POLL_GROWTH ** Math.min(this.streak, 30);
    const estimate =
      holdMs === undefined ? POLL_MIN_MS * growth : Math.min(Math.max(POLL_MIN_MS, holdMs / 2) * growth, OVERDUE_HOLDS * holdMs);
    return jitter(Math.min(this.host.options.maxPollMs, Math.max(POLL_MIN_MS, estimate)), 0.1);
  }

  /** A reader that ends without the lock, after a write of unknown outcome: its entry, if that write landed, goes. */
  private async cleanUp(): Promise<void> {
    if (this.uncertainSince === undefined) return;
    const { waiter, host } = this;
    try {
      const record = await host.mutex.read(waiter.storedKey);
      if (readerOf(record, this.id)) await host.store.release(waiter.storedKey, this.id, waiter.leaseMs);
    } catch {
      // Not answered: the entry, if any, is passed once its lease runs out.
    }
  }

  private busyError(): LockBusyError {
    const { waiter } = this;
    const waited = Math.round(monotonicNow() - waiter.startedAt);
    const message = READ_BUSY(waiter.key, this.busyReason, waiter.holder?.owner, MAX_READERS, this.single ? undefined : waited);
    return new LockBusyError(message, waiter.key, waiter.holder, waited);
  }

  /** At the deadline: busy when an answer showed the key busy, else unavailable (an outage). */
  private deadlineError(): LockBusyError | LockUnavailableError {
    const { waiter } = this;
    if (this.current && waiter.lastError === undefined) return this.busyError();
    if (waiter.holder) return this.busyError();
    return unavailableError(waiter, this.host.options.requestTimeoutMs, waiter.lastError);
  }
}

/** Whether a record shows the key free: nobody holds it and nobody waits (the mutex's free condition). */
function startable(record: LockRecord): boolean {
  return record.token === undefined && (record.head === undefined || record.head === record.tail);
}

/**
 * Whether a record shows a read group with room, nobody waiting behind it and no upgrade under way
 * (and, for an upgradeable reader, no upgradeable reader in it).
 */
function joinable(record: LockRecord, upgradeable: boolean): boolean {
  if (!isReadGroup(record) || readersOf(record).length >= MAX_READERS || ticketsWaiting(record) > 0) return false;
  return record.upgrading === undefined && !(upgradeable && record.upgrader !== undefined);
}

/** The line as a join requires it unchanged. */
function lineOf(record: LockRecord): { head: number; tail: number } {
  return { head: record.head ?? 0, tail: record.tail ?? 0 };
}

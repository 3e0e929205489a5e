import type { LockHolder } from '../../errors/lock.errors';
import { isHeld, type LockRecord } from '../../store/mutex/mutex.record';
import type { MutexStorePort } from '../../store/mutex/mutex-store.port';
import { monotonicNow } from '../../utils/clock';
import { type KeyHistory, versionOf } from '../engine/key-history';

/** What one read of a key showed a watcher. */
export type KeyView =
  | { held: false }
  | {
      held: true;
      /** Who holds it. */
      holder: LockHolder;
      /** How long the holder's record version has stayed the same on this host's monotonic clock, in ms. */
      unchangedMs: number;
      /** The lease that version promised: once `unchangedMs` reaches it, the holder may be passed. */
      leaseMs: number;
      /** The holder is a lease of this process that no caller holds any more: it may be taken back at once. */
      orphan: boolean;
      /** The item as read (a pass of its holder is written on its version). */
      record: LockRecord & { rvn: string };
    };

/**
 * Watches keys held elsewhere with reads alone (one strongly consistent `GetItem` each). What a
 * read shows goes into the key's history, exactly as a waiter's view does, so a later single
 * attempt (`tryAcquire()`) passes a holder whose version stayed the same for a whole lease on
 * this host's monotonic clock: the watcher pays reads, never failed conditional writes.
 */
export class KeyWatcher {
  constructor(
    private readonly store: MutexStorePort,
    private readonly history: KeyHistory,
    private readonly defaultLeaseMs: number,
  ) {}

  /** Reads `storedKey` once and notes the version it shows. */
  async watch(storedKey: string): Promise<KeyView> {
    const record = await this.store.read(storedKey);
    const now = monotonicNow();
    if (!record || !isHeld(record) || record.rvn === undefined) {
      this.history.forgetObservation(storedKey);
      return { held: false };
    }
    const seen = versionOf({ ...record, rvn: record.rvn }, this.defaultLeaseMs);
    const holder: LockHolder = { owner: record.owner, fencingToken: record.fencingToken, leaseDuration: seen.leaseMs };
    const observed = this.history.observe(storedKey, { ...seen, holderInfo: holder }, now);
    const orphan = record.token !== undefined && this.history.orphanAt(storedKey, record.token, record.rvn) !== undefined;
    return {
      held: true,
      holder,
      unchangedMs: now - observed.at,
      leaseMs: observed.leaseMs,
      orphan,
      record: { ...record, rvn: record.rvn },
    };
  }
}

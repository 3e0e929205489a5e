import type { LockEvent } from '../../interfaces/lock-event.interface';
import type { MutexStorePort } from '../../store/mutex/mutex-store.port';
import { isTransientError } from '../../store/dynamo/transient-error';
import { sleep } from '../../utils/clock';
import { RetryBackoff } from '../waiting/retry.backoff';
import { skipTarget } from './head.watch';
import type { KeyView, KeyWatcher } from './key.watcher';

/** What the run watch needs of its mutex. */
export interface RunWatchHost {
  readonly store: MutexStorePort;
  readonly watcher: KeyWatcher;
  /** This process's owner name, for events. */
  readonly owner: string;
  /** Whether a lease of this process holds `storedKey` with owner token `token` (its own run: nothing to watch). */
  holdsHere(storedKey: string, token: string | undefined): boolean;
  emit(event: LockEvent): void;
}

/**
 * Watches the keys of scheduled jobs whose run holds them in another instance, with reads alone,
 * from the fire this instance skipped for it until the run ends: a run whose holder stays silent
 * for its lease on this host's monotonic clock (a crash, a frozen container) is passed, with one
 * write conditioned on the version watched, and its fire recorded `lost`, so the next fire runs
 * however far off it is. A single attempt at that fire could only start watching then, and would
 * lose it. Its timers do not keep the process alive. Cost: two strongly consistent reads per lease of the holder for each watching instance,
 * while a run is in progress (one for a run shorter than half its lease); none otherwise.
 */
export class RunWatch {
  private readonly watching = new Map<string, Promise<void>>();
  private readonly closing = new AbortController();

  constructor(private readonly host: RunWatchHost) {}

  /**
   * Starts watching `storedKey` (the job `key`), unless this process watches it already or shuts
   * down. The attempt that was skipped has just seen the holder (and noted its version): the first
   * read comes half of `leaseMs`, the holder's lease, later, so a run shorter than that costs one.
   */
  start(key: string, storedKey: string, leaseMs: number): void {
    if (this.closing.signal.aborted || this.watching.has(storedKey)) return;
    const run = this.watch(key, storedKey, leaseMs / 2).finally(() => this.watching.delete(storedKey));
    this.watching.set(storedKey, run);
  }

  /** Whether `storedKey` is being watched now. */
  isWatching(storedKey: string): boolean {
    return this.watching.has(storedKey);
  }

  /** Stops every watch (shutdown). */
  async close(): Promise<void> {
    this.closing.abort();
    await Promise.allSettled([...this.watching.values()]);
  }

  private async watch(key: string, storedKey: string, firstReadInMs: number): Promise<void> {
    const backoff = new RetryBackoff();
    const { signal } = this.closing;
    await sleep(firstReadInMs, signal, true).catch(() => undefined);
    while (!signal.aborted) {
      let view: KeyView;
      try {
        view = await this.host.watcher.watch(storedKey);
        backoff.reset();
      } catch (error) {
        // An outage: the next fire's own attempt goes on where this left off.
        if (!isTransientError(error)) return;
        await sleep(backoff.next(), signal, true).catch(() => undefined);
        continue;
      }
      // The run ended (released, or passed by another instance), or is this process's own now: nothing to watch.
      if (!view.held || view.orphan || this.host.holdsHere(storedKey, view.record.token)) return;
      const leftMs = view.leaseMs - view.unchangedMs;
      if (signal.aborted) return;
      if (leftMs <= 0) return this.pass(key, view);
      // Twice per lease while the holder renews; at the end of its lease when it has gone silent.
      await sleep(Math.min(view.leaseMs / 2, leftMs), signal, true).catch(() => undefined);
    }
  }

  /** Passes a silent run's holder (a write conditioned on the version watched), recording its fire lost. */
  private async pass(key: string, view: Extract<KeyView, { held: true }>): Promise<void> {
    const { record } = view;
    const lostFire = record.fire?.outcome === 'running' ? record.fire : undefined;
    try {
      const { target } = skipTarget(record, undefined);
      const result = await this.host.store.skip({
        key: record.key,
        rvn: record.rvn,
        live: record.live,
        target,
        fireLost: lostFire !== undefined,
      });
      if (!result.ok || !lostFire) return;
      this.host.emit({
        type: 'fire',
        key,
        owner: this.host.owner,
        scheduledAt: new Date(lostFire.at),
        outcome: 'lost',
        by: lostFire.owner ?? view.holder.owner,
      });
    } catch {
      // Best effort: the next fire's single attempt passes the silent holder itself.
    }
  }
}

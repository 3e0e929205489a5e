import type { ReaderEntry } from '../../store/rw/read.record';
import type { KeyHistory } from '../engine/key-history';

/**
 * Readers whose entry this process has seen unchanged for their whole lease, on its monotonic
 * clock: their process is gone (or paused past its lease), and they may be passed. Each entry
 * seen is watched, across calls, by its own version; a new version starts its watch again.
 */
export function silentReaders(history: KeyHistory, storedKey: string, entries: readonly ReaderEntry[], now: number): ReaderEntry[] {
  return entries.filter((entry) => {
    const seen = history.observe(
      `${storedKey}\u0000r\u0000${entry.id}`,
      { version: entry.version, rvn: entry.version, leaseMs: entry.leaseMs, holder: entry.id },
      now,
    );
    return now - seen.at >= entry.leaseMs;
  });
}

import type { Duration } from '../utils/duration';

/**
 * How a lock holds its key: `'write'` alone (the default), `'read'` shared with other readers, or
 * `'upgradeable'`: a read lock, one per key at a time, that `lock.upgrade()` turns into a write lock.
 */
export type LockMode = 'read' | 'upgradeable' | 'write';

/** Options of `acquire()`, `tryAcquire()` and `withLock()`. */
export interface AcquireOptions {
  /**
   * How long to wait for a busy lock: a duration, `true` without limit, or `false` (or `0`) for a
   * single attempt. Default: the module's `wait` (two leases unless configured).
   */
  wait?: Duration | boolean;
  /** Cancels the wait; `acquire()` then rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Lease of this lock; default the module's `leaseDuration`. */
  leaseDuration?: Duration;
  /** JSON-serialisable payload stored with the lock and shown by `inspect()`: at most 1 KB as JSON. */
  data?: unknown;
  /**
   * Renew the lease in the background while the lock is held (default `true`). With `false`
   * no timer renews it (AWS Lambda, CLI): call `extend()` yourself before the lease runs out.
   */
  heartbeat?: boolean;
  /**
   * Makes the key a counting semaphore: at most `limit` holders at once across every instance,
   * each with its own `Lock` (fencing token, `signal`, `extend`, `release`), admitted in the order
   * they queued. A whole number from 1 to 32; every caller of a key must use the same limit, and a
   * key is either a semaphore or a mutex. `data` cannot be stored with a semaphore slot.
   */
  limit?: number;
  /**
   * The scheduled time of the job run this single attempt is for (a `@Cron` fire: the schedule's
   * time, not the clock's). The lock is taken only when no run of this fire or a later one was
   * claimed on the key, and the claim stays in the item after the release: each fire runs once,
   * whatever the instances' clocks (a `LockBusyError` with `fireClaimed` says it ran elsewhere).
   * `@WithLock` on a `@Cron` method with `onBusy: 'skip'` sets it. Needs a single attempt
   * (`tryAcquire()`, `wait: false`); not with `limit`.
   */
  fireTime?: Date | number;
  /**
   * `'read'` shares the key with other readers (a reader-writer lock); `'write'`, the default,
   * holds it alone, as every caller without `mode` does. A writer waiting for the key stops new
   * readers from entering (writers are not starved); writers are served in the order they queued.
   * At most 64 readers hold a key at once. A read lock has no `data`, `limit` or `fireTime`, and
   * fences no write (its fencing token orders it among writers: every later writer's is larger).
   * `'upgradeable'` is a read lock that `lock.upgrade()` later turns into a write lock with no
   * writer in between; one upgradeable reader per key at a time (others wait as for a writer).
   */
  mode?: LockMode;
}

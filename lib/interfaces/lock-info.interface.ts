import type { JobFire } from './job-fire.interface';

/**
 * What `inspect()` tells about a held lock, and `list()` about each held lock: a mutex, or a
 * counting semaphore with holders (then with `limit`, `holders` and `waiting`).
 */
export interface LockInfo {
  /** The key as given to `acquire()` (without the key prefix). */
  key: string;
  /**
   * Owner name of the holder. Empty while the holder is a waiter of another instance that a
   * release or a pass served and that has not written yet (it writes its name with its first
   * heartbeat, or at once with `data` or without heartbeats; never if it stopped while waiting:
   * then it is passed after its claim lease, 5 s at most).
   */
  owner: string;
  /** The holder's fencing token. */
  fencingToken: number;
  /** When the holder acquired it, by the holder's wall clock. */
  acquiredAt: Date;
  /** When the holder last wrote it (acquire or heartbeat), by the holder's wall clock. */
  updatedAt: Date;
  /** The holder's lease duration in milliseconds. */
  leaseDuration: number;
  /** The data stored with the lock, parsed from JSON. */
  data?: unknown;
  /** For a semaphore (`acquire(key, { limit })`): its limit. The fields above then describe its newest holder. */
  limit?: number;
  /** For a semaphore: every holder, oldest grant first. For a key read-locked (`mode: 'read'`): every reader. */
  holders?: LockInfo[];
  /**
   * `'read'` when readers hold the key (`acquire(key, { mode: 'read' })`): `holders` lists them,
   * and `owner` is `readers`. Absent for a writer (or a mutex) and for a semaphore.
   */
  mode?: 'read';
  /** For a semaphore: callers of any instance waiting in line (some may have died since). */
  waiting?: number;
  /** For a scheduled job's key: the last fire claimed (the one running now, when its run holds the lock). */
  lastFire?: JobFire;
}

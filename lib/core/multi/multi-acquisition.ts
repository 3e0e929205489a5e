import { LockValidationError } from '../../errors/lock.errors';
import { MULTI_PARTLY_HELD, WRITE_INSIDE_READ } from '../../errors/lock.messages';
import type { AcquireOptions } from '../../interfaces/acquire-options.interface';
import { monotonicNow } from '../../utils/clock';
import { nestedLock, type Lock } from '../engine/lock';
import { resolveWait } from '../engine/lock-options.resolver';
import { createMultiLock } from './multi.lock';
import { type MultiKey, resolveMultiKeys } from './multi-keys';

/** What a multi-key acquisition needs of its manager. */
export interface MultiLockHost {
  readonly keyPrefix: string;
  /** The default wait of a call, in ms. */
  readonly waitMs: number;
  /** Acquires one key as `acquire(key)` does (`scope` is the public call, for errors). */
  acquireOne(scope: string, key: string, options: AcquireOptions): Promise<Lock>;
  /** The lock the async context holds for a stored key, if any. */
  held(storedKey: string): Lock | undefined;
  /** Whether a lock is a read lock (`mode: 'read'`): a write set inside it would wait for itself. */
  isRead(lock: Lock): boolean;
  /** Gives back a lock, logging (not throwing) a failure. */
  releaseQuietly(lock: Lock): Promise<void>;
  /**
   * Takes the whole set in one all-or-none write when the store can and the keys look free (the
   * fast path); `undefined`: take them one by one.
   */
  acquireAll(set: readonly MultiKey[], options: AcquireOptions): Promise<Lock[] | undefined>;
}

/**
 * `acquire([...])`: every key of the set, or none. Where the store has transactions and the keys
 * look free, in one all-or-none write (the host's `acquireAll`); otherwise, or when a key is busy,
 * in order: keys are taken one by one in the global order
 * (see `resolveMultiKeys()`), each through the mutex as `acquire(key)` takes it (local queue,
 * ticket line, takeover of a dead holder), with what is left of the caller's wait and its signal.
 * Two callers locking overlapping sets therefore always meet on their first common key, never in
 * a cycle. On the first failure the keys taken are released (the failing key's acquisition has
 * left its line already) and its error, which names that key, is thrown. Before the set is
 * returned every key is checked still held (an early key may run out while a later one is
 * waited for, a grant may come late): if one is not, all are released and the keys are taken
 * again in order while the wait lasts; after it, the lost key's `LockLostError` is thrown.
 * @throws LockValidationError for a bad set or option, or a set the async context holds in part.
 */
export async function acquireMulti(host: MultiLockHost, scope: string, keys: unknown, options: AcquireOptions): Promise<Lock> {
  const set = resolveMultiKeys(scope, keys, options, host.keyPrefix);
  const nested = nestedSet(host, scope, set, options);
  if (nested) return nested;
  const waitMs = options.wait === undefined ? host.waitMs : resolveWait(options.wait);
  const deadline = monotonicNow() + waitMs;
  const fast = await host.acquireAll(set, options);
  if (fast) {
    if (fast.every((lock) => lock.isHeld)) return createMultiLock(fast);
    await Promise.all(fast.map((lock) => host.releaseQuietly(lock)));
  }
  for (;;) {
    const taken = await acquireInOrder(host, scope, set, options, waitMs, deadline);
    // An early key may have run out while a later one was waited for: the set is not held.
    const lost = taken.find((lock) => !lock.isHeld);
    if (!lost) return createMultiLock(taken);
    await Promise.all(taken.map((lock) => host.releaseQuietly(lock)));
    if (waitMs !== Number.POSITIVE_INFINITY && deadline - monotonicNow() <= 0) throw lost.signal.reason;
  }
}

/**
 * Takes the keys one by one in the global order, each with what is left of the wait.
 * @throws the first failure, once the keys taken are released.
 */
async function acquireInOrder(
  host: MultiLockHost,
  scope: string,
  set: readonly MultiKey[],
  options: AcquireOptions,
  waitMs: number,
  deadline: number,
): Promise<Lock[]> {
  const taken: Lock[] = [];
  try {
    for (const { key } of set) {
      const left = deadline - monotonicNow();
      // An unlimited wait stays unlimited; a wait used up leaves one attempt per remaining key.
      const wait = waitMs === Number.POSITIVE_INFINITY ? true : left > 0 ? Math.ceil(left) : false;
      taken.push(await host.acquireOne(scope, key, { ...options, wait }));
    }
  } catch (error) {
    await Promise.all(taken.map((lock) => host.releaseQuietly(lock)));
    throw error;
  }
  return taken;
}

/**
 * A set the async context holds already: a nested handle over its locks (its release leaves them
 * to their holders). Held in part: an error, as taking the rest now could close a cycle.
 */
function nestedSet(host: MultiLockHost, scope: string, set: readonly MultiKey[], options: AcquireOptions): Lock | undefined {
  const held = set.map(({ storedKey }) => host.held(storedKey));
  if (held.every((lock) => lock === undefined)) return undefined;
  const locks = held.filter((lock): lock is Lock => lock !== undefined);
  const read = options.mode !== 'read' && locks.find((lock) => host.isRead(lock));
  if (read) throw new LockValidationError(WRITE_INSIDE_READ(scope, read.key));
  if (locks.length < set.length) {
    const heldKeys = set.filter((_, i) => held[i] !== undefined).map(({ key }) => key);
    const missing = set.filter((_, i) => held[i] === undefined).map(({ key }) => key);
    throw new LockValidationError(MULTI_PARTLY_HELD(scope, heldKeys, missing));
  }
  return createMultiLock(
    locks.map((lock) => nestedLock(lock)),
    true,
  );
}

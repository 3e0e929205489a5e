import { LockValidationError } from '../../errors/lock.errors';
import { MULTI_FENCED_WRITE_UNSUPPORTED } from '../../errors/lock.messages';
import { createLock, type Lock, type LockHost, type ReleaseOutcome, rootLock } from '../engine/lock';

/** The locks of each key behind a multi-key handle, in the global key order. */
const partsByLock = new WeakMap<Lock, readonly Lock[]>();

/**
 * The locks of each key behind a multi-key handle (or a nested handle of one), in the global
 * order; `undefined` for a lock of one key.
 */
export function partsOf(lock: Lock): readonly Lock[] | undefined {
  return partsByLock.get(rootLock(lock));
}

/**
 * One handle for the locks of several keys, each an ordinary mutex lease (its own heartbeats,
 * token and loss). Its signal aborts when any key is lost, with that key's `LockLostError` (which
 * names the key); `isHeld` while every key is; `extend()` and `release()` act on every key.
 * @param parts the locks, in the global key order.
 * @param reentrant the parts are nested handles of locks the async context holds.
 */
export function createMultiLock(parts: readonly Lock[], reentrant = false): Lock {
  const controller = new AbortController();
  const host: LockHost = {
    release: async () => releaseAll(parts),
    extend: async (_lock, leaseDuration) => {
      const results = await Promise.allSettled(parts.map((part) => part.extend(leaseDuration)));
      const failed = results.find((result) => result.status === 'rejected');
      if (failed) throw failed.reason;
    },
    // Every part is checked (a lease run out on the local clock aborts its signal, and so this one).
    checkHeld: () => parts.map((part) => part.isHeld).every(Boolean),
    transact: () => Promise.reject(new LockValidationError(MULTI_FENCED_WRITE_UNSUPPORTED('lock.transact()'))),
    fencedWrite: () => Promise.reject(new LockValidationError(MULTI_FENCED_WRITE_UNSUPPORTED('lock.fencedWrite()'))),
  };
  for (const part of parts) {
    const { signal } = part;
    if (signal.aborted) controller.abort(signal.reason);
    else signal.addEventListener('abort', () => controller.abort(signal.reason), { once: true });
  }
  const [first] = parts;
  const lock = createLock({
    key: first.key,
    owner: first.owner,
    fencingToken: first.fencingToken,
    acquiredAt: new Date(Math.max(...parts.map((part) => part.acquiredAt.getTime()))),
    leaseId: first.leaseId,
    keys: parts.map((part) => part.key),
    tokens: parts.map((part) => part.fencingToken),
    reentrant,
    controller,
    host,
  });
  partsByLock.set(lock, parts);
  return lock;
}

/**
 * Releases every part at once. `released` when each was; otherwise the worst outcome (`not-held`
 * before `expired`). A failed release (an outage) is thrown once the others are done.
 */
export async function releaseAll(parts: readonly Lock[]): Promise<ReleaseOutcome> {
  const results = await Promise.allSettled(parts.map((part) => part.release({ outcome: true })));
  const failed = results.find((result) => result.status === 'rejected');
  if (failed) throw failed.reason;
  const outcomes = results.map((result) => (result.status === 'fulfilled' ? result.value : 'not-held'));
  if (outcomes.includes('not-held')) return 'not-held';
  if (outcomes.includes('expired')) return 'expired';
  if (outcomes.every((outcome) => outcome === 'reentrant')) return 'reentrant';
  return 'released';
}

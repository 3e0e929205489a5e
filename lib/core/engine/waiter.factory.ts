import type { AcquireOptions } from '../../interfaces/acquire-options.interface';
import { monotonicNow } from '../../utils/clock';
import { parseLease } from '../../utils/duration';
import { serializeData } from '../../utils/lock-key.validation';
import { randomToken } from '../../utils/random-token';
import { LazyAbortController } from '../../utils/lazy-abort.controller';
import { fireOf, resolveWait, type ResolvedLockOptions } from './lock-options.resolver';
import type { Waiter } from './lock-state';

/**
 * A new caller of any primitive for `key` (stored as `storedKey`): its options parsed, its token
 * drawn, its deadline set.
 * @throws LockValidationError for a bad lease, wait or data; `assertOpen`'s error when the manager
 *   is shut down; the signal's reason when it has aborted already.
 */
export function createWaiter(
  defaults: ResolvedLockOptions,
  assertOpen: () => void,
  key: string,
  storedKey: string,
  options: AcquireOptions,
): Waiter {
  const leaseMs = options.leaseDuration === undefined ? defaults.leaseMs : parseLease(options.leaseDuration);
  const waitMs = options.wait === undefined ? defaults.waitMs : resolveWait(options.wait);
  const data = serializeData(key, options.data);
  assertOpen();
  options.signal?.throwIfAborted();
  const startedAt = monotonicNow();
  return {
    key,
    storedKey,
    token: randomToken(),
    owner: defaults.ownerName,
    leaseMs,
    data,
    heartbeat: options.heartbeat ?? true,
    startedAt,
    deadline: startedAt + waitMs,
    cancel: new LazyAbortController(),
    settled: false,
    fire: options.fireTime === undefined ? undefined : fireOf(options.fireTime),
    resolve: () => undefined,
    reject: () => undefined,
  };
}

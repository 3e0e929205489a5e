import { LockValidationError } from '../../errors/lock.errors';
import { SEMAPHORE_DATA_UNSUPPORTED, SEMAPHORE_LIMIT_INVALID } from '../../errors/lock.messages';
import type { AcquireOptions } from '../../interfaces/acquire-options.interface';
import { MAX_SEMAPHORE_LIMIT, SEMAPHORE_KEY_SUFFIX } from '../../store/semaphore/semaphore.record';

/** The stored key of the semaphore for a mutex-form stored key (`keyPrefix + key`). */
export function semaphoreKeyOf(storedKey: string): string {
  return storedKey + SEMAPHORE_KEY_SUFFIX;
}

/**
 * Checks the semaphore options of one call before any request: a whole `limit` from 1 to
 * {@link MAX_SEMAPHORE_LIMIT}, and no `data`.
 * @throws LockValidationError naming the call and what is wrong.
 */
export function checkSemaphoreOptions(options: AcquireOptions, scope: string): number {
  const { limit } = options;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_SEMAPHORE_LIMIT) {
    throw new LockValidationError(SEMAPHORE_LIMIT_INVALID(scope, limit, MAX_SEMAPHORE_LIMIT));
  }
  if (options.data !== undefined) throw new LockValidationError(SEMAPHORE_DATA_UNSUPPORTED(scope));
  return limit;
}

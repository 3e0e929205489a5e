import { LockKeyError, LockValidationError } from '../../errors/lock.errors';
import {
  MULTI_KEY_INVALID,
  MULTI_KEYS_EMPTY,
  MULTI_KEYS_NOT_ARRAY,
  MULTI_KEYS_TOO_MANY,
  MULTI_OPTION_UNSUPPORTED,
} from '../../errors/lock.messages';
import type { AcquireOptions } from '../../interfaces/acquire-options.interface';
import { toStoredKey } from '../../utils/lock-key.validation';

/**
 * The most distinct keys of one multi-key lock. Each key is an ordinary lease (a heartbeat each),
 * and a later one-transaction path would need one action per key (DynamoDB takes 100).
 */
export const MAX_MULTI_KEYS = 25;

/** A key of a multi-key lock, checked: as the caller named it, and as stored. */
export interface MultiKey {
  readonly key: string;
  readonly storedKey: string;
}

/**
 * Checks an array of keys and puts it in the one global order: each key valid, duplicates (by
 * stored key) collapsed, sorted by the UTF-8 bytes of the stored key. Every process, and every
 * version of the library, must sort the same way, or two callers could wait for each other.
 * @throws LockValidationError for something that is not an array, an empty one, too many keys, or
 *   an option a set cannot take (`limit`, `data`, `fireTime`); LockKeyError for a bad key, naming its index.
 */
export function resolveMultiKeys(scope: string, keys: unknown, options: AcquireOptions, keyPrefix: string): MultiKey[] {
  if (!Array.isArray(keys)) throw new LockValidationError(MULTI_KEYS_NOT_ARRAY(scope, keys));
  if (keys.length === 0) throw new LockValidationError(MULTI_KEYS_EMPTY(scope));
  for (const option of ['limit', 'data', 'fireTime'] as const) {
    if (options[option] !== undefined) throw new LockValidationError(MULTI_OPTION_UNSUPPORTED(scope, option));
  }
  const byStoredKey = new Map<string, MultiKey>();
  keys.forEach((key: unknown, index) => {
    let storedKey: string;
    try {
      storedKey = toStoredKey(key, keyPrefix);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      if (error instanceof LockKeyError) throw new LockKeyError(MULTI_KEY_INVALID(scope, index, reason), error.problem);
      throw new LockValidationError(MULTI_KEY_INVALID(scope, index, reason), { cause: error });
    }
    if (!byStoredKey.has(storedKey)) byStoredKey.set(storedKey, { key: key as string, storedKey });
  });
  if (byStoredKey.size > MAX_MULTI_KEYS) throw new LockValidationError(MULTI_KEYS_TOO_MANY(scope, byStoredKey.size, MAX_MULTI_KEYS));
  return [...byStoredKey.values()].sort((a, b) => compareKeys(a.storedKey, b.storedKey));
}

/** The global order of stored keys: by their UTF-8 bytes (as DynamoDB orders binary and string keys). */
export function compareKeys(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

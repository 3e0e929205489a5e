import { LockKeyError, LockValidationError } from '../errors/lock.errors';
import {
  DATA_NOT_SERIALIZABLE,
  DATA_TOO_LARGE,
  EMPTY_KEY,
  KEY_BLANK,
  KEY_NOT_STRING,
  KEY_NOT_WELL_FORMED,
  KEY_TOO_LONG,
} from '../errors/lock.messages';

/** DynamoDB's limit on a partition key value, counted in UTF-8 bytes. */
export const MAX_KEY_BYTES = 2048;

/**
 * Largest lock data (UTF-8 bytes of its JSON). The lock item carries the holder's data and no
 * waiters, so it stays under 2 KB with a key of a few hundred bytes: every write is billed one or
 * two write units and every read one read unit, however many wait.
 */
export const MAX_DATA_BYTES = 1024;

/**
 * Checks a user key and returns the stored key (`keyPrefix + key`).
 * @throws LockValidationError for a non-string key; LockKeyError for an empty, whitespace-only,
 *   over-long or not well-formed (lone surrogate) one.
 */
export function toStoredKey(key: unknown, keyPrefix: string): string {
  if (typeof key !== 'string') throw new LockValidationError(KEY_NOT_STRING(key));
  if (key.length === 0) throw new LockKeyError(EMPTY_KEY(), 'empty');
  // Whitespace around a key is kept (it is part of the name); a key of nothing else is an unset value.
  if (key.trim().length === 0) throw new LockKeyError(KEY_BLANK(key), 'blank');
  const stored = keyPrefix + key;
  // A lone surrogate becomes U+FFFD in UTF-8: two different keys would share one lock.
  if (!stored.isWellFormed()) throw new LockKeyError(KEY_NOT_WELL_FORMED(stored), 'not-well-formed');
  const bytes = Buffer.byteLength(stored, 'utf8');
  if (bytes > MAX_KEY_BYTES) throw new LockKeyError(KEY_TOO_LONG(stored, bytes, MAX_KEY_BYTES), 'too-long');
  return stored;
}

/**
 * Serialises lock data to JSON, checking it fits in an item.
 * @returns the JSON text, or `undefined` when there is no data.
 * @throws LockValidationError when the value cannot be serialised or is too large.
 */
export function serializeData(key: string, data: unknown, maxBytes = MAX_DATA_BYTES): string | undefined {
  if (data === undefined) return undefined;
  let json: string | undefined;
  try {
    json = JSON.stringify(data);
  } catch (error) {
    throw new LockValidationError(DATA_NOT_SERIALIZABLE(key, error instanceof Error ? error.message : String(error)));
  }
  if (json === undefined) throw new LockValidationError(DATA_NOT_SERIALIZABLE(key, `${typeof data} has no JSON form`));
  const bytes = Buffer.byteLength(json, 'utf8');
  if (bytes > maxBytes) throw new LockValidationError(DATA_TOO_LARGE(key, bytes, maxBytes));
  return json;
}

/** Messages for multi-key locks (`acquire([...])`): a bad key set, options a set cannot take, nesting. */

import { describe, truncate } from './message.format';

export const MULTI_KEYS_NOT_ARRAY = (scope: string, value: unknown) =>
  `${scope}: the keys of a multi-key lock must be an array of strings; got ${describe(value)}.`;

export const MULTI_KEYS_EMPTY = (scope: string) =>
  `${scope}: the array of keys is empty. Pass at least one key (a single key may also be passed as a string).`;

export const MULTI_KEYS_TOO_MANY = (scope: string, count: number, max: number) =>
  `${scope}: ${count} distinct keys, but a multi-key lock takes at most ${max} (each key is a lease of its own, with its heartbeats). Split the work, or lock a coarser key.`;

export const MULTI_KEY_INVALID = (scope: string, index: number, reason: string) =>
  `${scope}: key ${index} of the array is not a valid lock key: ${reason}`;

export const MULTI_OPTION_UNSUPPORTED = (scope: string, option: string) =>
  `${scope}: option "${option}" cannot be used with an array of keys (a multi-key lock is a set of mutexes: ${
    option === 'limit' ? 'no semaphore slots' : option === 'data' ? 'no payload' : 'no scheduled fire claims'
  }). Lock a single key for it.`;

export const MULTI_PARTLY_HELD = (scope: string, held: readonly string[], missing: readonly string[]) =>
  `${scope}: this async context already holds ${held.map((k) => `"${truncate(k)}"`).join(', ')} but not ${missing
    .map((k) => `"${truncate(k)}"`)
    .join(
      ', ',
    )}. Taking more keys while holding some would break the one global key order that keeps multi-key locks free of deadlocks: lock the whole set at once, outside the held lock.`;

export const MULTI_KEY_NOT_IN_SET = (key: string, keys: readonly string[]) =>
  `Key "${truncate(key)}" is not one of this lock's keys (${keys.map((k) => `"${truncate(k)}"`).join(', ')}).`;

export const MULTI_FENCED_WRITE_UNSUPPORTED = (method: string) =>
  `${method} is not available on a multi-key lock handle: which key's token should stamp the write? Inside withLock(), LockService.current(key) (or LockManager.current(key)) returns the lock of one key, with its own fencing token and ${method}.`;

export const MULTI_TEMPLATE_EMPTY = (where: string) =>
  `@WithLock on ${where}: the array of key templates is empty. Give at least one template, e.g. ['account-<0>', 'account-<1>'].`;

export const MULTI_TEMPLATE_OPTION = (where: string, option: string) =>
  `@WithLock on ${where}: option "${option}" cannot be used with an array of key templates (a multi-key lock is a set of mutexes).`;

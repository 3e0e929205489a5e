/** Messages for acquiring locks: busy, unavailable, retries, shutdown, and invalid keys or data. */

import { describe, visible, truncate, errorText } from './message.format';

export const EMPTY_KEY = () => `Lock key must be a non-empty string.`;

export const KEY_BLANK = (key: string) =>
  `Lock key must contain more than whitespace; got ${visible(key)}. A blank key usually means an unset field (a form input, an environment variable): check the value the key is built from.`;

export const KEY_NOT_STRING = (value: unknown) => `Lock key must be a string; got ${describe(value)}.`;

export const KEY_NOT_WELL_FORMED = (key: string) =>
  `Lock key "${truncate(key.toWellFormed())}" contains a lone UTF-16 surrogate; it would be stored as U+FFFD and collide with other keys. Build keys from well-formed text.`;

export const KEY_TOO_LONG = (key: string, bytes: number, max: number) =>
  `Lock key "${truncate(key)}" is ${bytes} bytes in UTF-8 (key prefix included); DynamoDB allows at most ${max} bytes in a partition key. Use a shorter key, for example a hash of the long value.`;

export const DATA_NOT_SERIALIZABLE = (key: string, reason: string) =>
  `Lock data for "${truncate(key)}" must be JSON-serialisable: ${reason}.`;

export const DATA_TOO_LARGE = (key: string, bytes: number, max: number) =>
  `Lock data for "${truncate(key)}" is ${bytes} bytes as JSON; at most ${max} bytes are allowed, so that every lock write stays within one or two DynamoDB write units. Store a reference (an id or URL) instead of the payload.`;

export const FIRE_CLAIMED = (key: string, fire: Date, claimed: Date, owner: string | undefined) =>
  `Lock "${key}" was not taken for the fire scheduled at ${fire.toISOString()}: ${owner ? `"${owner}"` : 'another instance'} claimed the fire of ${claimed.toISOString()} already, so it ran (or runs) there.`;

export const FIRE_TIME_INVALID = (scope: string, value: unknown) =>
  `${scope} option "fireTime" must be the fire's scheduled time, a valid Date or epoch milliseconds; got ${describe(value)}.`;

export const FIRE_TIME_NEEDS_SINGLE_ATTEMPT = (scope: string) =>
  `${scope} option "fireTime" claims a scheduled fire with a single attempt: use tryAcquire(), or pass wait: false (a waiting caller could be served after the fire has passed).`;

export const FIRE_TIME_NESTED = (scope: string, key: string) =>
  `${scope} option "fireTime": this async context holds lock "${key}" already, so the call would join that lock (re-entrant) and claim no fire. Claim a scheduled fire from outside the locked section.`;

export const FIRE_TIME_WITH_LIMIT = (scope: string) =>
  `${scope}: "fireTime" claims a fire of a job's mutex; it cannot be used with "limit" (a semaphore).`;

/** `waitedMs` is `undefined` for a single attempt (`wait: false`). */
export const LOCK_BUSY = (key: string, holder: string | undefined, fencingToken: number | undefined, waitedMs: number | undefined) =>
  `Lock "${key}" is held by ${holder ? `"${holder}"` : 'another owner'}${fencingToken !== undefined ? ` (fencing token ${fencingToken})` : ''}; gave up after ${waitedMs === undefined ? 'one attempt (wait: false)' : `waiting ${waitedMs} ms`}.`;

/** `waitedMs` is `undefined` for a single attempt (`wait: false`). */
export const LOCK_UNAVAILABLE = (key: string, waitedMs: number | undefined, cause: unknown) =>
  `Lock "${key}" could not be acquired: DynamoDB ${cause === undefined ? 'did not answer in time' : `failed (${errorText(cause)})`} and no answer showed another holder, so this is an outage or a slow DynamoDB, not a busy lock; gave up after ${waitedMs === undefined ? 'one attempt (wait: false)' : `trying for ${waitedMs} ms`}.`;

export const TRANSIENT_RETRY = (operation: string, key: string, error: unknown, delayMs: number) =>
  `${operation} of lock "${key}" hit a transient DynamoDB error (${errorText(error)}); retrying in ${Math.round(delayMs)} ms.`;

export const MANAGER_CLOSED = () => `The lock service has been shut down; no new locks can be acquired.`;

/** Messages for semaphores (the "limit" option): invalid limits, mismatches, full slots. */

import { describe, truncate } from './message.format';

export const SEMAPHORE_LIMIT_INVALID = (scope: string, value: unknown, max: number) =>
  `${scope} option "limit" must be a whole number from 1 to ${max} (the most holders of the key at once); got ${describe(value)}. Leave it out for a mutex (one holder).`;

export const SEMAPHORE_LIMIT_MISMATCH = (key: string, stored: number, asked: number) =>
  `Semaphore "${truncate(key)}" has limit ${stored} in the table, but this call asked for limit ${asked}. Every instance must use the same limit for a key: change the call, or use another key for the new limit.`;

export const SEMAPHORE_DATA_UNSUPPORTED = (scope: string) =>
  `${scope}: "data" cannot be stored with a semaphore slot ("limit" set): the semaphore item keeps every holder, so it holds no payloads to stay small. Keep the payload elsewhere, keyed by the lock's fencing token.`;

export const SEMAPHORE_STORE_UNSUPPORTED = () =>
  `The configured lock store keeps no semaphores ("limit" needs a store that keeps semaphores, as the DynamoDB table and MemoryLockStore do).`;

export const KEY_IS_SEMAPHORE = (key: string) =>
  `Lock key "${truncate(key)}" is in use here as a semaphore ("limit" set); it cannot be a mutex at the same time. Use the same "limit" for every call on this key, or another key for the mutex.`;

export const KEY_IS_MUTEX = (key: string) =>
  `Lock key "${truncate(key)}" is in use here as a mutex (no "limit"); it cannot be a semaphore at the same time. Use another key for the semaphore, or the same options for every call on this key.`;

export const SEMAPHORE_BUSY = (key: string, limit: number, holders: number, waitedMs: number | undefined) =>
  `Semaphore "${key}" has all ${limit} slot${limit === 1 ? '' : 's'} taken (${holders} holder${holders === 1 ? '' : 's'} seen) or callers waiting ahead; gave up after ${waitedMs === undefined ? 'one attempt (wait: false)' : `waiting ${waitedMs} ms`}.`;

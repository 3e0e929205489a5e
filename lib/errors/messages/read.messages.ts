import { describe, truncate } from './message.format';

/** Messages of reader-writer locks (`mode: 'read'`). */

/** Why a read lock was not granted: a writer holds the key, writers wait for it (they go first), or every reader place is taken. */
export type ReadBusyReason = 'writer' | 'line' | 'full' | 'upgrader';

export const READ_BUSY = (key: string, why: ReadBusyReason, holder: string | undefined, maxReaders: number, waitedMs: number | undefined) =>
  `Lock "${truncate(key)}" could not be read-locked: ${
    why === 'writer'
      ? `a writer${holder ? ` ("${holder}")` : ''} holds it`
      : why === 'line'
        ? 'writers wait for it, and they go first'
        : why === 'upgrader'
          ? 'another upgradeable reader holds it (one at a time)'
          : `all ${maxReaders} reader places are taken`
  }; gave up after ${waitedMs === undefined ? 'one attempt (wait: false)' : `waiting ${waitedMs} ms`}.`;

export const READ_HAS_NO_FENCE =
  'a read lock is shared by every reader of the key, so no write is fenced by it; take the key with mode: "write" (the default) to write under it';

export const READ_STORE_UNSUPPORTED = () =>
  `The configured lock store keeps no read locks (mode: "read" needs a store that keeps them, as the DynamoDB table and MemoryLockStore do).`;

export const READ_OPTION_UNSUPPORTED = (scope: string, option: string, mode = 'read') =>
  `${scope}: "${option}" cannot be used with mode: "${mode}" (a read lock has no data, fire or limit); remove "${option}", or take the key with mode: "write".`;

export const LOCK_MODE_INVALID = (scope: string, mode: unknown) =>
  `${scope}: mode must be "read", "upgradeable" or "write", got ${describe(mode)}.`;

export const WRITE_INSIDE_READ = (scope: string, key: string) =>
  `${scope}: lock "${truncate(key)}" is read-locked by this very call chain, so a write lock on it would wait for itself; take the key with mode: "write" from the start, or release the read lock first.`;

export const READ_LEAVE_CONTENDED = (key: string, attempts: number) =>
  `A reader of lock "${truncate(key)}" could not leave: the other readers changed the group before each of ${attempts} tries; its entry is passed once its lease runs out.`;

export const UPGRADE_UNSUPPORTED = (key: string) =>
  `lock.upgrade() on lock "${truncate(key)}": only a lock taken with mode: "upgradeable" (and not a nested handle of it) can become a write lock; take the key with mode: "upgradeable" to upgrade it later, or with mode: "write" from the start.`;

export const UPGRADE_BUSY = (key: string, readers: number, waitedMs: number | undefined) =>
  `lock.upgrade() on lock "${truncate(key)}": ${readers} other reader${readers === 1 ? '' : 's'} still hold it; gave up after ${waitedMs === undefined ? 'one attempt (wait: false)' : `waiting ${waitedMs} ms`}. The lock is still a read lock.`;

export const UPGRADEABLE_SET = (scope: string) =>
  `${scope}: mode: "upgradeable" takes one key, not a set of keys (a set's locks are upgraded one by one nowhere); take the set with mode: "read" or "write".`;

export const UPGRADE_LOST = (key: string) =>
  `lock.upgrade() on lock "${truncate(key)}": the read lock was no longer held (passed, or its lease ran out), so it cannot become a write lock.`;

export const UPGRADE_IN_PROGRESS = (key: string) =>
  `lock.upgrade() on lock "${truncate(key)}": an upgrade of this lock is already under way; await the first call's result instead of calling it again.`;

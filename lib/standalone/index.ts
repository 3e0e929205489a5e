/**
 * The `nestjs-dynamo-lock/standalone` entry point: the lock engine without NestJS, for scripts,
 * AWS Lambda handlers and other apps without Nest. It loads neither `@nestjs/*`, `rxjs` nor
 * `reflect-metadata` (those optional peers are needed only by the main entry point).
 *
 * @example
 * ```ts
 * import { LockManager } from 'nestjs-dynamo-lock/standalone';
 *
 * const locks = new LockManager({ tableName: 'locks' });
 * await locks.init();
 * await locks.withLock('nightly-export', async (lock) => exportAll(lock.fencingToken));
 * await locks.close();
 * ```
 * @module nestjs-dynamo-lock/standalone
 */
export { LockManager } from '../core/lock.manager';
export { Lock, type ReleaseOptions, type ReleaseOutcome, type UpgradeOptions } from '../core/engine/lock';
export { Leadership } from '../core/leadership/leadership';
export type { LeadOptions } from '../core/leadership/lead-options';
export { DEFAULTS, type ResolvedLockOptions } from '../core/engine/lock-options.resolver';
export type { DynamoLockOptions } from '../interfaces/dynamo-lock-options.interface';
export type { LockSortKey, LockTableKeys } from '../interfaces/lock-table-keys.interface';
export type { LockLogger } from '../interfaces/lock-logger.interface';
export type { AcquireOptions, LockMode } from '../interfaces/acquire-options.interface';
export type { LockInfo } from '../interfaces/lock-info.interface';
export type { JobFire, JobFireOutcome } from '../interfaces/job-fire.interface';
export type {
  AcquiredVia,
  FireSkipReason,
  LockEvent,
  LockEventBase,
  LockEventListener,
  LockEventType,
} from '../interfaces/lock-event.interface';
export { LOCK_EVENT_NAMES, type LockEventOf } from '../observability/lock-event.names';
export {
  DynamoLockError,
  LockBusyError,
  LockUnavailableError,
  LockLostError,
  LockValidationError,
  LockKeyError,
  type LockKeyProblem,
  LockConfigurationError,
  LockTableError,
  type LockTableLocation,
  type LockTableProblem,
  type LockHolder,
  type LockLostReason,
  LockTransactionError,
  type TransactionCancellation,
  LockFencedError,
} from '../errors/lock.errors';
export {
  DEFAULT_FENCE_ATTRIBUTE,
  type DocumentForm,
  type DocumentFencedWriteItem,
  type DocumentTransactItem,
  type FencedWriteItem,
  type FencedWriteOptions,
  type FencedWriteResult,
  type ItemForm,
  type TransactOptions,
  type TransactResult,
} from '../interfaces/fenced-write.interface';
export { MAX_TRANSACT_ITEMS } from '../store/fencing/fenced-request';
export type { MemoryWrite } from '../store/fencing/fencing.memory-store';
export { type Duration, parseDuration } from '../utils/duration';
export { createLockTable, ensureLockTable, type EnsureTableOptions } from '../store/dynamo/lock-table';
export { MemoryLockStore, type MemoryLockStoreOptions } from '../store/memory-lock.store';
export type { LockItemStore } from '../interfaces/lock-item-store.interface';
export { MAX_SEMAPHORE_LIMIT } from '../store/semaphore/semaphore.record';

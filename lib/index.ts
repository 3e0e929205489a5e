/**
 * nestjs-dynamo-lock: distributed lease locks on DynamoDB for NestJS.
 * @module nestjs-dynamo-lock
 */
export { DynamoLockModule } from './dynamo-lock.module';
export type { DynamoLockTestingOptions } from './testing/dynamo-lock-testing.module';
export {
  DYNAMO_LOCK_OPTIONS,
  DYNAMO_LOCK_OPTIONS_TYPE,
  DYNAMO_LOCK_ASYNC_OPTIONS_TYPE,
  type DynamoLockModuleExtras,
} from './dynamo-lock.module-definition';
export { LockService } from './lock.service';
export { WithLock } from './decorators/with-lock.decorator';
export { LockKeyTemplate } from './decorators/lock-key.template';
export { LockInterceptor, type LockConflictBody } from './interceptors/lock.interceptor';
export type { WithLockOptions } from './interfaces/with-lock-options.interface';
export { LockManager } from './core/lock.manager';
export { Lock } from './core/lock';
export { DEFAULTS, type ResolvedLockOptions } from './core/lock-options.resolver';
export type { DynamoLockOptions } from './interfaces/dynamo-lock-options.interface';
export type { AcquireOptions } from './interfaces/acquire-options.interface';
export type { LockInfo } from './interfaces/lock-info.interface';
export type { AcquiredVia, LockEvent, LockEventBase, LockEventListener, LockEventType } from './interfaces/lock-event.interface';
export { LOCK_EVENT_NAMES, type LockEventOf } from './observability/lock-event.names';
export {
  DynamoLockError,
  LockBusyError,
  LockLostError,
  LockValidationError,
  LockConfigurationError,
  LockTableError,
  type LockTableProblem,
  type LockHolder,
  type LockLostReason,
} from './errors/lock.errors';
export { type Duration, parseDuration } from './utils/duration';
export { createLockTable, ensureLockTable, type EnsureTableOptions } from './store/lock-table';
export type { LockStorePort } from './store/lock-store.interface';
export { MemoryLockStore } from './store/memory-lock.store';
export type { LockRecord, QueuedWaiter } from './store/lock-record';
export type { AcquireCondition, AcquireWrite, QueueWrite, WriteResult } from './store/lock.store';

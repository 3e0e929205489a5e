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
export {
  type LockableMethod,
  type SkipSafe,
  type SkippingWithLockDecorator,
  type SkipUnsafe,
  WithLock,
  type WithLockDecorator,
} from './decorators/with-lock.decorator';
export {
  type LeaderSkipSafe,
  type LeaderSkipUnsafe,
  WhenLeader,
  type WhenLeaderDecorator,
  type WhenLeaderOptions,
} from './decorators/when-leader.decorator';
export { LockKeyTemplate } from './decorators/lock-key.template';
export {
  LOCK_INTERCEPTOR_OPTIONS,
  LockInterceptor,
  type LockConflictBody,
  type LockInterceptorOptions,
  type LockKeyInvalidBody,
  type LockUnavailableBody,
} from './interceptors/lock.interceptor';
export type { WithLockOptions } from './interfaces/with-lock-options.interface';
// The engine, errors, store and types: the same as `nestjs-dynamo-lock/standalone`.
export * from './standalone';

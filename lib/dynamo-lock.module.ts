import { type DynamicModule, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { WhenLeaderExplorer } from './decorators/when-leader.explorer';
import { WithLockExplorer } from './decorators/with-lock.explorer';
import { EventEmitterBridge } from './event-emitter.bridge';
import { ConfigurableDynamoLockModule, DYNAMO_LOCK_ASYNC_OPTIONS_TYPE } from './dynamo-lock.module-definition';
import { LockConfigurationError } from './errors/lock.errors';
import { OPTIONS_NOT_OBJECT } from './errors/lock.messages';
import { LockService } from './lock.service';
import { type DynamoLockTestingOptions, dynamoLockTestingModule } from './testing/dynamo-lock-testing.module';

/**
 * Registers {@link LockService} (and the start-up check of `@WithLock` classes, and the campaigns
 * of `@WhenLeader` methods). Global unless
 * `isGlobal: false`.
 *
 * @example
 * ```ts
 * @Module({ imports: [DynamoLockModule.forRoot({ tableName: 'locks', leaseDuration: '30s', createTable: true })] })
 * export class AppModule {}
 *
 * DynamoLockModule.forRootAsync({
 *   imports: [ConfigModule],
 *   inject: [ConfigService],
 *   useFactory: (config: ConfigService) => ({ tableName: config.getOrThrow('LOCK_TABLE') }),
 * });
 * ```
 */
@Module({
  imports: [DiscoveryModule],
  providers: [LockService, WithLockExplorer, WhenLeaderExplorer, EventEmitterBridge],
  exports: [LockService],
})
export class DynamoLockModule extends ConfigurableDynamoLockModule {
  /**
   * Registers the module with options from a factory (with injected dependencies), a class or
   * an existing provider. A factory that returns no options object fails the start-up, naming it.
   */
  static override forRootAsync(options: typeof DYNAMO_LOCK_ASYNC_OPTIONS_TYPE): DynamicModule {
    const { useFactory } = options;
    if (!useFactory) return super.forRootAsync(options);
    return super.forRootAsync({
      ...options,
      useFactory: async (...args: unknown[]) => {
        const value: unknown = await useFactory(...args);
        // `undefined` would otherwise mean "all defaults" further on.
        if (value === null || typeof value !== 'object') throw new LockConfigurationError(OPTIONS_NOT_OBJECT(value));
        return value;
      },
    });
  }

  /**
   * For unit tests of code that uses `@WithLock` or `LockService`: a global module whose
   * `LockService` keeps its locks in memory (a `MemoryLockStore`, same semantics as the
   * table: leases, fencing tokens, re-entrancy, busy errors) and never contacts DynamoDB.
   *
   * @example
   * ```ts
   * const moduleRef = await Test.createTestingModule({
   *   imports: [DynamoLockModule.forTesting({ leaseDuration: '2s' })],
   *   providers: [InvoiceService],
   * }).compile();
   * ```
   */
  static forTesting(options?: DynamoLockTestingOptions): DynamicModule {
    return dynamoLockTestingModule(DynamoLockModule, options);
  }
}

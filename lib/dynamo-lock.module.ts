import { type DynamicModule, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { WithLockExplorer } from './decorators/with-lock.explorer';
import { EventEmitterBridge } from './observability/event-emitter.bridge';
import { ConfigurableDynamoLockModule } from './dynamo-lock.module-definition';
import { LockService } from './lock.service';
import { type DynamoLockTestingOptions, dynamoLockTestingModule } from './testing/dynamo-lock-testing.module';

/**
 * Registers {@link LockService} (and the start-up check of `@WithLock` classes). Global unless
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
  providers: [LockService, WithLockExplorer, EventEmitterBridge],
  exports: [LockService],
})
export class DynamoLockModule extends ConfigurableDynamoLockModule {
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

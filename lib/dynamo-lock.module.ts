import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { WithLockExplorer } from './decorators/with-lock.explorer';
import { ConfigurableDynamoLockModule } from './dynamo-lock.module-definition';
import { LockService } from './lock.service';

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
  providers: [LockService, WithLockExplorer],
  exports: [LockService],
})
export class DynamoLockModule extends ConfigurableDynamoLockModule {}

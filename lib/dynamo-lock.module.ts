import { Module } from '@nestjs/common';
import { ConfigurableDynamoLockModule } from './dynamo-lock.module-definition';
import { LockService } from './lock.service';

/**
 * Registers {@link LockService}. Global unless `isGlobal: false`.
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
  providers: [LockService],
  exports: [LockService],
})
export class DynamoLockModule extends ConfigurableDynamoLockModule {}

import { type DynamicModule, Module, type Provider } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { WhenLeaderExplorer } from './decorators/when-leader.explorer';
import { WithLockExplorer } from './decorators/with-lock.explorer';
import { EventEmitterBridge } from './event-emitter.bridge';
import {
  ConfigurableDynamoLockModule,
  DYNAMO_LOCK_ASYNC_OPTIONS_TYPE,
  DYNAMO_LOCK_OPTIONS,
  DYNAMO_LOCK_OPTIONS_TYPE,
} from './dynamo-lock.module-definition';
import { withEntryPoint } from './core/engine/lock-options.resolver';
import type { DynamoLockOptions } from './interfaces/dynamo-lock-options.interface';
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
   * Registers the module with `options` (every default when left out).
   * @throws LockConfigurationError when `options` is not an object.
   */
  static override forRoot(options: typeof DYNAMO_LOCK_OPTIONS_TYPE): DynamicModule {
    // Left out (from JavaScript): every default, as for a LockManager.
    const given: unknown = options === undefined ? {} : options;
    if (given === null || typeof given !== 'object') throw new LockConfigurationError(OPTIONS_NOT_OBJECT(given, 'forRoot'));
    return noteEntryPoint(super.forRoot(given), 'forRoot');
  }

  /**
   * Registers the module with options from a factory (with injected dependencies), a class or
   * an existing provider. A factory that returns no options object fails the start-up, naming it.
   */
  static override forRootAsync(options: typeof DYNAMO_LOCK_ASYNC_OPTIONS_TYPE): DynamicModule {
    return noteEntryPoint(super.forRootAsync(options), 'forRootAsync');
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

/**
 * `module` with the entry point noted on the options its options provider gives (so that
 * configuration errors name `forRoot()` or `forRootAsync()`); an options factory that gives no
 * object fails the start-up, naming it (`undefined` would otherwise mean "all defaults").
 */
function noteEntryPoint(module: DynamicModule, entry: 'forRoot' | 'forRootAsync'): DynamicModule {
  const noted = (value: unknown): DynamoLockOptions => {
    if (value === null || typeof value !== 'object') throw new LockConfigurationError(OPTIONS_NOT_OBJECT(value, entry));
    return withEntryPoint(value, entry);
  };
  const providers = module.providers?.map((provider): Provider => {
    if (typeof provider !== 'object' || provider.provide !== DYNAMO_LOCK_OPTIONS) return provider;
    if ('useValue' in provider) return { ...provider, useValue: noted(provider.useValue) };
    if ('useFactory' in provider) {
      const { useFactory } = provider;
      return { ...provider, useFactory: async (...args: unknown[]) => noted(await useFactory(...args)) };
    }
    return provider;
  });
  return { ...module, providers };
}

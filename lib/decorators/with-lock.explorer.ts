import { Injectable, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { LockConfigurationError } from '../errors/lock.errors';
import { LOCK_SERVICE_MISSING } from '../errors/lock.messages';
import { LOCK_SERVICE_PROPERTY, WITH_LOCK_METHODS } from './with-lock.decorator';

/**
 * At start-up, finds every provider and controller whose class uses `@WithLock` and fails the
 * boot, naming the class, when Nest could not inject a `LockService` into it (a module that
 * cannot see a non-global `DynamoLockModule`). Request-scoped and transient classes (whose
 * instances Nest creates later, per request or per consumer) are checked at their first call.
 */
@Injectable()
export class WithLockExplorer implements OnModuleInit {
  constructor(private readonly discovery: DiscoveryService) {}

  /** @internal */
  onModuleInit(): void {
    for (const wrapper of [...this.discovery.getProviders(), ...this.discovery.getControllers()]) {
      const instance: unknown = wrapper.instance;
      if (!instance || typeof instance !== 'object' || !wrapper.isDependencyTreeStatic() || wrapper.isTransient) continue;
      const methods = Reflect.getMetadata(WITH_LOCK_METHODS, instance.constructor) as string[] | undefined;
      if (!methods?.length) continue;
      if (!(instance as Record<symbol, unknown>)[LOCK_SERVICE_PROPERTY]) {
        throw new LockConfigurationError(LOCK_SERVICE_MISSING(instance.constructor.name, methods[0]));
      }
    }
  }
}

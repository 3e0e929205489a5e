import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { LockManager } from './core/lock.manager';
import { DYNAMO_LOCK_OPTIONS } from './dynamo-lock.module-definition';
import type { DynamoLockOptions } from './interfaces/dynamo-lock-options.interface';

/**
 * The lock service of `DynamoLockModule`: acquire, tryAcquire, withLock, inspect and current.
 * Checks (or creates) the table at start-up, so a missing or wrong table fails the app's boot,
 * and releases every held lock on application shutdown.
 *
 * @example
 * ```ts
 * constructor(private readonly locks: LockService) {}
 *
 * payInvoice(id: string) {
 *   return this.locks.withLock(`invoice-${id}`, async (lock) => {
 *     await this.payments.charge(id, { fencingToken: lock.fencingToken });
 *   });
 * }
 * ```
 */
@Injectable()
export class LockService extends LockManager implements OnModuleInit, OnApplicationShutdown {
  constructor(@Inject(DYNAMO_LOCK_OPTIONS) options: DynamoLockOptions) {
    // Anything but an object is left for the options check, which names the mistake.
    super(options !== null && typeof options === 'object' ? { ...options, logger: options.logger ?? new Logger('DynamoLock') } : options);
  }

  /** @internal Nest lifecycle: verifies or creates the table. */
  async onModuleInit(): Promise<void> {
    await this.init();
  }

  /** @internal Nest lifecycle: releases held locks and stops timers. */
  async onApplicationShutdown(): Promise<void> {
    await this.close();
  }
}

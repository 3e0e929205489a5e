import { Injectable, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { LockConfigurationError } from '../errors/lock.errors';
import { LOCK_SERVICE_MISSING, SCHEDULE_UNREADABLE } from '../errors/lock.messages';
import { LockService } from '../lock.service';
import { schedulePeriodMs } from './schedule-period.reader';
import { LOCK_SERVICE_PROPERTY, WITH_LOCK_METHODS } from './with-lock.decorator';
import { fitToSchedule, WITH_LOCK_PLAN, type WithLockPlan } from './with-lock.plan';

/**
 * At start-up, finds every provider and controller whose class uses `@WithLock`: fails the boot,
 * naming the class, when Nest could not inject a `LockService` into it (a module that cannot see
 * a non-global `DynamoLockModule`), and fits the `holdAtLeast` of each `onBusy: 'skip'` method to
 * its `@Cron`/`@Interval` schedule (or fails, naming the method, when a `holdAtLeast` that was set
 * reaches the period). Transient instances are checked by their own `onModuleInit` (see
 * `@WithLock`); request-scoped classes, whose instances Nest creates per request, at their first call.
 */
@Injectable()
export class WithLockExplorer implements OnModuleInit {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly locks: LockService,
  ) {}

  /** @internal */
  async onModuleInit(): Promise<void> {
    for (const wrapper of [...this.discovery.getProviders(), ...this.discovery.getControllers()]) {
      const instance: unknown = wrapper.instance;
      if (!instance || typeof instance !== 'object' || !wrapper.isDependencyTreeStatic() || wrapper.isTransient) continue;
      const methods = Reflect.getMetadata(WITH_LOCK_METHODS, instance.constructor) as PropertyKey[] | undefined;
      if (!methods?.length) continue;
      if (!(instance as Record<symbol, unknown>)[LOCK_SERVICE_PROPERTY]) {
        throw new LockConfigurationError(LOCK_SERVICE_MISSING(instance.constructor.name, String(methods[0])));
      }
      for (const name of methods) await this.fitMethod(Reflect.get(instance, name));
    }
  }

  /** Fits one `@WithLock` method's plan to its schedule, if it has both. */
  private async fitMethod(method: unknown): Promise<void> {
    if (typeof method !== 'function') return;
    const plan = Reflect.getMetadata(WITH_LOCK_PLAN, method) as WithLockPlan | undefined;
    if (!plan?.skip) return;
    const periodMs = await schedulePeriodMs(method);
    if (periodMs === null) {
      if (!plan.holdAtLeastSet) this.locks.options.logger.warn(SCHEDULE_UNREADABLE(plan.where, plan.holdAtLeastMs));
      return;
    }
    if (periodMs !== undefined) fitToSchedule(plan, periodMs);
  }
}

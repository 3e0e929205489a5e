import { Injectable, type OnApplicationBootstrap, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { LockConfigurationError } from '../errors/lock.errors';
import {
  CATCH_UP_FAILED,
  CATCH_UP_NEEDS_STATIC_KEY,
  CRON_UNREADABLE,
  FIRES_CHECK_FAILED,
  FIRES_MISSED,
  LOCK_SERVICE_MISSING,
} from '../errors/lock.messages';
import { LockService } from '../lock.service';
import { internalsOf } from '../core/engine/lock.internals';
import { scheduleOf } from './job-schedule.reader';
import { LOCK_SERVICE_PROPERTY, WITH_LOCK_METHODS } from './with-lock.decorator';
import { fitToSchedule, WITH_LOCK_JOB, WITH_LOCK_PLAN, type WithLockJob, type WithLockPlan } from './with-lock.plan';

/** The provider of `@nestjs/schedule` that runs the jobs: without it, no job runs, and none is caught up. */
const SCHEDULER_REGISTRY = 'SchedulerRegistry';
/** The most recent fires, up to half a period or this long before start-up, are not reported missed. */
const MISSED_GRACE_MS = 10_000;

/** A `@Cron` job whose fires are claimed: checked at start-up for fires no instance ran. */
interface ClaimedJob {
  readonly self: object;
  readonly plan: WithLockPlan & { fires: NonNullable<WithLockPlan['fires']> };
  readonly job: WithLockJob;
  /** Its key, when the template takes no argument. */
  readonly key: string | undefined;
}

/**
 * At start-up, finds every provider and controller whose class uses `@WithLock`: fails the boot,
 * naming the class, when Nest could not inject a `LockService` into it (a module that cannot see
 * a non-global `DynamoLockModule`), and fits each `onBusy: 'skip'` method to its `@Cron`/`@Interval`
 * schedule (a `@Cron` fire is then claimed by its scheduled time; a schedule that cannot be read,
 * or a `holdAtLeast` or `leaseDuration` that reaches its period, fails the boot naming the method).
 * Once the app is up, a claimed job whose last fire before start-up ran nowhere is reported
 * (`missed`), or run once with `catchUp: 'last'`. Transient instances are checked by their own
 * `onModuleInit` (see `@WithLock`); request-scoped classes, whose instances Nest creates per
 * request, at their first call.
 */
@Injectable()
export class WithLockExplorer implements OnModuleInit, OnApplicationBootstrap {
  private readonly jobs: ClaimedJob[] = [];

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
      for (const name of methods) await this.fitMethod(instance, Reflect.get(instance, name));
    }
  }

  /** @internal Once every module is up: fires missed while no instance was up (only where a scheduler runs the jobs). */
  async onApplicationBootstrap(): Promise<void> {
    const scheduled = this.discovery.getProviders().some((wrapper) => wrapper.name === SCHEDULER_REGISTRY);
    if (scheduled) await Promise.all(this.jobs.map((job) => this.startUp(job)));
  }

  /** Fits one `@WithLock` method's plan to its schedule, if it has one. */
  private async fitMethod(self: object, method: unknown): Promise<void> {
    if (typeof method !== 'function') return;
    const plan = Reflect.getMetadata(WITH_LOCK_PLAN, method) as WithLockPlan | undefined;
    if (!plan || (!plan.skip && plan.catchUp === 'none')) return;
    const schedule = await scheduleOf(method);
    if (schedule === null) throw new LockConfigurationError(CRON_UNREADABLE(plan.where));
    fitToSchedule(plan, schedule);
    const job = Reflect.getMetadata(WITH_LOCK_JOB, method) as WithLockJob | undefined;
    if (!plan.fires || !job) return;
    let key: string | undefined;
    try {
      key = job.staticKey();
    } catch {
      if (plan.catchUp === 'last') throw new LockConfigurationError(CATCH_UP_NEEDS_STATIC_KEY(plan.where, job.template));
    }
    this.jobs.push({ self, plan: plan as ClaimedJob['plan'], job, key });
  }

  /**
   * One read of a claimed job's item: when the last fire before now ran on no instance, runs it
   * (`catchUp: 'last'`, claimed as any fire is, so once across instances), or reports it missed.
   */
  private async startUp({ self, plan, job, key }: ClaimedJob): Promise<void> {
    if (key === undefined) return;
    const { logger } = this.locks.options;
    // A fire of the last moments may be running, or claimed, right now on an instance whose clock is
    // a little behind or whose answer is in flight: not missed.
    const last = plan.fires.lastBefore(Date.now() - Math.min(plan.fires.periodMs / 2, MISSED_GRACE_MS));
    if (last === undefined) return;
    let claimed: number | undefined;
    try {
      claimed = (await this.locks.lastFire(key))?.scheduledAt.getTime();
    } catch (error) {
      logger.warn(FIRES_CHECK_FAILED(plan.where, key, error));
      return;
    }
    // A job never claimed (a first deployment, or an item TTL deleted while idle) has nothing to
    // catch up that is known: running its last fire could run one that ran before the deletion.
    if (claimed === undefined || claimed >= last) return;
    if (plan.catchUp === 'last') {
      // In the background: a long job must not hold the app's start-up.
      void job.runFire(self, last).catch((error: unknown) => logger.error?.(CATCH_UP_FAILED(plan.where, error)));
      return;
    }
    const count = plan.fires.countBetween(claimed, last);
    logger.log(FIRES_MISSED(plan.where, key, new Date(last), count, new Date(claimed)));
    internalsOf(this.locks).emit({
      type: 'fire',
      key,
      owner: this.locks.options.ownerName,
      scheduledAt: new Date(last),
      outcome: 'missed',
      count,
    });
  }
}

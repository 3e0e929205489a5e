import { LockConfigurationError, LockValidationError } from '../errors/lock.errors';
import {
  CATCH_UP_INVALID,
  CATCH_UP_NEEDS_CRON,
  HOLD_AT_LEAST_REACHES_PERIOD,
  LEASE_REACHES_PERIOD,
  MULTI_TEMPLATE_OPTION,
  WITH_LOCK_OPTION_INVALID,
} from '../errors/lock.messages';
import type { AcquireOptions } from '../interfaces/acquire-options.interface';
import type { WithLockOptions } from '../interfaces/with-lock-options.interface';
import { resolveWait } from '../core/engine/lock-options.resolver';
import { checkSemaphoreOptions } from '../core/semaphore/semaphore.options';
import { checkReadOptions } from '../core/rw/read.options';
import { unknownOptionMessage } from '../utils/closest-name';
import { parseDuration, parseLease } from '../utils/duration';
import type { FireSchedule, JobSchedule } from './job-schedule.reader';
import { SkipReporter } from './skip.reporter';

/** Metadata on a `@WithLock` method (the wrapper): its {@link WithLockPlan}, read at boot. */
export const WITH_LOCK_PLAN = 'nestjs-dynamo-lock:with-lock-plan';
/** Metadata on a `@WithLock` method (the wrapper): its {@link WithLockJob}, read at boot. */
export const WITH_LOCK_JOB = 'nestjs-dynamo-lock:with-lock-job';

/** What the boot needs to catch up a scheduled job: its key when it takes no argument, and a run of one fire. */
export interface WithLockJob {
  readonly template: string;
  /** @throws LockKeyError when the template uses the method's arguments. */
  staticKey(): string;
  /** Runs the method, with no argument, for the fire scheduled at `fire` (epoch ms). */
  runFire(self: object, fire: number): Promise<void>;
}

/** `holdAtLeast` of a skipping method without a schedule to derive it from. */
const DEFAULT_SKIP_HOLD_MS = 1_000;
/** The longest `holdAtLeast` derived from a schedule: the clock-skew bound of long periods. */
const MAX_DERIVED_HOLD_MS = 10_000;

/** How one `@WithLock` method runs, from its options (checked at class definition) and its schedule (at boot). */
export interface WithLockPlan {
  /** `Class.method`, for messages. */
  readonly where: string;
  readonly skip: boolean;
  /** How long the lock is kept at least after acquisition; derived from the schedule unless set. */
  holdAtLeastMs: number;
  /** The same for a call that claimed a scheduled fire: none unless set (the claim keeps the fire from running again). */
  claimedHoldMs: number;
  /** `holdAtLeast` was given, so the schedule only checks it. */
  readonly holdAtLeastSet: boolean;
  readonly acquire: Omit<AcquireOptions, 'data' | 'signal'>;
  readonly data: WithLockOptions['data'];
  /** Logs skipped calls without flooding the logger. */
  readonly skips: SkipReporter;
  /** The lease asked for, in ms, when `leaseDuration` was given. */
  readonly leaseMs: number | undefined;
  /** What to do at start-up about fires no instance ran. */
  readonly catchUp: 'none' | 'last';
  /** Keys from an array of templates: a multi-key lock (no fire claims, no semaphore, no data). */
  readonly multi: boolean;
  /**
   * The fires of its `@Cron` schedule (read at boot), for a skipping single attempt: each call by
   * the scheduler claims its fire, by scheduled time, so each fire runs once across instances.
   */
  fires?: FireSchedule;
}

/** Every option of `@WithLock` (the compiler keeps it complete). */
const WITH_LOCK_OPTION_NAMES = Object.keys({
  wait: true,
  leaseDuration: true,
  heartbeat: true,
  onBusy: true,
  holdAtLeast: true,
  data: true,
  limit: true,
  catchUp: true,
  mode: true,
} satisfies Record<keyof WithLockOptions, true>);

/**
 * Checks the options when the class is defined, so a bad one fails at start-up.
 * @param multi the key is an array of templates (a multi-key lock).
 * @throws LockValidationError naming the method and the option.
 */
export function planOf(options: WithLockOptions, where: string, multi = false): WithLockPlan {
  if (options === null || typeof options !== 'object')
    throw new LockValidationError(WITH_LOCK_OPTION_INVALID(where, 'options', 'an object', options));
  const unknown = unknownOptionMessage(options, WITH_LOCK_OPTION_NAMES, `@WithLock on ${where}`);
  if (unknown) throw new LockValidationError(unknown);
  const { onBusy = 'throw', holdAtLeast, data, catchUp = 'none', ...acquire } = options;
  if (catchUp !== 'none' && catchUp !== 'last') throw new LockValidationError(CATCH_UP_INVALID(where, catchUp));
  if (multi) {
    const refused =
      (['limit', 'data'] as const).find((name) => options[name] !== undefined) ?? (catchUp === 'none' ? undefined : 'catchUp');
    if (refused) throw new LockValidationError(MULTI_TEMPLATE_OPTION(where, refused));
  }
  if (onBusy !== 'throw' && onBusy !== 'skip')
    throw new LockValidationError(WITH_LOCK_OPTION_INVALID(where, 'onBusy', "'throw' or 'skip'", onBusy));
  if (acquire.heartbeat !== undefined && typeof acquire.heartbeat !== 'boolean') {
    throw new LockValidationError(WITH_LOCK_OPTION_INVALID(where, 'heartbeat', 'true or false', acquire.heartbeat));
  }
  const checked = <T>(read: () => T): T => {
    try {
      return read();
    } catch (error) {
      throw new LockValidationError(`@WithLock on ${where}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
  };
  if (acquire.wait !== undefined) checked(() => resolveWait(acquire.wait!));
  const leaseMs = acquire.leaseDuration === undefined ? undefined : checked(() => parseLease(acquire.leaseDuration));
  if (acquire.limit !== undefined) checkSemaphoreOptions({ limit: acquire.limit, data }, `@WithLock on ${where}`);
  checkReadOptions({ mode: acquire.mode, limit: acquire.limit, data }, `@WithLock on ${where}`);
  const skip = onBusy === 'skip';
  const holdAtLeastSet = holdAtLeast !== undefined;
  return {
    where,
    skip,
    holdAtLeastMs: holdAtLeastMs(holdAtLeast, skip, checked),
    claimedHoldMs: holdAtLeast === undefined ? 0 : holdAtLeastMs(holdAtLeast, skip, checked),
    holdAtLeastSet,
    acquire: { ...acquire, wait: acquire.wait ?? (skip ? false : undefined) },
    data,
    skips: new SkipReporter(where),
    leaseMs,
    catchUp,
    multi,
  };
}

function holdAtLeastMs(holdAtLeast: WithLockOptions['holdAtLeast'], skip: boolean, checked: <T>(read: () => T) => T): number {
  if (holdAtLeast === undefined) return skip ? DEFAULT_SKIP_HOLD_MS : 0;
  if (holdAtLeast === 0) return 0;
  return checked(() => parseDuration(holdAtLeast, 'holdAtLeast'));
}

/**
 * Fits a skipping method to its schedule. A `@Cron` fire attempted once claims its scheduled time
 * (so a release never frees it for a second run: no `holdAtLeast` is needed, and none is derived).
 * Otherwise (`@Interval`, or a skipping method that waits) `holdAtLeast` is derived from the period,
 * so each tick runs once and the next finds the lock free: half the period (at most 10 s), which
 * is also how far apart the instances' clocks may be.
 * @throws LockConfigurationError when a `holdAtLeast` or a `leaseDuration` that was set reaches the
 *   period of a `@Cron` schedule, or `catchUp` is asked without one.
 */
export function fitToSchedule(plan: WithLockPlan, schedule: JobSchedule | undefined): void {
  const singleAttempt = plan.acquire.wait !== undefined && resolveWait(plan.acquire.wait) === 0;
  const claims =
    plan.skip &&
    singleAttempt &&
    schedule?.kind === 'cron' &&
    plan.acquire.limit === undefined &&
    (plan.acquire.mode ?? 'write') === 'write' &&
    !plan.multi;
  if (plan.catchUp !== 'none' && !claims) throw new LockConfigurationError(CATCH_UP_NEEDS_CRON(plan.where));
  if (!plan.skip || schedule === undefined || !(schedule.periodMs > 0)) return;
  const { periodMs } = schedule;
  if (plan.holdAtLeastSet && plan.holdAtLeastMs >= periodMs) {
    throw new LockConfigurationError(HOLD_AT_LEAST_REACHES_PERIOD(plan.where, plan.holdAtLeastMs, periodMs));
  }
  if (claims) {
    if (plan.leaseMs !== undefined && plan.leaseMs >= periodMs) {
      throw new LockConfigurationError(LEASE_REACHES_PERIOD(plan.where, plan.leaseMs, periodMs));
    }
    plan.fires = schedule.fires;
  }
  // Calls that claim no fire (by hand, or a skipping method that waits, or an @Interval) keep the
  // lock for half the period, so that an instance whose timer fires a little late skips the tick.
  if (!plan.holdAtLeastSet) plan.holdAtLeastMs = Math.min(Math.floor(periodMs / 2), MAX_DERIVED_HOLD_MS);
}

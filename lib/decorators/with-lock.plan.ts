import { LockConfigurationError, LockValidationError } from '../errors/lock.errors';
import { HOLD_AT_LEAST_REACHES_PERIOD, WITH_LOCK_OPTION_INVALID } from '../errors/lock.messages';
import type { AcquireOptions } from '../interfaces/acquire-options.interface';
import type { WithLockOptions } from '../interfaces/with-lock-options.interface';
import { resolveWait } from '../core/engine/lock-options.resolver';
import { checkSemaphoreOptions } from '../core/semaphore/semaphore.options';
import { unknownOptionMessage } from '../utils/closest-name';
import { parseDuration, parseLease } from '../utils/duration';
import { SkipReporter } from './skip.reporter';

/** Metadata on a `@WithLock` method (the wrapper): its {@link WithLockPlan}, read at boot. */
export const WITH_LOCK_PLAN = 'nestjs-dynamo-lock:with-lock-plan';

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
  /** `holdAtLeast` was given, so the schedule only checks it. */
  readonly holdAtLeastSet: boolean;
  readonly acquire: Omit<AcquireOptions, 'data' | 'signal'>;
  readonly data: WithLockOptions['data'];
  /** Logs skipped calls without flooding the logger. */
  readonly skips: SkipReporter;
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
} satisfies Record<keyof WithLockOptions, true>);

/**
 * Checks the options when the class is defined, so a bad one fails at start-up.
 * @throws LockValidationError naming the method and the option.
 */
export function planOf(options: WithLockOptions, where: string): WithLockPlan {
  if (options === null || typeof options !== 'object')
    throw new LockValidationError(WITH_LOCK_OPTION_INVALID(where, 'options', 'an object', options));
  const unknown = unknownOptionMessage(options, WITH_LOCK_OPTION_NAMES, `@WithLock on ${where}`);
  if (unknown) throw new LockValidationError(unknown);
  const { onBusy = 'throw', holdAtLeast, data, ...acquire } = options;
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
  if (acquire.leaseDuration !== undefined) checked(() => parseLease(acquire.leaseDuration));
  if (acquire.limit !== undefined) checkSemaphoreOptions({ limit: acquire.limit, data }, `@WithLock on ${where}`);
  const skip = onBusy === 'skip';
  const holdAtLeastSet = holdAtLeast !== undefined;
  return {
    where,
    skip,
    holdAtLeastMs: holdAtLeastMs(holdAtLeast, skip, checked),
    holdAtLeastSet,
    acquire: { ...acquire, wait: acquire.wait ?? (skip ? false : undefined) },
    data,
    skips: new SkipReporter(where),
  };
}

function holdAtLeastMs(holdAtLeast: WithLockOptions['holdAtLeast'], skip: boolean, checked: <T>(read: () => T) => T): number {
  if (holdAtLeast === undefined) return skip ? DEFAULT_SKIP_HOLD_MS : 0;
  if (holdAtLeast === 0) return 0;
  return checked(() => parseDuration(holdAtLeast, 'holdAtLeast'));
}

/**
 * Fits a skipping method's `holdAtLeast` to the period of its `@Cron`/`@Interval` schedule, so
 * each tick runs once and the next tick finds the lock free: half the period (at most 10 s) by
 * default, which is also how far apart the instances' clocks may be.
 * @throws LockConfigurationError when a `holdAtLeast` that was set reaches the period.
 */
export function fitToSchedule(plan: WithLockPlan, periodMs: number): void {
  if (!plan.skip || !(periodMs > 0)) return;
  if (!plan.holdAtLeastSet) plan.holdAtLeastMs = Math.min(Math.floor(periodMs / 2), MAX_DERIVED_HOLD_MS);
  else if (plan.holdAtLeastMs >= periodMs) {
    throw new LockConfigurationError(HOLD_AT_LEAST_REACHES_PERIOD(plan.where, plan.holdAtLeastMs, periodMs));
  }
}

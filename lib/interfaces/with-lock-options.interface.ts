import type { Duration } from '../utils/duration';
import type { AcquireOptions } from './acquire-options.interface';

/** Options of `@WithLock(template, options)`. */
export interface WithLockOptions extends Omit<AcquireOptions, 'signal' | 'data' | 'fireTime'> {
  /**
   * What to do when the lock is busy: `'throw'` a `LockBusyError` (default; `LockInterceptor`
   * turns it into HTTP 409) or `'skip'`: return `undefined` without running the method, logging at
   * debug level. With `'skip'`, `wait` defaults to `false` (one attempt).
   */
  onBusy?: 'throw' | 'skip';
  /**
   * Keep the lock at least this long after acquiring it, even when the method returns sooner:
   * instances whose timers fire a little later then skip the same scheduled tick instead of
   * running it again. Default `0`, or `'1s'` with `onBusy: 'skip'`; choose about half the
   * period of your schedule (`0` turns it off).
   */
  holdAtLeast?: Duration;
  /**
   * For a `@Cron` method with `onBusy: 'skip'`: what an instance does at start-up about fires no
   * instance ran while none was up. `'none'` (default): nothing (a `fire` event with outcome
   * `missed` tells of them); `'last'`: runs the most recent missed fire once (claimed as any fire
   * is, so once across instances). The key template must need no argument.
   */
  catchUp?: 'none' | 'last';
  /** Data stored with the lock: a value, or a function of the method's arguments. */
  // eslint-disable-next-line @typescript-eslint/no-redundant-type-constituents -- the function form is the documented one
  data?: unknown | ((...args: never[]) => unknown);
}

import { isObservable, Observable } from 'rxjs';
import type { Lock } from '../core/engine/lock';
import { LockBusyError, LockConfigurationError, LockKeyError, LockValidationError } from '../errors/lock.errors';
import {
  LOCK_SERVICE_MISSING,
  MULTI_TEMPLATE_EMPTY,
  STATIC_METHOD,
  WITH_LOCK_NO_INSTANCE,
  WITH_LOCK_NOT_A_METHOD,
  WITH_LOCK_RETURN_TYPE,
  WITH_LOCK_OBSERVABLE_UNDECLARED,
} from '../errors/lock.messages';
import type { WithLockOptions } from '../interfaces/with-lock-options.interface';
import { LockService } from '../lock.service';
import { monotonicNow } from '../utils/clock';
import { internalsOf } from '../core/engine/lock.internals';
import { semaphoreKeyOf } from '../core/semaphore/semaphore.options';
import { copyMetadata } from './copy-metadata';
import { injectLockService, type KeyCheck, LOCK_SERVICE_PROPERTY, WITH_LOCK_KEY, WITH_LOCK_METHODS } from './lock-service.injection';
import { hasRestParameter } from './rest-parameter';
import { LockKeyTemplate } from './lock-key.template';
import { LockKeyTemplates } from './lock-keys.template';
import { planOf, WITH_LOCK_JOB, WITH_LOCK_PLAN, type WithLockJob, type WithLockPlan } from './with-lock.plan';
import type { SkippedFire } from './skip.reporter';
import type { ReleaseFire } from '../store/mutex/mutex-store.protocol';

export { LOCK_SERVICE_PROPERTY, WITH_LOCK_METHODS } from './lock-service.injection';

type Method = (this: object, ...args: unknown[]) => unknown;

/** A method `@WithLock` can wrap: it returns a Promise or an Observable, as the wrapped method does. */
export type LockableMethod = (...args: never[]) => Promise<unknown> | Observable<unknown>;

/**
 * With `onBusy: 'skip'` a skipped call resolves to (or emits) `undefined`: the method's declared
 * result must allow it (`Promise<void>`, `Promise<Report | undefined>`).
 */
export type SkipSafe<T> = T extends (...args: never[]) => Promise<infer V> | Observable<infer V>
  ? undefined extends V
    ? unknown
    : SkipUnsafe
  : unknown;

/** The compile error of a skipping method whose declared result cannot be `undefined`. */
export interface SkipUnsafe {
  /** Declare the result as `Promise<T | undefined>` (or `Observable<T | undefined>`): a skipped call resolves to `undefined`. */
  readonly 'onBusy: skip resolves to undefined when skipped: declare Promise<T | undefined>': never;
}

/** The decorator `@WithLock` returns: only methods returning a Promise or an Observable compile. */
export type WithLockDecorator = <T extends LockableMethod>(
  target: object,
  propertyKey: string | symbol,
  descriptor: TypedPropertyDescriptor<T>,
) => void;

/** The decorator `@WithLock(…, { onBusy: 'skip' })` returns: the method's result must allow `undefined`. */
export type SkippingWithLockDecorator = <T extends LockableMethod>(
  target: object,
  propertyKey: string | symbol,
  descriptor: TypedPropertyDescriptor<T> & SkipSafe<T>,
) => void;

/**
 * Runs the method while holding a lock whose key is built from its arguments: `<0>` is the
 * first argument, `<1.customer.id>` a property of the second. The template is checked when the
 * class is defined, so a bad one fails at start-up.
 *
 * Works on provider and controller methods, including `@Cron`/`@Interval`/`@Timeout` jobs in
 * either decorator order. The method must return a Promise (an `async` method) or an Observable
 * (declared `: Observable<T>`, which then holds the lock until it completes, errors or is
 * unsubscribed): other methods do not compile, and with decorator metadata fail at class
 * definition. Inside it, `LockService.current()` returns the lock. With `onBusy: 'skip'`, a
 * skipped call resolves to `undefined` (an Observable emits `undefined`), so the declared result
 * must allow it.
 *
 * With an array of templates, the method holds a multi-key lock: every key rendered, taken in
 * one global order (see `LockService.acquire`), so calls naming the same keys in any order never
 * deadlock. `limit`, `data` and `catchUp` are refused with an array.
 *
 * @example
 * ```ts
 * @WithLock('invoice-<0>')
 * async pay(invoiceId: string) { ... }
 *
 * @WithLock(['account-<0>', 'account-<1>'])
 * async transfer(from: string, to: string, amount: number) { ... }
 *
 * @Cron('0 * * * * *')
 * @WithLock('nightly-report', { onBusy: 'skip' })
 * async report() { ... }
 * ```
 * @throws LockValidationError at class definition for a malformed template or one naming a missing
 *   argument, fixed text that leaves no room for a key, bad options, or a method declared to return
 *   neither a Promise nor an Observable.
 *   A call whose values make no key rejects with a `LockKeyError` (400 through `LockInterceptor`);
 *   a template whose keys are too long with the module's `keyPrefix` (and a semaphore's key
 *   suffix) fails the boot, or the first call where the boot cannot see the method
 *   (`LockConfigurationError`).
 */
export function WithLock(template: string | readonly string[], options: WithLockOptions & { onBusy: 'skip' }): SkippingWithLockDecorator;
export function WithLock(template: string | readonly string[], options?: WithLockOptions): WithLockDecorator;
export function WithLock(
  template: string | readonly string[],
  options: WithLockOptions = {},
): WithLockDecorator | SkippingWithLockDecorator {
  return <T extends LockableMethod>(target: object, propertyKey: string | symbol, descriptor: TypedPropertyDescriptor<T>): void => {
    const className = typeof target === 'function' ? target.name : target.constructor.name;
    const where = `${className}.${String(propertyKey)}`;
    if (typeof target === 'function') throw new LockValidationError(STATIC_METHOD(where));
    if (typeof descriptor.value !== 'function') throw new LockValidationError(WITH_LOCK_NOT_A_METHOD(where));
    const original = descriptor.value as unknown as Method;
    // Without decorator metadata (plain JavaScript, some bundlers) the parameter count is unknown:
    // `Function.length` stops at a default or rest parameter.
    const paramTypes = Reflect.getMetadata('design:paramtypes', target, propertyKey) as unknown[] | undefined;
    // A rest parameter takes any number of arguments, which the metadata counts as one.
    const parameterCount = hasRestParameter(original) ? undefined : paramTypes?.length;
    // An array of templates: a multi-key lock (each template checked as a single one is).
    const templates: readonly string[] | undefined = typeof template === 'string' ? undefined : template;
    const multi = templates !== undefined;
    if (templates?.length === 0) throw new LockValidationError(MULTI_TEMPLATE_EMPTY(where));
    const keyTemplate = templates
      ? new LockKeyTemplates(templates.map((one: string) => new LockKeyTemplate(one, where, parameterCount)))
      : new LockKeyTemplate(template as string, where, parameterCount);
    const plan = planOf(options, where, multi);
    // A semaphore's stored key has a suffix: its keys are that much longer.
    const suffixBytes = plan.acquire.limit === undefined ? 0 : Buffer.byteLength(semaphoreKeyOf(''), 'utf8');
    const checkKey: KeyCheck = (keyPrefix) => keyTemplate.checkPrefix(keyPrefix, suffixBytes);
    const returnType: unknown = Reflect.getMetadata('design:returntype', target, propertyKey);
    const returnsObservable = isObservableType(returnType);
    // A declared result that is a known type other than a Promise or an Observable (`number`, a
    // class) cannot stay what it is under a lock. `Object` (a type alias, `import type`, a union,
    // an interface) and no type at all say nothing: an `async` method returns a Promise anyway,
    // and for the others an Observable result is caught when the method returns it.
    if (typeof returnType === 'function' && returnType !== Object && returnType !== Promise && !returnsObservable && !isAsync(original)) {
      throw new LockValidationError(WITH_LOCK_RETURN_TYPE(where, typeName(returnType)));
    }

    const wrapper = {
      [propertyKey as string](this: object, ...args: unknown[]): unknown {
        if (this === undefined || this === null) throw new LockConfigurationError(WITH_LOCK_NO_INSTANCE(where));
        const service = (this as Record<symbol, LockService | undefined>)[LOCK_SERVICE_PROPERTY];
        const run = async (signal?: AbortSignal) => {
          if (!service) throw new LockConfigurationError(LOCK_SERVICE_MISSING(this.constructor.name, String(propertyKey)));
          return runLocked(service, this, original, args, keyTemplate, plan, checkKey, signal);
        };
        if (returnsObservable) return lockedObservable(run);
        // Without decorator metadata an Observable result is known only once the method ran: the
        // caller has a Promise by then, and a Promise of an Observable would fail silently.
        return run().then(async ({ value, release }) => {
          if (!isObservable(value)) return value;
          await release?.('failed');
          throw new LockValidationError(WITH_LOCK_OBSERVABLE_UNDECLARED(where));
        });
      },
    }[propertyKey as string];
    Object.defineProperty(wrapper, 'length', { value: original.length });
    copyMetadata(original, wrapper);
    // Read at boot, to fit `holdAtLeast` to the method's schedule and check the key prefix.
    Reflect.defineMetadata(WITH_LOCK_PLAN, plan, wrapper);
    Reflect.defineMetadata(WITH_LOCK_KEY, checkKey, wrapper);
    // Read at boot by a job's catch-up: its key when it takes no argument, and a run of one fire.
    const job: WithLockJob = {
      template: keyTemplate.template,
      staticKey: () => String(keyTemplate.render([])),
      runFire: async (self, fire) => {
        const service = (self as Record<symbol, LockService | undefined>)[LOCK_SERVICE_PROPERTY];
        if (!service) throw new LockConfigurationError(LOCK_SERVICE_MISSING(self.constructor.name, String(propertyKey)));
        await runLocked(service, self, original, [], keyTemplate, plan, checkKey, undefined, fire);
      },
    };
    Reflect.defineMetadata(WITH_LOCK_JOB, job, wrapper);
    descriptor.value = wrapper as unknown as T;

    injectLockService(target);
    const methods = (Reflect.getMetadata(WITH_LOCK_METHODS, target.constructor) as PropertyKey[] | undefined) ?? [];
    Reflect.defineMetadata(WITH_LOCK_METHODS, [...methods, propertyKey], target.constructor);
  };
}

/**
 * The outcome of a locked run: the method's result (or a skip); for an Observable result, how to
 * release, and how to run its subscription holding the lock (re-entrant, `current()`).
 */
type Outcome = { value: unknown; release?: (result: ReleaseFire) => Promise<void>; hold?: <T>(fn: () => T) => T };

async function runLocked(
  service: LockService,
  self: object,
  original: Method,
  args: unknown[],
  template: LockKeyTemplate | LockKeyTemplates,
  plan: WithLockPlan,
  checkKey: KeyCheck,
  signal?: AbortSignal,
  fireAt?: number,
): Promise<Outcome> {
  const key = template.render(args);
  const data = typeof plan.data === 'function' ? (plan.data as (...a: unknown[]) => unknown)(...args) : plan.data;
  // A call by the scheduler claims its fire, named by the schedule's time (a call by hand claims none).
  const fire = fireAt ?? plan.fires?.near(Date.now());
  let lock: Lock;
  try {
    lock = await service.acquire(key, { ...plan.acquire, data, signal, ...(fire !== undefined && { fireTime: fire }) });
  } catch (error) {
    // Too long whatever the values (where the boot check did not see the method): the app's error.
    if (error instanceof LockKeyError && error.problem === 'too-long') checkKey(service.options?.keyPrefix ?? '');
    if (plan.skip && error instanceof LockBusyError) {
      plan.skips.skipped(
        service.options.logger,
        typeof key === 'string' ? key : error.key,
        error.holder?.owner,
        fire === undefined ? undefined : skippedFire(fire, error),
      );
      return { value: undefined };
    }
    throw error;
  }
  const acquiredAt = monotonicNow();
  const holdMs = fire === undefined ? plan.holdAtLeastMs : plan.claimedHoldMs;
  let value: unknown;
  try {
    value = await internalsOf(service).runHolding(lock, () => original.apply(self, args));
  } catch (error) {
    await releaseAfterHold(service, lock, acquiredAt, holdMs, 'failed');
    throw error;
  }
  if (isObservable(value)) {
    return {
      value,
      release: (result) => releaseAfterHold(service, lock, acquiredAt, holdMs, result),
      hold: (fn) => internalsOf(service).runHolding(lock, fn),
    };
  }
  await releaseAfterHold(service, lock, acquiredAt, holdMs, 'done');
  return { value };
}

/** Why a scheduled fire was skipped: claimed by another instance, or the previous run still holds the job. */
function skippedFire(fire: number, error: LockBusyError): SkippedFire {
  const { fireClaimed, holder } = error;
  if (!fireClaimed) return { scheduledAt: new Date(fire), reason: 'previous-run', by: holder?.owner };
  const reason = fireClaimed.scheduledAt.getTime() > fire ? 'superseded' : 'ran-elsewhere';
  return { scheduledAt: new Date(fire), reason, by: fireClaimed.owner };
}

/**
 * Releases now, or — with `holdAtLeast` — once that much time has passed since acquisition. The
 * run's `result` goes with the release of a lock that claimed a scheduled fire.
 */
async function releaseAfterHold(service: LockService, lock: Lock, acquiredAt: number, holdMs: number, result: ReleaseFire): Promise<void> {
  const remaining = acquiredAt + holdMs - monotonicNow();
  const { releaseQuietly, endScope, endRun } = internalsOf(service);
  endRun(lock, result);
  if (remaining <= 0 || lock.isReentrant) return releaseQuietly(lock);
  // The method is done: work it left running must not join the lock re-entrantly meanwhile.
  endScope(lock);
  setTimeout(() => void releaseQuietly(lock), remaining).unref();
}

/** An Observable that acquires on subscription and releases when the method's Observable ends or is unsubscribed. */
function lockedObservable(run: (signal?: AbortSignal) => Promise<Outcome>): Observable<unknown> {
  return new Observable((subscriber) => {
    const cancel = new AbortController();
    let release: ((result?: ReleaseFire) => void) | undefined;
    let inner: { unsubscribe(): void } | undefined;
    run(cancel.signal).then(
      (outcome) => {
        const value = outcome.value;
        if (!isObservable(value)) {
          subscriber.next(value);
          subscriber.complete();
          return;
        }
        let released = false;
        release = (result: ReleaseFire = 'done') => {
          if (!released) void outcome.release?.(result);
          released = true;
        };
        if (subscriber.closed) return release();
        const subscribe = () =>
          value.subscribe({
            next: (v) => subscriber.next(v),
            error: (e) => {
              release?.('failed');
              subscriber.error(e);
            },
            complete: () => {
              release?.();
              subscriber.complete();
            },
          });
        inner = outcome.hold ? outcome.hold(subscribe) : subscribe();
      },
      (error) => subscriber.error(error),
    );
    return () => {
      cancel.abort();
      inner?.unsubscribe();
      release?.();
    };
  });
}

/** Whether a function is `async` (so it returns a Promise, whatever its declared type says). */
export function isAsync(fn: Method): boolean {
  return (fn as { [Symbol.toStringTag]?: string })[Symbol.toStringTag] === 'AsyncFunction';
}

/** A declared type's name for messages (`Number`, `Invoice`). */
function typeName(type: { readonly name: string }): string {
  return type.name || 'an anonymous class';
}

/** Whether a declared result type (`design:returntype`) is `Observable` or a subclass of it. */
export function isObservableType(type: unknown): boolean {
  return typeof type === 'function' && (type === Observable || type.prototype instanceof Observable);
}

import { isObservable, of, type Observable } from 'rxjs';
import { LockConfigurationError, LockValidationError } from '../errors/lock.errors';
import {
  WHEN_LEADER_NAME_INVALID,
  WHEN_LEADER_NOT_A_METHOD,
  WHEN_LEADER_OBSERVABLE_UNDECLARED,
  WHEN_LEADER_STATIC,
  WITH_LOCK_NO_INSTANCE,
} from '../errors/lock.messages';
import { internalsOf } from '../core/engine/lock.internals';
import { type LeadOptions, resolveLeadOptions } from '../core/leadership/lead-options';
import type { Leadership } from '../core/leadership/leadership';
import type { LockService } from '../lock.service';
import { MAX_DURATION_MS } from '../utils/duration';
import { copyMetadata } from './copy-metadata';
import { isAsync, isObservableType } from './with-lock.decorator';
import { injectLockService, lockServiceMissing, lockServiceOf, WHEN_LEADER_METHODS } from './lock-service.injection';

type Method = (this: object, ...args: unknown[]) => unknown;

/** Options of `@WhenLeader`: how the campaign for its name runs (shared with `lead()` of the same name). */
export type WhenLeaderOptions = Pick<LeadOptions, 'leaseDuration' | 'watchInterval' | 'data'>;

/** One `@WhenLeader` method of a class, as recorded in its metadata. */
export interface WhenLeaderMethod {
  readonly method: string;
  readonly name: string;
  readonly options: WhenLeaderOptions | undefined;
}

/**
 * A skipped call returns (or resolves to) `undefined`, and an Observable method's emits it: the
 * method's declared result must allow it (`Promise<T | undefined>`, `Observable<T | undefined>`).
 */
export type LeaderSkipSafe<T> = T extends (...args: never[]) => infer R
  ? undefined extends (R extends Observable<infer V> ? V : Awaited<R>)
    ? unknown
    : LeaderSkipUnsafe
  : unknown;

/** The compile error of a `@WhenLeader` method whose declared result cannot be `undefined`. */
export interface LeaderSkipUnsafe {
  /**
   * Declare the result as `Promise<T | undefined>` (or `T | undefined`, `Observable<T | undefined>`):
   * a follower's call returns `undefined` (an Observable emits it).
   */
  readonly '@WhenLeader: a follower returns undefined: declare Promise<T | undefined>': never;
}

/** The decorator `@WhenLeader` returns: the method's result must allow `undefined`. */
export type WhenLeaderDecorator = <T extends (...args: never[]) => unknown>(
  target: object,
  propertyKey: string | symbol,
  descriptor: TypedPropertyDescriptor<T> & LeaderSkipSafe<T>,
) => void;

/** The campaign each instance uses per leadership name, once it has one. */
const campaigns = new WeakMap<object, Map<string, Leadership>>();

/**
 * Runs the method only while this instance leads `name`; on the others (followers) a call returns
 * `undefined` (an `async` method resolves to it; a method declared `: Observable<T>` returns an
 * Observable that emits `undefined` and completes, as `@WithLock`'s `onBusy: 'skip'` does) without
 * running it and without any request: it
 * checks the local state of the campaign, whose lease counts on the local monotonic clock.
 *
 * An Observable method must declare its result (`: Observable<T | undefined>`, with `Observable`
 * imported as a value, not `import type`, and `emitDecoratorMetadata` on): the follower's result is
 * chosen from that declaration. On the leader, an Observable returned by a method whose declared
 * result could not be read (inferred, a type alias, `import type`) throws a `LockValidationError`.
 *
 * The campaign for each name starts at application bootstrap and ends at shutdown (releasing the
 * leadership, so another instance takes over within one watch interval). It is the one
 * `LockService.lead(name)` returns, shared by every method with the same name. Inside the method,
 * `LockService.current(name)` returns the leader's lock (its fencing token orders the terms).
 * Works on `@Cron`/`@Interval` jobs in either decorator order.
 *
 * @example
 * ```ts
 * @Cron(CronExpression.EVERY_MINUTE)
 * @WhenLeader('scheduler')
 * async sendReminders(): Promise<void> { ... }
 * ```
 * @throws LockValidationError at class definition for an empty or invalid name or bad options.
 */
export function WhenLeader(name: string, options?: WhenLeaderOptions): WhenLeaderDecorator {
  return <T extends (...args: never[]) => unknown>(
    target: object,
    propertyKey: string | symbol,
    descriptor: TypedPropertyDescriptor<T>,
  ): void => {
    const className = typeof target === 'function' ? target.name : target.constructor.name;
    const where = `${className}.${String(propertyKey)}`;
    if (typeof target === 'function') throw new LockValidationError(WHEN_LEADER_STATIC(where));
    if (typeof descriptor.value !== 'function') throw new LockValidationError(WHEN_LEADER_NOT_A_METHOD(where));
    try {
      // The module's lease is known at boot, where `lead()` checks the rest.
      resolveLeadOptions(name, options, { leaseMs: MAX_DURATION_MS, keyPrefix: '' });
    } catch (error) {
      if (error instanceof LockValidationError) throw new LockValidationError(WHEN_LEADER_NAME_INVALID(where, error.message));
      throw error;
    }
    const original = descriptor.value as unknown as Method;
    const returnType: unknown = Reflect.getMetadata('design:returntype', target, propertyKey);
    const observableDeclared = isObservableType(returnType);
    // As `@WithLock`'s skip does: a declared Observable emits `undefined` and completes.
    const skipped = observableDeclared
      ? () => of(undefined)
      : isAsync(original) || returnType === Promise
        ? () => Promise.resolve(undefined)
        : () => undefined;

    const wrapper = {
      [propertyKey as string](this: object, ...args: unknown[]): unknown {
        if (this === undefined || this === null) throw new LockConfigurationError(WITH_LOCK_NO_INSTANCE(where));
        const service = lockServiceOf(this);
        if (!service) throw lockServiceMissing(this.constructor);
        const lock = leadershipOf(this, service, name, options)?.lock;
        if (!lock) return skipped();
        const result = internalsOf(service).runHolding(lock, () => original.apply(this, args));
        // A follower's call would have returned undefined: said on the leader, as @WithLock says it.
        if (!observableDeclared && isObservable(result)) throw new LockValidationError(WHEN_LEADER_OBSERVABLE_UNDECLARED(where));
        return result;
      },
    }[propertyKey as string];
    Object.defineProperty(wrapper, 'length', { value: original.length });
    copyMetadata(original, wrapper);
    descriptor.value = wrapper as unknown as T;

    injectLockService(target);
    const methods = (Reflect.getMetadata(WHEN_LEADER_METHODS, target.constructor) as WhenLeaderMethod[] | undefined) ?? [];
    const method: WhenLeaderMethod = { method: String(propertyKey), name, options };
    Reflect.defineMetadata(WHEN_LEADER_METHODS, [...methods, method], target.constructor);
  };
}

/**
 * The campaign an instance uses for `name`: started at bootstrap by the explorer, or here on the
 * first call of an instance Nest created later (transient, request-scoped). `undefined` once the
 * lock service is shut down: a late call is skipped quietly.
 */
export function leadershipOf(instance: object, service: LockService, name: string, options?: WhenLeaderOptions): Leadership | undefined {
  let byName = campaigns.get(instance);
  if (!byName) campaigns.set(instance, (byName = new Map<string, Leadership>()));
  const known = byName.get(name);
  if (known) return known;
  let leadership: Leadership;
  try {
    leadership = service.lead(name, options);
  } catch (error) {
    if (error instanceof LockConfigurationError) return undefined;
    throw error;
  }
  byName.set(name, leadership);
  return leadership;
}

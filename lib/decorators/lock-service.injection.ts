import { Inject, Optional } from '@nestjs/common';
import { LockConfigurationError } from '../errors/lock.errors';
import { LOCK_SERVICE_MISSING, WHEN_LEADER_SERVICE_MISSING } from '../errors/lock.messages';
import { LockService } from '../lock.service';

/** Property under which Nest injects the `LockService` into classes that use `@WithLock` or `@WhenLeader`. */
export const LOCK_SERVICE_PROPERTY = Symbol('nestjs-dynamo-lock:lock-service');

/** Class metadata: the names (strings or symbols) of the methods decorated with `@WithLock`. */
export const WITH_LOCK_METHODS = 'nestjs-dynamo-lock:with-lock-methods';

/** Method metadata: the {@link KeyCheck} of a method decorated with `@WithLock`. */
export const WITH_LOCK_KEY = 'nestjs-dynamo-lock:with-lock-key';

/** Checks a `@WithLock` key template against the module's `keyPrefix` (LockConfigurationError when its keys cannot fit). */
export type KeyCheck = (keyPrefix: string) => void;

/** Class metadata: the methods decorated with `@WhenLeader` and their leaderships. */
export const WHEN_LEADER_METHODS = 'nestjs-dynamo-lock:when-leader-methods';

type Method = (this: object, ...args: unknown[]) => unknown;

/** The `LockService` Nest injected into an instance of a decorated class, if any. */
export function lockServiceOf(instance: object): LockService | undefined {
  return (instance as Record<symbol, LockService | undefined>)[LOCK_SERVICE_PROPERTY];
}

/**
 * The error of an instance of a decorated class that has no `LockService`, naming the class and
 * its first decorated method (and the decorator).
 */
export function lockServiceMissing(ctor: object & { name: string }, fallbackName = ''): LockConfigurationError {
  const locked = Reflect.getMetadata(WITH_LOCK_METHODS, ctor) as PropertyKey[] | undefined;
  const led = Reflect.getMetadata(WHEN_LEADER_METHODS, ctor) as { method: string }[] | undefined;
  const className = ctor.name || fallbackName;
  if (locked?.length || !led?.length)
    return new LockConfigurationError(LOCK_SERVICE_MISSING(className, locked?.length ? String(locked[0]) : undefined));
  return new LockConfigurationError(WHEN_LEADER_SERVICE_MISSING(className, led[0].method));
}

/** Adds an optional property injection of `LockService` to the class, once, and its boot check. */
export function injectLockService(prototype: object): void {
  const ctor = prototype.constructor;
  if (Reflect.getOwnMetadata(LOCK_SERVICE_PROPERTY, ctor)) return;
  Reflect.defineMetadata(LOCK_SERVICE_PROPERTY, true, ctor);
  Inject(LockService)(prototype, LOCK_SERVICE_PROPERTY);
  Optional()(prototype, LOCK_SERVICE_PROPERTY);
  checkAtBoot(prototype);
}

/**
 * Fails the boot, naming the class, when Nest created it without a `LockService`: also in an app
 * that imports no `DynamoLockModule` at all (whose own check then never runs). Nest calls
 * `onModuleInit` of every provider and controller it creates at boot; the class's own hook (or
 * its parent's) runs right after the check.
 */
function checkAtBoot(prototype: object): void {
  const own = Object.getOwnPropertyDescriptor(prototype, 'onModuleInit')?.value as Method | undefined;
  const name = prototype.constructor.name;
  Object.defineProperty(prototype, 'onModuleInit', {
    configurable: true,
    writable: true,
    value: function onModuleInit(this: object, ...args: unknown[]): unknown {
      const service = lockServiceOf(this);
      if (!service) throw lockServiceMissing(this.constructor, name);
      // A stand-in LockService of a test may have no options.
      const keyPrefix: unknown = (service as Partial<LockService>).options?.keyPrefix;
      if (typeof keyPrefix === 'string') checkKeyPrefix(this, keyPrefix);
      const next = own ?? (Reflect.get(Object.getPrototypeOf(prototype) as object, 'onModuleInit') as Method | undefined);
      return next?.apply(this, args);
    },
  });
}

/**
 * Fails the boot, naming the method, when a `@WithLock` template makes keys too long with the
 * module's `keyPrefix`, whatever the values. Instances Nest creates per request, and overrides
 * this check does not see, fail at their first call instead.
 */
function checkKeyPrefix(instance: object, keyPrefix: string): void {
  const methods = Reflect.getMetadata(WITH_LOCK_METHODS, instance.constructor) as PropertyKey[] | undefined;
  for (const name of methods ?? []) {
    const method: unknown = Reflect.get(instance, name);
    if (typeof method !== 'function') continue;
    (Reflect.getMetadata(WITH_LOCK_KEY, method) as KeyCheck | undefined)?.(keyPrefix);
  }
}

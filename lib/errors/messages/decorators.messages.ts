/** Messages for @WithLock, @WhenLeader and LockInterceptor wiring, scheduling and HTTP answers. */

import type { LockKeyProblem } from '../lock.errors';
import { describe } from './message.format';

/** The message of a 503 answer: names the resource, not the DynamoDB error (no table names leave the app). */
export const LOCK_UNAVAILABLE_HTTP = (key: string) =>
  `Lock "${key}" could not be acquired because the lock store is unavailable; retry later.`;

/** The 409 answer's message: no holder details unless the interceptor exposes them. */
export const LOCK_BUSY_HTTP = (key: string) => `Resource "${key}" is locked by another operation; try again later.`;

const LOCK_KEY_PROBLEMS: Record<LockKeyProblem, string> = {
  missing: 'a value it is built from is missing',
  empty: 'a value it is built from is empty',
  blank: 'a value it is built from is only whitespace',
  object: 'a value it is built from is an object, not a text or a number',
  'invalid-date': 'a date it is built from is not a valid date',
  'not-well-formed': 'a value it is built from is not well-formed text',
  'too-long': 'it would be too long',
};

/** The message of a 400 answer for a request whose values make no valid lock key (no class, method or template named). */
export const LOCK_KEY_INVALID_HTTP = (problem: LockKeyProblem) =>
  `This request does not make a valid lock key: ${LOCK_KEY_PROBLEMS[problem]}. Check the request's values.`;

export const WITH_LOCK_OPTION_INVALID = (where: string, name: string, expected: string, value: unknown) =>
  `@WithLock on ${where}: option "${name}" must be ${expected}; got ${describe(value)}.`;

export const WITH_LOCK_NOT_A_METHOD = (where: string) =>
  `@WithLock on ${where}: only methods can be decorated, not getters, setters or properties.`;

export const WITH_LOCK_NO_INSTANCE = (where: string) =>
  `${where} was called without its instance (\`this\` is ${'undefined'}): call it on the object, or bind it (\`this.method.bind(this)\`) before passing it around.`;

export const STATIC_METHOD = (where: string) =>
  `@WithLock on ${where}: static methods are not supported; decorate an instance method of a provider or controller.`;

export const WITH_LOCK_RETURN_TYPE = (where: string, declared: string) =>
  `@WithLock on ${where}: the method must return a Promise or an Observable, but is declared to return ${declared}. Make it async (it then returns Promise<T>), or declare \`: Observable<T>\` with Observable imported as a value (\`import { Observable } from 'rxjs'\`, not \`import type\`).`;

export const WITH_LOCK_OBSERVABLE_UNDECLARED = (where: string) =>
  `@WithLock on ${where}: the method returned an Observable, but its declared result could not be read before the call (no decorator metadata, or a type alias, \`import type\` or union in the declaration), so @WithLock returned a Promise. Declare \`: Observable<T>\` with Observable imported as a value (and emitDecoratorMetadata on), or return a Promise (e.g. lastValueFrom(...)).`;

export const LOCK_SERVICE_MISSING = (className: string, method?: string) =>
  `${className}${method ? `.${method}` : ''} uses @WithLock, but no LockService is available to it. Import DynamoLockModule.forRoot() (or forRootAsync()) in your root module (it is global unless isGlobal: false; then import it in ${className}'s module), and let Nest create ${className} (do not construct it with new).`;

export const SKIPPED_BUSY = (where: string, key: string, holder: string | undefined) =>
  `Skipped ${where}: lock "${key}" is held by ${holder ? `"${holder}"` : 'another owner'} (further skips are counted, one line a minute).`;

export const SKIPPED_BUSY_AGAIN = (where: string, key: string, count: number, seconds: number, holder: string | undefined) =>
  `Skipped ${where} ${count} more time${count === 1 ? '' : 's'} in ${seconds} s: lock "${key}" was held by ${holder ? `"${holder}"` : 'another owner'} last.`;

export const HOLD_AT_LEAST_REACHES_PERIOD = (where: string, holdMs: number, periodMs: number) =>
  `@WithLock on ${where}: holdAtLeast (${holdMs} ms) reaches the period of its schedule (${periodMs} ms), so the next tick would find the lock still held and be skipped on every instance. Use at most half the period (${Math.floor(periodMs / 2)} ms), or leave holdAtLeast out: it is then derived from the schedule.`;

export const WHEN_LEADER_NAME_INVALID = (where: string, reason: string) => `@WhenLeader on ${where}: ${reason}`;

export const WHEN_LEADER_NOT_A_METHOD = (where: string) =>
  `@WhenLeader on ${where}: only methods can be decorated, not getters, setters or properties.`;

export const WHEN_LEADER_STATIC = (where: string) =>
  `@WhenLeader on ${where}: static methods are not supported; decorate an instance method of a provider or controller.`;

export const WHEN_LEADER_OBSERVABLE_UNDECLARED = (where: string) =>
  `@WhenLeader on ${where}: the method returned an Observable, but its declared result could not be read (no decorator metadata, an inferred result, or a type alias, \`import type\` or union in the declaration), so a follower's call would return undefined, not an Observable. Declare \`: Observable<T | undefined>\` with Observable imported as a value (and emitDecoratorMetadata on), or return a Promise (e.g. lastValueFrom(...)).`;

export const WHEN_LEADER_SERVICE_MISSING = (className: string, method?: string) =>
  `${className}${method ? `.${method}` : ''} uses @WhenLeader, but no LockService is available to it. Import DynamoLockModule.forRoot() (or forRootAsync(), or forTesting() in tests) in your root module (it is global unless isGlobal: false; then import it in ${className}'s module), and let Nest create ${className} (do not construct it with new).`;

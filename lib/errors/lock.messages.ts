/**
 * Every message a user of the library can see, in one place.
 * Errors and log lines call these functions; nothing else builds user-facing text.
 */

import type { EndpointInfo, EndpointSource } from '../store/dynamo-endpoint';
import { isBrokenConnection, type LockKeyProblem } from './lock.errors';

const DURATION_FORMS = `milliseconds as a number (30000) or a string such as '500ms', '30s', '15 minutes', '1m30s', '1h30m', '2 hours', '1d'`;

export const INVALID_DURATION = (name: string, value: unknown, reason?: string) =>
  `${name} must be a positive duration; got ${describe(value)}${reason ? ` (${reason})` : ''}. Accepted forms: ${DURATION_FORMS}.`;

export const EMPTY_KEY = () => `Lock key must be a non-empty string.`;

export const KEY_BLANK = (key: string) =>
  `Lock key must contain more than whitespace; got ${visible(key)}. A blank key usually means an unset field (a form input, an environment variable): check the value the key is built from.`;

export const KEY_NOT_STRING = (value: unknown) => `Lock key must be a string; got ${describe(value)}.`;

export const KEY_NOT_WELL_FORMED = (key: string) =>
  `Lock key "${truncate(key.toWellFormed())}" contains a lone UTF-16 surrogate; it would be stored as U+FFFD and collide with other keys. Build keys from well-formed text.`;

export const TEMPLATE_NOT_WELL_FORMED = (where: string, template: string) =>
  `@WithLock on ${where}: the key template "${template.toWellFormed()}" contains a lone UTF-16 surrogate. Use well-formed text.`;

export const TEMPLATE_VALUE_INVALID_DATE = (where: string, template: string, placeholder: string) =>
  `@WithLock('${template}') on ${where}: ${placeholder} is an invalid Date in this call, so no lock key can be built.`;

export const KEY_TOO_LONG = (key: string, bytes: number, max: number) =>
  `Lock key "${truncate(key)}" is ${bytes} bytes in UTF-8 (key prefix included); DynamoDB allows at most ${max} bytes in a partition key. Use a shorter key, for example a hash of the long value.`;

export const DATA_NOT_SERIALIZABLE = (key: string, reason: string) =>
  `Lock data for "${truncate(key)}" must be JSON-serialisable: ${reason}.`;

export const DATA_TOO_LARGE = (key: string, bytes: number, max: number) =>
  `Lock data for "${truncate(key)}" is ${bytes} bytes as JSON; at most ${max} bytes are allowed, so that every lock write stays within one or two DynamoDB write units. Store a reference (an id or URL) instead of the payload.`;

export const HEARTBEAT_NOT_BELOW_LEASE = (heartbeatMs: number, leaseMs: number) =>
  `heartbeatInterval (${heartbeatMs} ms) must be shorter than leaseDuration (${leaseMs} ms); a third of the lease is a good choice and is the default.`;

export const UNKNOWN_OPTION = (scope: string, name: string, suggestion: string | undefined, known: readonly string[]) =>
  `${scope} has no option "${name}"${suggestion ? `; did you mean "${suggestion}"?` : '.'} Its options: ${known.join(', ')}.`;

export const OPTIONS_NOT_OBJECT = (value: unknown) =>
  `DynamoLockModule options must be an object; got ${describe(value)}. With forRootAsync(), make useFactory return the options object (a missing return gives undefined).`;

export const KEY_PREFIX_INVALID = (prefix: string, reason: string) =>
  `DynamoLockModule option "keyPrefix" ${reason}; got ${describe(prefix)}. Use a short prefix such as 'billing:'.`;

export const LEASE_TOO_SHORT = (name: string, ms: number, minMs: number) =>
  `${name} must be at least ${minMs} ms; got ${ms} ms. A lease shorter than a few DynamoDB round trips is lost before it can be used; leases of seconds are typical.`;

export const LEASE_ID_INVALID = (value: unknown) =>
  `leaseId must be the non-empty lease id that acquire printed or Lock.leaseId gave; got ${describe(value)}.`;

export const INVALID_OPTION = (name: string, expected: string, value: unknown) =>
  `DynamoLockModule option "${name}" must be ${expected}; got ${describe(value)}.`;

export const CALL_OPTION_INVALID = (scope: string, name: string, expected: string, value: unknown) =>
  `${scope} option "${name}" must be ${expected}; got ${describe(value)}.`;

export const INVALID_WAIT = (value: unknown) =>
  `wait must be a duration, true (wait without limit) or false (a single attempt); got ${describe(value)}. Accepted durations: ${DURATION_FORMS}.`;

export const TABLE_MISSING = (tableName: string) =>
  `DynamoDB table "${tableName}" for locks does not exist. Create it with \`createTable: true\` in DynamoLockModule.forRoot(), with \`npx dynamo-lock table-create --table ${tableName}\`, or with: aws dynamodb create-table --table-name ${tableName} --attribute-definitions AttributeName=key,AttributeType=S --key-schema AttributeName=key,KeyType=HASH --billing-mode PAY_PER_REQUEST`;

/** `createTable` is whether the option is on already: it creates missing tables only, and cannot fix this one. */
export const TABLE_WRONG_SCHEMA = (tableName: string, actual: string, createTable: boolean) =>
  `DynamoDB table "${tableName}" has the wrong key schema for locks: ${actual}. Expected exactly one partition key named "key" of type String (S) and no sort key. ${
    createTable
      ? 'createTable only creates a missing table and never changes an existing one: point tableName at a name no table uses (it is then created), or at a table with that schema.'
      : 'Point tableName at another table, or at a name no table uses and set `createTable: true` to have it created.'
  }`;

export const TABLE_NOT_ACTIVE = (tableName: string, status: string, waitedMs: number) =>
  `DynamoDB table "${tableName}" is still ${status} after ${waitedMs} ms.`;

/** Where a DynamoDB endpoint was set, as a phrase: "set by ...". */
const ENDPOINT_SETTING: Record<EndpointSource, string> = {
  option: 'the clientConfig.endpoint option',
  DYNAMODB_ENDPOINT: 'the DYNAMODB_ENDPOINT environment variable',
  client: 'the DynamoDB client passed as the client option',
  AWS_ENDPOINT_URL_DYNAMODB: 'the AWS_ENDPOINT_URL_DYNAMODB environment variable',
  AWS_ENDPOINT_URL: 'the AWS_ENDPOINT_URL environment variable',
  'aws-config': 'endpoint_url in the AWS config file',
  default: 'AWS_REGION or clientConfig.region',
};

/** The endpoint and where it came from, e.g. `http://localhost:8000 (from the DYNAMODB_ENDPOINT environment variable)`. */
export const ENDPOINT_DESCRIPTION = (endpoint: EndpointInfo) =>
  endpoint.source === 'default'
    ? endpoint.region
      ? `"${endpoint.url}" (AWS's endpoint for region ${endpoint.region}; no endpoint option or variable is set)`
      : `AWS's endpoint for the region (no region is set, and no endpoint option or variable)`
    : `${endpoint.url === undefined ? 'the endpoint' : `"${endpoint.url}"`} (from ${ENDPOINT_SETTING[endpoint.source]})`;

const TABLE_CHECK = (tableName: string, endpoint: EndpointInfo) =>
  `Cannot check DynamoDB lock table "${tableName}" at ${ENDPOINT_DESCRIPTION(endpoint)}`;

export const TABLE_CHECK_UNREACHABLE = (tableName: string, endpoint: EndpointInfo, error: unknown) =>
  `${TABLE_CHECK(tableName, endpoint)}: DynamoDB cannot be reached (${errorText(error)}). ${
    endpoint.source === 'default'
      ? 'Check the network and the region; for DynamoDB Local, set AWS_ENDPOINT_URL_DYNAMODB (or DYNAMODB_ENDPOINT, or clientConfig.endpoint), e.g. http://localhost:8000.'
      : `Start DynamoDB there, or fix ${ENDPOINT_SETTING[endpoint.source]} (e.g. http://localhost:8000).`
  }`;

export const TABLE_CHECK_BAD_ENDPOINT = (tableName: string, endpoint: EndpointInfo) =>
  `${TABLE_CHECK(tableName, endpoint)}: the endpoint is not an http:// or https:// URL. Write it with its scheme, e.g. http://localhost:8000, in ${ENDPOINT_SETTING[endpoint.source]}.`;

export const TABLE_CHECK_NO_REGION = (tableName: string, endpoint: EndpointInfo) =>
  `${TABLE_CHECK(tableName, endpoint)}: no AWS region is set. Set AWS_REGION or clientConfig.region (DynamoDB Local accepts any region, e.g. us-east-1).`;

export const TABLE_CHECK_NO_CREDENTIALS = (tableName: string, endpoint: EndpointInfo, error: unknown) =>
  `${TABLE_CHECK(tableName, endpoint)}: no AWS credentials (${errorText(error)}). Set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or clientConfig.credentials (DynamoDB Local accepts any values).`;

export const TABLE_CHECK_FAILED = (tableName: string, endpoint: EndpointInfo, error: unknown) =>
  `${TABLE_CHECK(tableName, endpoint)}: ${errorText(error)}. Check the credentials and that they allow dynamodb:DescribeTable on the table.`;

/** `waitedMs` is `undefined` for a single attempt (`wait: false`). */
export const LOCK_BUSY = (key: string, holder: string | undefined, fencingToken: number | undefined, waitedMs: number | undefined) =>
  `Lock "${key}" is held by ${holder ? `"${holder}"` : 'another owner'}${fencingToken !== undefined ? ` (fencing token ${fencingToken})` : ''}; gave up after ${waitedMs === undefined ? 'one attempt (wait: false)' : `waiting ${waitedMs} ms`}.`;

/** `waitedMs` is `undefined` for a single attempt (`wait: false`). */
export const LOCK_UNAVAILABLE = (key: string, waitedMs: number | undefined, cause: unknown) =>
  `Lock "${key}" could not be acquired: DynamoDB ${cause === undefined ? 'did not answer in time' : `failed (${errorText(cause)})`} and no answer showed another holder, so this is an outage or a slow DynamoDB, not a busy lock; gave up after ${waitedMs === undefined ? 'one attempt (wait: false)' : `trying for ${waitedMs} ms`}.`;

/** The message of a 503 answer: names the resource, not the DynamoDB error (no table names leave the app). */
export const LOCK_UNAVAILABLE_HTTP = (key: string) =>
  `Lock "${key}" could not be acquired because the lock store is unavailable; retry later.`;

/** `lastAttempt`: the error of the SDK's last failed attempt, when it was retrying. */
export const REQUEST_TIMED_OUT = (operation: string, tableName: string, ms: number, lastAttempt?: unknown) =>
  lastAttempt === undefined
    ? `DynamoDB ${operation} on table "${tableName}" got no answer within ${ms} ms (option requestTimeout); the request was aborted.`
    : `DynamoDB ${operation} on table "${tableName}" did not succeed within ${ms} ms (option requestTimeout): the SDK was still retrying after ${errorText(lastAttempt)}; the request was aborted.`;

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

export const SEMAPHORE_LIMIT_INVALID = (scope: string, value: unknown, max: number) =>
  `${scope} option "limit" must be a whole number from 1 to ${max} (the most holders of the key at once); got ${describe(value)}. Leave it out for a mutex (one holder).`;

export const SEMAPHORE_LIMIT_MISMATCH = (key: string, stored: number, asked: number) =>
  `Semaphore "${truncate(key)}" has limit ${stored} in the table, but this call asked for limit ${asked}. Every instance must use the same limit for a key: change the call, or use another key for the new limit.`;

export const SEMAPHORE_DATA_UNSUPPORTED = (scope: string) =>
  `${scope}: "data" cannot be stored with a semaphore slot ("limit" set): the semaphore item keeps every holder, so it holds no payloads to stay small. Keep the payload elsewhere, keyed by the lock's fencing token.`;

export const SEMAPHORE_STORE_UNSUPPORTED = () =>
  `The configured lock store keeps no semaphores ("limit" needs a store with a "semaphores" member, as the DynamoDB store and MemoryLockStore have).`;

export const KEY_IS_SEMAPHORE = (key: string) =>
  `Lock key "${truncate(key)}" is in use here as a semaphore ("limit" set); it cannot be a mutex at the same time. Use the same "limit" for every call on this key, or another key for the mutex.`;

export const KEY_IS_MUTEX = (key: string) =>
  `Lock key "${truncate(key)}" is in use here as a mutex (no "limit"); it cannot be a semaphore at the same time. Use another key for the semaphore, or the same options for every call on this key.`;

export const SEMAPHORE_BUSY = (key: string, limit: number, holders: number, waitedMs: number | undefined) =>
  `Semaphore "${key}" has all ${limit} slot${limit === 1 ? '' : 's'} taken (${holders} holder${holders === 1 ? '' : 's'} seen) or callers waiting ahead; gave up after ${waitedMs === undefined ? 'one attempt (wait: false)' : `waiting ${waitedMs} ms`}.`;

export const LOCK_TAKEN = (key: string, holder: string | undefined) =>
  `Lock "${key}" was lost: it is now held by ${holder ? `"${holder}"` : 'another owner'}, who took it over after this holder's lease ran out without a heartbeat.`;

export const LOCK_GONE = (key: string) => `Lock "${key}" was lost: its record was released or deleted by someone else.`;

/** What made a lease run out, as {@link LOCK_EXPIRED} tells it. */
export type ExpiryCause =
  /** Acquired with `heartbeat: false` and not renewed in time. */
  | { kind: 'no-heartbeat' }
  /** Heartbeats were throttled by DynamoDB. */
  | { kind: 'throttled'; error: unknown }
  /** Heartbeats got no answer within the request limit. */
  | { kind: 'timed-out'; error: unknown }
  /** Heartbeats failed with another error. */
  | { kind: 'failed'; error: unknown }
  /** A heartbeat was answered, but later than the lease it renewed. */
  | { kind: 'late-answer'; answeredAfterMs: number }
  /** A heartbeat was still waiting for its answer. */
  | { kind: 'unanswered' }
  /** No heartbeat was due or failing: the process did not run. */
  | { kind: 'paused' };

const EXPIRY_TEXT: { [K in ExpiryCause['kind']]: (cause: Extract<ExpiryCause, { kind: K }>) => string } = {
  'no-heartbeat': () =>
    'it was acquired with heartbeat: false and not renewed in time: call lock.extend() (or renewLease()) more often than the lease, or let heartbeats renew it',
  throttled: (c) =>
    `heartbeats were throttled by DynamoDB (${errorText(c.error)}): give the table more capacity (or on-demand mode), or hold fewer locks at once`,
  'timed-out': (c) =>
    `heartbeats got no answer from DynamoDB in time (${errorText(c.error)}): DynamoDB or the network is slow or unreachable`,
  failed: (c) => `heartbeats failed (${errorText(c.error)}): DynamoDB may be unreachable`,
  'late-answer': (c) =>
    `a heartbeat was answered ${c.answeredAfterMs} ms after it was sent, too late to renew the lease: DynamoDB or the network is slow`,
  unanswered: () => 'a heartbeat was still waiting for an answer from DynamoDB: DynamoDB or the network is slow or unreachable',
  paused: () => 'no heartbeat ran: the process was paused or its event loop blocked for longer than the lease',
};

export const LOCK_EXPIRED = (key: string, overdueMs: number, cause: ExpiryCause) =>
  `Lock "${key}" was lost: its lease ran out ${overdueMs} ms ago on the local clock; ${(EXPIRY_TEXT[cause.kind] as (c: ExpiryCause) => string)(cause)}. Another owner may hold it now; stop work protected by it.`;

export const LOCK_RELEASED = (key: string) =>
  `Lock "${key}" was released by its holder; work started under it must not go on (another owner may hold it now).`;

export const RELEASED_AT_SHUTDOWN = (key: string) =>
  `Lock "${key}" was released because the lock service is shutting down; stop work protected by it.`;

export const NOT_HELD_FOR_EXTEND = (key: string) => `Cannot extend lock "${key}": this handle no longer holds it.`;

export const RELEASE_NOT_HELD = (key: string) =>
  `Release of lock "${key}" did nothing: this handle no longer held it (it expired or was taken over).`;

export const RELEASE_FAILED = (key: string, error: unknown) =>
  `Release of lock "${key}" failed (${errorText(error)}); it will expire after its lease.`;

export const HEARTBEAT_FAILED = (key: string, error: unknown, remainingMs: number) =>
  `Heartbeat for lock "${key}" failed (${errorText(error)}); retrying, ${remainingMs} ms of lease left.`;

export const TRANSIENT_RETRY = (operation: string, key: string, error: unknown, delayMs: number) =>
  `${operation} of lock "${key}" hit a transient DynamoDB error (${errorText(error)}); retrying in ${Math.round(delayMs)} ms.`;

export const TABLE_CREATED = (tableName: string) => `Created DynamoDB lock table "${tableName}" (on-demand, TTL on attribute "ttl").`;

export const TABLE_CREATED_WITHOUT_TTL = (tableName: string, error: unknown) =>
  `Created DynamoDB lock table "${tableName}" (on-demand), but TTL could not be enabled on it (${errorText(error)}): released lock items will not be cleaned up automatically on this server (dynalite has no TTL; DynamoDB and DynamoDB Local do).`;

export const EVENT_LISTENER_FAILED = (type: string, error: unknown) =>
  `Lock event listener threw on "${type}" (ignored): ${errorText(error)}`;

export const TELEMETRY_UNAVAILABLE = (error: unknown) =>
  `@opentelemetry/api is installed but could not be loaded (${errorText(error)}); lock spans and metrics are off. Reinstall it, or set the option telemetry: false.`;

export const EVENT_EMITTER_UNAVAILABLE = (error: unknown) =>
  `@nestjs/event-emitter is installed but could not be loaded (${errorText(error)}); lock events are not emitted on it. Reinstall it, or set the option eventEmitter: false.`;

export const EVENT_EMITTER_MISSING = () =>
  `DynamoLockModule option "eventEmitter" is true, but the app has no EventEmitter2: install @nestjs/event-emitter and import EventEmitterModule.forRoot() in the app module, or set eventEmitter to 'auto' (use it when present) or false.`;

export const MANAGER_CLOSED = () => `The lock service has been shut down; no new locks can be acquired.`;

// ---- health indicator ----

export const HEALTH_NOT_ACTIVE = (table: string, status: string) =>
  `DynamoDB lock table "${table}" is ${status}, not ACTIVE: locks cannot be taken until it is ACTIVE again.`;
export const HEALTH_TABLE_MISSING = (table: string) =>
  `DynamoDB lock table "${table}" does not exist: create it (DynamoLockModule option \`createTable: true\`, or \`dynamo-lock table-create\`) or fix tableName.`;
export const HEALTH_TIMEOUT = (table: string, ms: number) =>
  `DynamoDB did not answer DescribeTable for lock table "${table}" within ${ms} ms: the endpoint is unreachable or too slow.`;
export const HEALTH_UNREACHABLE = (table: string, error: unknown) =>
  `DynamoDB lock table "${table}" could not be checked: ${errorText(error)}.`;

/** Raised when the timeout of a check runs out; the request is aborted. */

/** Renders a value for an error message without risking a throw. */
export function describe(value: unknown): string {
  if (typeof value === 'string') return `"${truncate(value)}"`;
  if (typeof value === 'bigint') return `${value}n`;
  if (value === null || value === undefined || typeof value !== 'object') return String(value);
  try {
    return truncate(JSON.stringify(value));
  } catch {
    return Object.prototype.toString.call(value);
  }
}

/** A string with its invisible characters escaped (`"\t"`, `"\u00a0"`), for whitespace-only values. */
function visible(text: string): string {
  return JSON.stringify(truncate(text)).replace(/[^\x20-\x7e]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function truncate(text: string, max = 120): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

function errorText(error: unknown): string {
  if (!(error instanceof Error)) return describe(error);
  const code = (error as { code?: unknown }).code;
  const name = shownErrorName(error);
  const text = error.message ? (name ? `${name}: ${error.message}` : error.message) : error.name;
  return typeof code === 'string' && !text.includes(code) ? `${text} (${code})` : text;
}

/** The name an error is shown with: none for a broken connection the SDK names `TimeoutError` (its code tells what it is). */
export function shownErrorName(error: Error): string {
  return isBrokenConnection(error) ? '' : error.name;
}

// ---- @WithLock templates and wiring ----

const TEMPLATE_HELP = `Placeholders are <N> for the N-th argument (from 0) or <N.property.path>, e.g. 'invoice-<0>' or 'order-<1.customer.id>'.`;

export const TEMPLATE_EMPTY = (where: string) => `@WithLock on ${where}: the key template must be a non-empty string. ${TEMPLATE_HELP}`;

export const TEMPLATE_MALFORMED = (where: string, template: string, reason: string) =>
  `@WithLock('${template}') on ${where}: malformed template: ${reason}. ${TEMPLATE_HELP}`;

export const TEMPLATE_ARGUMENT_MISSING = (where: string, template: string, placeholder: string, count: number) =>
  `@WithLock('${template}') on ${where}: ${placeholder} names an argument the method does not have (it declares ${count} parameter${count === 1 ? '' : 's'}, so ${availablePlaceholders(count)}).`;

function availablePlaceholders(count: number): string {
  if (count === 0) return 'no <N> can be used';
  if (count === 1) return 'only <0> is available';
  return `<0> to <${count - 1}> are available`;
}

export const TEMPLATE_ADJACENT_PLACEHOLDERS = (where: string, template: string) =>
  `@WithLock('${template}') on ${where}: placeholders must be separated by fixed text (for example '<0>:<1>'), or keys of different arguments could collide.`;

export const TEMPLATE_PERCENT_SEPARATOR = (where: string, template: string) =>
  `@WithLock('${template}') on ${where}: '%' cannot be used between placeholders; it marks escaped characters in keys. Use another separator such as ':' or '/'.`;

export const TEMPLATE_VALUE_MISSING = (where: string, template: string, placeholder: string, value: unknown) =>
  `@WithLock('${template}') on ${where}: ${placeholder} is ${value === null ? 'null' : 'undefined'} in this call, so no lock key can be built. Pass a value, or point the placeholder at a property that is always set.`;

export const TEMPLATE_VALUE_OBJECT = (where: string, template: string, placeholder: string) =>
  `@WithLock('${template}') on ${where}: ${placeholder} is an object; name one of its properties, e.g. ${placeholder.replace('>', '.id>')}.`;

/** `keyPrefix`: the module's; `suffixBytes`: a semaphore's stored-key suffix (`limit` set), else 0. */
export const TEMPLATE_TOO_LONG = (where: string, template: string, keyPrefix: string, suffixBytes: number, bytes: number, max: number) =>
  `@WithLock('${truncate(template)}') on ${where}: every key it makes is at least ${bytes} bytes in UTF-8${keyPrefix ? ` with keyPrefix ${describe(keyPrefix)}` : ''}${suffixBytes ? `${keyPrefix ? ' and' : ' with'} the ${suffixBytes}-byte suffix of a semaphore's key (limit set)` : ''}; DynamoDB allows at most ${max} bytes in a partition key. Use shorter fixed text${keyPrefix ? ' or a shorter keyPrefix' : ''}.`;

export const TEMPLATE_VALUE_EMPTY = (where: string, template: string, placeholder: string) =>
  `@WithLock('${template}') on ${where}: ${placeholder} is an empty string in this call, so the key would not identify anything.`;

export const TEMPLATE_VALUE_BLANK = (where: string, template: string, placeholder: string, value: string) =>
  `@WithLock('${template}') on ${where}: ${placeholder} is only whitespace (${visible(value)}) in this call, so the key would not identify anything.`;

export const TEMPLATE_BLANK = (where: string, template: string) =>
  `@WithLock on ${where}: the key template ${visible(template)} is only whitespace, which no lock key may be. ${TEMPLATE_HELP}`;

/**
 * `found`: another templating syntax's placeholders; `fixed`: the template rewritten with `<N>`
 * placeholders, when each names an argument by position; `constantKey`: the method has arguments
 * but the template uses none.
 */
export const TEMPLATE_FOREIGN_PLACEHOLDER = (
  where: string,
  template: string,
  found: readonly string[],
  fixed: string | undefined,
  constantKey: boolean,
) =>
  `@WithLock('${template}') on ${where}: ${found.map((f) => `"${f}"`).join(', ')} ${found.length === 1 ? 'is not a placeholder' : 'are not placeholders'} here: the key would contain ${found.length === 1 ? 'it' : 'them'} literally${constantKey ? ', so every call would wait for the same lock' : ''}. ${fixed ? `Write '${fixed}'. ` : 'Name the argument by its position instead. '}${TEMPLATE_HELP} Braces around a number or a name, and %s, %d or %i, are not allowed as literal text in a template; use other characters, or call LockService.withLock() with the key.`;

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

export const SCHEDULE_UNREADABLE = (where: string, holdMs: number) =>
  `@WithLock on ${where}: its @Cron schedule could not be read (the "cron" package that @nestjs/schedule uses was not found), so holdAtLeast stays ${holdMs} ms; set holdAtLeast to about half the schedule's period so each tick runs exactly once.`;

export const HOLD_AT_LEAST_REACHES_PERIOD = (where: string, holdMs: number, periodMs: number) =>
  `@WithLock on ${where}: holdAtLeast (${holdMs} ms) reaches the period of its schedule (${periodMs} ms), so the next tick would find the lock still held and be skipped on every instance. Use at most half the period (${Math.floor(periodMs / 2)} ms), or leave holdAtLeast out: it is then derived from the schedule.`;

// ---- Leadership: lead() and @WhenLeader ----

export const LEAD_OPTION_INVALID = (name: string, option: string, expected: string, value: unknown) =>
  `lead('${truncate(name)}') option "${option}" must be ${expected}; got ${describe(value)}.`;

export const LEAD_WATCH_ABOVE_LEASE = (name: string, watchMs: number, leaseMs: number) =>
  `lead('${truncate(name)}'): watchInterval (${watchMs} ms) must not be longer than the lease (${leaseMs} ms): followers would notice a dead or departed leader only after more than a lease. A third of the lease is the default.`;

export const LEAD_CONFLICT = (name: string, option: string) =>
  `lead('${truncate(name)}'): this process already campaigns for "${truncate(name)}" with another ${option}. One campaign per name runs in a process (lead() and @WhenLeader share it): pass the same options everywhere, or none after the first call.`;

export const LEADERSHIP_ENDED = (name: string) =>
  `The campaign for leadership "${truncate(name)}" has ended (resign() or shutdown): it will not be elected again. Call lead('${truncate(name)}') to campaign anew.`;

export const LEADERSHIP_NOT_LEADING = (name: string) => `This instance does not lead "${truncate(name)}" now.`;

export const LEADERSHIP_RETRY = (name: string, error: unknown, delayMs: number) =>
  `Campaign for leadership "${truncate(name)}" failed to reach DynamoDB (${errorText(error)}); trying again in ${Math.round(delayMs)} ms.`;

export const LEADERSHIP_LISTENER_FAILED = (name: string, kind: 'onElected' | 'onRevoked', error: unknown) =>
  `An ${kind} listener of leadership "${truncate(name)}" threw (${errorText(error)}); ignored, the campaign goes on.`;

export const WHEN_LEADER_NAME_INVALID = (where: string, reason: string) => `@WhenLeader on ${where}: ${reason}`;

export const WHEN_LEADER_NOT_A_METHOD = (where: string) =>
  `@WhenLeader on ${where}: only methods can be decorated, not getters, setters or properties.`;

export const WHEN_LEADER_STATIC = (where: string) =>
  `@WhenLeader on ${where}: static methods are not supported; decorate an instance method of a provider or controller.`;

export const WHEN_LEADER_OBSERVABLE_UNDECLARED = (where: string) =>
  `@WhenLeader on ${where}: the method returned an Observable, but its declared result could not be read (no decorator metadata, an inferred result, or a type alias, \`import type\` or union in the declaration), so a follower's call would return undefined, not an Observable. Declare \`: Observable<T | undefined>\` with Observable imported as a value (and emitDecoratorMetadata on), or return a Promise (e.g. lastValueFrom(...)).`;

export const WHEN_LEADER_SERVICE_MISSING = (className: string, method?: string) =>
  `${className}${method ? `.${method}` : ''} uses @WhenLeader, but no LockService is available to it. Import DynamoLockModule.forRoot() (or forRootAsync(), or forTesting() in tests) in your root module (it is global unless isGlobal: false; then import it in ${className}'s module), and let Nest create ${className} (do not construct it with new).`;

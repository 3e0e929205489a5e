import { hostname } from 'node:os';
import type { LockLogger } from '../../interfaces/lock-logger.interface';
import { LockConfigurationError, LockValidationError } from '../../errors/lock.errors';
import {
  LOCK_MODE_INVALID,
  CALL_OPTION_INVALID,
  FIRE_TIME_INVALID,
  FIRE_TIME_NEEDS_SINGLE_ATTEMPT,
  FIRE_TIME_WITH_LIMIT,
  HEARTBEAT_NOT_BELOW_LEASE,
  INVALID_OPTION,
  INVALID_WAIT,
  KEY_PREFIX_INVALID,
  OPTIONS_NOT_OBJECT,
  TABLE_NAME_ENV_INVALID,
  optionsScope,
} from '../../errors/lock.messages';
import type { LockEntryPoint } from '../../errors/entry-point';
import type { AcquireOptions } from '../../interfaces/acquire-options.interface';
import type { DynamoLockOptions } from '../../interfaces/dynamo-lock-options.interface';
import type { LockEventListener } from '../../interfaces/lock-event.interface';
import { unknownOptionMessage } from '../../utils/closest-name';
import { type Duration, MAX_DURATION_MS, parseDuration, parseLease } from '../../utils/duration';
import { MAX_KEY_BYTES } from '../../utils/lock-key.validation';
import { isTableName } from '../../store/dynamo/lock-table';
import { ConsoleLockLogger } from './console.logger';
import { resolveTableKeys } from './table-keys.options';
import type { LockSortKey } from '../../interfaces/lock-table-keys.interface';

/** Defaults of {@link DynamoLockOptions}, as documented. */
export const DEFAULTS = {
  tableName: 'nestjs-dynamo-lock',
  leaseDuration: 30_000,
  ttlDays: 2,
  /** Upper bound of the default `requestTimeout` (a third of the lease otherwise). */
  requestTimeoutMaxMs: 3_000,
} as const;

/** Every option name (the compiler keeps it complete), and `isGlobal` of the Nest module. */
const OPTION_NAMES = Object.keys({
  tableName: true,
  leaseDuration: true,
  heartbeatInterval: true,
  wait: true,
  maxPollInterval: true,
  requestTimeout: true,
  ttlDays: true,
  client: true,
  clientConfig: true,
  createTable: true,
  verifyTable: true,
  ownerName: true,
  keyPrefix: true,
  partitionKey: true,
  sortKey: true,
  store: true,
  onEvent: true,
  eventEmitter: true,
  telemetry: true,
  logger: true,
} satisfies Record<keyof DynamoLockOptions, true>).concat('isGlobal');

/** Every option of `acquire()` and `withLock()` (the compiler keeps it complete); `tryAcquire()` takes them but `wait`. */
const ACQUIRE_OPTION_NAMES = Object.keys({
  wait: true,
  signal: true,
  leaseDuration: true,
  data: true,
  heartbeat: true,
  limit: true,
  fireTime: true,
  mode: true,
} satisfies Record<keyof AcquireOptions, true>);

/**
 * Checks the options of one call (`acquire()`, `tryAcquire()`, `withLock()`) before anything is
 * sent: an object, with known names only (a misspelt one would be ignored silently).
 * @throws LockValidationError naming the call and the option, with the closest known name.
 */
export function checkAcquireOptions(options: unknown, scope: string, withWait = true): void {
  if (options === undefined) return;
  if (options === null || typeof options !== 'object')
    throw new LockValidationError(CALL_OPTION_INVALID(scope, 'options', 'an object', options));
  const known = withWait ? ACQUIRE_OPTION_NAMES : ACQUIRE_OPTION_NAMES.filter((name) => name !== 'wait');
  const unknown = unknownOptionMessage(options, known, scope);
  if (unknown) throw new LockValidationError(unknown);
  const { heartbeat, fireTime, wait, limit, mode } = options as AcquireOptions;
  if (mode !== undefined && mode !== 'read' && mode !== 'upgradeable' && mode !== 'write')
    throw new LockValidationError(LOCK_MODE_INVALID(scope, mode));
  if (heartbeat !== undefined && typeof heartbeat !== 'boolean')
    throw new LockValidationError(CALL_OPTION_INVALID(scope, 'heartbeat', 'true or false', heartbeat));
  if (fireTime !== undefined) {
    if (fireOf(fireTime) === undefined) throw new LockValidationError(FIRE_TIME_INVALID(scope, fireTime));
    if (limit !== undefined) throw new LockValidationError(FIRE_TIME_WITH_LIMIT(scope));
    if (withWait && wait !== false && wait !== 0) throw new LockValidationError(FIRE_TIME_NEEDS_SINGLE_ATTEMPT(scope));
  }
}

/** A fire's scheduled time in epoch ms (`fireTime`), or `undefined` when it is not a valid time. */
export function fireOf(fireTime: unknown): number | undefined {
  const ms = fireTime instanceof Date ? fireTime.getTime() : fireTime;
  return typeof ms === 'number' && Number.isFinite(ms) && ms >= 0 ? Math.round(ms) : undefined;
}

/** Options with every default applied and every duration in milliseconds. */
export interface ResolvedLockOptions {
  tableName: string;
  leaseMs: number;
  /** Explicit heartbeat interval, or `undefined` for a third of each lock's lease. */
  heartbeatMs: number | undefined;
  /** Longest pause between polls of a waiter, in ms. */
  maxPollMs: number;
  /** Default wait in ms: `Infinity` without limit, `0` for one attempt. */
  waitMs: number;
  /** Time limit of each DynamoDB request, in ms. */
  requestTimeoutMs: number;
  ttlDays: number;
  ownerName: string;
  keyPrefix: string;
  /** The lock table's partition key attribute (default `key`). */
  partitionKey: string;
  /** The lock table's sort key and lock items' value in it, when it has one. */
  sortKey: LockSortKey | undefined;
  createTable: boolean;
  verifyTable: boolean;
  logger: LockLogger;
  onEvent: LockEventListener | undefined;
  eventEmitter: boolean | 'auto';
  telemetry: boolean;
}

/**
 * Where the Nest module and the CLI note, on the options they pass to a `LockManager`, which entry
 * point the user wrote them for. A symbol, so it is no option: `Object.keys` (the check of option
 * names) skips it, and a spread copies it.
 */
const ENTRY_POINT = Symbol('nestjs-dynamo-lock.entryPoint');

/** A copy of `options` that names `entry` in its configuration errors. */
export function withEntryPoint(options: DynamoLockOptions, entry: LockEntryPoint): DynamoLockOptions {
  return { ...options, [ENTRY_POINT]: entry } as DynamoLockOptions;
}

/** The entry point noted on `options` by {@link withEntryPoint}, if any. */
export function entryPointOf(options: unknown): LockEntryPoint | undefined {
  if (typeof options !== 'object' || options === null) return undefined;
  return (options as { [ENTRY_POINT]?: LockEntryPoint })[ENTRY_POINT];
}

/**
 * Applies defaults and validates the options, before anything is sent.
 * @param entry what the options were written for, as errors name it (default: a standalone `LockManager`).
 * @throws LockConfigurationError naming the bad option.
 */
export function resolveLockOptions(options: DynamoLockOptions = {}, entry: LockEntryPoint = 'LockManager'): ResolvedLockOptions {
  if (options === null || typeof options !== 'object') throw new LockConfigurationError(OPTIONS_NOT_OBJECT(options, entry));
  const unknown = unknownOptionMessage(options, OPTION_NAMES, optionsScope(entry));
  if (unknown) throw new LockConfigurationError(unknown);
  const fromEnv = options.tableName === undefined ? process.env.DYNAMO_LOCK_TABLE : undefined;
  const tableName = options.tableName ?? fromEnv ?? DEFAULTS.tableName;
  if (!isTableName(tableName)) {
    throw new LockConfigurationError(
      fromEnv === undefined
        ? INVALID_OPTION('tableName', 'a DynamoDB table name (3-255 of a-z A-Z 0-9 _ . -)', tableName, entry)
        : TABLE_NAME_ENV_INVALID(fromEnv, entry),
    );
  }
  const leaseMs = asConfigError(() => parseLease(options.leaseDuration ?? DEFAULTS.leaseDuration));
  const heartbeatMs =
    options.heartbeatInterval === undefined
      ? undefined
      : asConfigError(() => parseDuration(options.heartbeatInterval, 'heartbeatInterval'));
  if (heartbeatMs !== undefined && heartbeatMs >= leaseMs)
    throw new LockConfigurationError(HEARTBEAT_NOT_BELOW_LEASE(heartbeatMs, leaseMs));
  const ttlDays = options.ttlDays ?? DEFAULTS.ttlDays;
  if (typeof ttlDays !== 'number' || !Number.isFinite(ttlDays) || ttlDays < 0) {
    throw new LockConfigurationError(INVALID_OPTION('ttlDays', 'a number of days, 0 or more', ttlDays, entry));
  }
  const ownerName = options.ownerName ?? `${hostname()}:${process.pid}`;
  if (typeof ownerName !== 'string' || ownerName.length === 0 || ownerName.length > 256) {
    throw new LockConfigurationError(INVALID_OPTION('ownerName', 'a non-empty string of at most 256 characters', ownerName, entry));
  }
  const keyPrefix = options.keyPrefix ?? '';
  if (typeof keyPrefix !== 'string') throw new LockConfigurationError(INVALID_OPTION('keyPrefix', 'a string', keyPrefix, entry));
  if (!keyPrefix.isWellFormed()) throw new LockConfigurationError(KEY_PREFIX_INVALID(keyPrefix, 'contains a lone surrogate', entry));
  if (Buffer.byteLength(keyPrefix, 'utf8') >= MAX_KEY_BYTES) {
    throw new LockConfigurationError(
      KEY_PREFIX_INVALID(keyPrefix, `leaves no room for keys (DynamoDB keys are at most ${MAX_KEY_BYTES} bytes)`, entry),
    );
  }
  const { partitionKey, sortKey } = resolveTableKeys(options.partitionKey, options.sortKey, entry);
  const createTable = booleanOption('createTable', options.createTable, false, entry);
  const verifyTable = booleanOption('verifyTable', options.verifyTable, true, entry);
  if (options.onEvent !== undefined && typeof options.onEvent !== 'function') {
    throw new LockConfigurationError(INVALID_OPTION('onEvent', 'a function of one lock event', options.onEvent, entry));
  }
  const eventEmitter = options.eventEmitter ?? 'auto';
  if (eventEmitter !== true && eventEmitter !== false && eventEmitter !== 'auto') {
    throw new LockConfigurationError(INVALID_OPTION('eventEmitter', "true, false or 'auto'", eventEmitter, entry));
  }
  const telemetry = booleanOption('telemetry', options.telemetry, true, entry);
  return {
    tableName,
    leaseMs,
    heartbeatMs,
    maxPollMs: asConfigError(() => parseDuration(options.maxPollInterval ?? 1_000, 'maxPollInterval')),
    // Two leases, within the longest timer Node runs (a longer one would fire at once).
    waitMs:
      options.wait === undefined
        ? Math.min(2 * leaseMs, MAX_DURATION_MS)
        : asConfigError(() => resolveWait(options.wait as Duration | boolean)),
    requestTimeoutMs:
      options.requestTimeout === undefined
        ? Math.min(DEFAULTS.requestTimeoutMaxMs, Math.ceil(leaseMs / 3))
        : asConfigError(() => parseDuration(options.requestTimeout, 'requestTimeout')),
    ttlDays,
    ownerName,
    keyPrefix,
    partitionKey,
    sortKey,
    createTable,
    verifyTable,
    logger: options.logger ?? new ConsoleLockLogger(),
    onEvent: options.onEvent,
    eventEmitter,
    telemetry,
  };
}

/**
 * Turns a `wait` option into milliseconds: `true` → `Infinity`, `false` or `0` → `0` (one attempt).
 * @throws LockValidationError for anything else that is not a duration.
 */
export function resolveWait(wait: Duration | boolean): number {
  if (wait === true) return Number.POSITIVE_INFINITY;
  if (wait === false || wait === 0) return 0;
  if (typeof wait !== 'number' && typeof wait !== 'string') throw new LockValidationError(INVALID_WAIT(wait));
  return parseDuration(wait, 'wait');
}

/** The heartbeat interval of a lock with lease `leaseMs`. */
export function heartbeatIntervalFor(options: ResolvedLockOptions, leaseMs: number): number {
  return options.heartbeatMs !== undefined && options.heartbeatMs < leaseMs ? options.heartbeatMs : Math.max(1, Math.floor(leaseMs / 3));
}

/** A boolean option: `true`, `false`, or absent for the default (a string such as `'false'` is an error). */
function booleanOption(name: string, value: unknown, fallback: boolean, entry: LockEntryPoint): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') {
    throw new LockConfigurationError(INVALID_OPTION(name, 'true or false (a boolean, not a string)', value, entry));
  }
  return value;
}

/** Reports a bad module option as a configuration error (it surfaces at start-up). */
function asConfigError<T>(read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (error instanceof LockValidationError) throw new LockConfigurationError(error.message);
    throw error;
  }
}

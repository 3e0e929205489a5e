/** Base class of every error this library throws on purpose. */
export class DynamoLockError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Who held a lock when an attempt to take it failed. */
export interface LockHolder {
  /** Owner name of the holder (host name and pid unless configured). */
  owner?: string;
  /** The holder's fencing token. */
  fencingToken?: number;
  /** The holder's lease duration in milliseconds, as stored. */
  leaseDuration?: number;
}

/**
 * Thrown by `acquire()` when the lock could not be taken within `wait` (or at the single attempt
 * when `wait: false`) because an answer showed another holder, or a caller of this process holds
 * the key or is ahead for it; an outage is a {@link LockUnavailableError}. Maps to HTTP 409 in `LockInterceptor`.
 */
export class LockBusyError extends DynamoLockError {
  constructor(
    message: string,
    /** The key as passed to `acquire()`. */
    readonly key: string,
    /** The current holder, when DynamoDB told us. */
    readonly holder: LockHolder | undefined,
    /** How long this caller waited, in milliseconds. */
    readonly waitedMs: number,
    /**
     * When the holder is expected to release, in milliseconds from now: from when it was first
     * seen and how long holders of this key usually keep it. `undefined` when nothing is known.
     */
    readonly releaseInMs?: number,
    /**
     * For a single attempt at a scheduled fire (`fireTime`): the fire at or after it that another
     * instance claimed already, so this one ran (or runs) elsewhere. `undefined` when the key was
     * held by another run (or an ordinary holder).
     */
    readonly fireClaimed?: { readonly scheduledAt: Date; readonly owner?: string },
  ) {
    super(message);
  }
}

/**
 * Thrown by `acquire()` (and `tryAcquire()`) when DynamoDB did not let it find out who holds the
 * lock: every request failed or got no answer within `requestTimeout`, and no answer showed
 * another holder. Thrown by the end of `wait` plus one request time limit (one request limit for
 * a single attempt); `cause` is the last DynamoDB error. Maps to HTTP 503 in `LockInterceptor`.
 */
export class LockUnavailableError extends DynamoLockError {
  constructor(
    message: string,
    /** The key as passed to `acquire()`. */
    readonly key: string,
    /** How long this caller tried, in milliseconds. */
    readonly waitedMs: number,
    /** The time limit of each DynamoDB request, in milliseconds (`requestTimeout`). */
    readonly requestTimeoutMs: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Why a held lock was lost. */
export type LockLostReason =
  /** Another owner took the lock over after this holder's lease ran out. */
  | 'taken'
  /** The lock record was released or deleted by someone else. */
  | 'gone'
  /** The lease ran out on the local clock without a successful heartbeat (pause, or DynamoDB unreachable). */
  | 'expired'
  /** The lock service shut down (application shutdown) and released the lock. */
  | 'shutdown'
  /**
   * This holder released the lock: the signal aborts at every release, so work started under the
   * lock that is still running (a timer, a listener, a nested handle) stops too.
   */
  | 'released';

/**
 * The reason of a `Lock.signal` that aborted because the lock was lost, and the error
 * `extend()` throws on a lock that is no longer held. `reason` tells a stolen lock
 * (`taken`, `gone`) apart from a DynamoDB outage or a paused process (`expired`, with `cause`),
 * and from a release at application shutdown (`shutdown`).
 */
export class LockLostError extends DynamoLockError {
  constructor(
    message: string,
    readonly key: string,
    readonly reason: LockLostReason,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Thrown before any request is sent when an argument is invalid: key, duration, data, template. */
export class LockValidationError extends DynamoLockError {}

/**
 * What is wrong with a lock key built for one call (see {@link LockKeyError}):
 * - `missing`: a `@WithLock` value is `null` or `undefined`;
 * - `empty`: the key, or a value, is an empty string;
 * - `blank`: the key, or a value, is only whitespace;
 * - `object`: a value is an object named without a property path;
 * - `invalid-date`: a value is an invalid `Date`;
 * - `not-well-formed`: the key has a lone UTF-16 surrogate;
 * - `too-long`: the key (with `keyPrefix`, and a semaphore's suffix) is over 2,048 UTF-8 bytes.
 */
export type LockKeyProblem = 'missing' | 'empty' | 'blank' | 'object' | 'invalid-date' | 'not-well-formed' | 'too-long';

/**
 * Thrown when the key of one call is not a valid lock key: a value a `@WithLock` template is
 * built from is missing, empty, only whitespace, an object or an invalid Date, or the key is
 * empty, blank, too long or not well-formed text. Such keys usually come from request values, so
 * `LockInterceptor` answers this error with `400 Bad Request`; every other `LockValidationError`
 * is a programming error.
 */
export class LockKeyError extends LockValidationError {
  constructor(
    message: string,
    readonly problem: LockKeyProblem,
  ) {
    super(message);
  }
}

/**
 * Whether `error` is a connection the peer broke (ECONNRESET, EPIPE: a reset, a "socket hang up"),
 * which the AWS SDK names `TimeoutError` although nothing timed out.
 */
export function isBrokenConnection(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return error instanceof Error && error.name === 'TimeoutError' && (code === 'ECONNRESET' || code === 'EPIPE');
}

/** Thrown at start-up when the module options or the lock table are wrong. */
export class LockConfigurationError extends DynamoLockError {}

/** What is wrong with the lock table. */
export type LockTableProblem = 'missing' | 'wrong-schema' | 'not-active';

/** Where a lock table was looked for: the DynamoDB client's region and endpoint. */
export interface LockTableLocation {
  /** The client's AWS region, when one is set. */
  readonly region?: string;
  /** The URL the client sends to: AWS's endpoint for the region, or one set for it (DynamoDB Local's, say); absent when unknown. */
  readonly endpoint?: string;
}

/**
 * Thrown at start-up (or by `ensureLockTable`) when the lock table is missing, has another key
 * schema, or never becomes active; and by a request to a table that no longer exists.
 */
export class LockTableError extends LockConfigurationError {
  constructor(
    message: string,
    readonly tableName: string,
    readonly problem: LockTableProblem,
    /** Where the table was looked for (the region and endpoint of a `missing` table), when known. */
    readonly location?: LockTableLocation,
  ) {
    super(message);
  }
}

/** Why one item of a `lock.transact()` was cancelled, as DynamoDB's `CancellationReasons` tell it. */
export interface TransactionCancellation {
  /** The index of the item in the call's `items`. */
  readonly index: number;
  /** DynamoDB's code: `None` (not the cause), `ConditionalCheckFailed`, `TransactionConflict`, `ValidationError`... */
  readonly code: string;
  /** DynamoDB's message, when it gave one. */
  readonly message?: string;
  /** The item as it was, when the item asked for it (`ReturnValuesOnConditionCheckFailure: 'ALL_OLD'`), in the form of the call. */
  readonly item?: Record<string, unknown>;
}

/**
 * Thrown by `lock.transact()` when DynamoDB cancelled the transaction for the caller's own items
 * (a condition of theirs failed, a conflict, an invalid item) while the lock still held: nothing
 * was written. `reasons` has one entry per item of the call, and one more (`index` = the number of items) when the lock's own check was cancelled for another cause than a failed condition (a conflict with a write of the lock item in flight). A lost lock is a {@link LockLostError}.
 */
export class LockTransactionError extends DynamoLockError {
  constructor(
    message: string,
    /** The lock's key as passed to `acquire()`. */
    readonly key: string,
    /** One per item of the call, in its order. */
    readonly reasons: readonly TransactionCancellation[],
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * Thrown by `lock.fencedWrite()` when the item already carries a newer fencing token than the
 * lock's: a later holder of the lock wrote it, so this holder lost the lock, and nothing was written.
 */
export class LockFencedError extends DynamoLockError {
  constructor(
    message: string,
    /** The lock's key as passed to `acquire()`. */
    readonly key: string,
    /** This lock's fencing token, which the write carried. */
    readonly fencingToken: number,
    /** The newer token the item carries: the holder whose write won. */
    readonly newerToken: number,
    /** The table of the refused write. */
    readonly tableName: string,
  ) {
    super(message);
  }
}

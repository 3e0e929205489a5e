import { isBrokenConnection } from '../../errors/lock.errors';

/** Throttling errors: DynamoDB answered, asking to slow down. */
const THROTTLING_NAMES = new Set(['ThrottlingException', 'ProvisionedThroughputExceededException', 'RequestLimitExceeded']);
/** No answer within a time limit (the SDK's, or the store's request limit). */
const TIMEOUT_NAMES = new Set(['TimeoutError', 'RequestTimeout', 'RequestTimeoutException']);

const TRANSIENT_NAMES = new Set([
  ...THROTTLING_NAMES,
  ...TIMEOUT_NAMES,
  'LimitExceededException',
  'InternalServerError',
  'InternalFailure',
  'ServiceUnavailable',
  'ServiceUnavailableException',
  'TransactionConflictException',
]);

const NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ETIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
  'ENOTFOUND',
  'ECONNABORTED',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

interface ErrorShape {
  name?: unknown;
  code?: unknown;
  message?: unknown;
  errors?: unknown;
  cause?: unknown;
  $retryable?: unknown;
  $metadata?: { httpStatusCode?: number };
}

/**
 * Whether an error (after the SDK's own retries) is worth retrying later:
 * throttling, 5xx answers, timeouts and network failures. Such an error says nothing
 * about who holds a lock, and a write that failed this way may still have been applied.
 * Read by its shape (name, code, `$metadata`), never by `instanceof`: under Jest the SDK's error
 * may stand for a network error of another realm ({@link unwrapSdkError}).
 */
export function isTransientError(error: unknown): boolean {
  return isTransientShape(error) || isTransientShape(unwrapSdkError(error));
}

function isTransientShape(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  if (everyAddressFailed.has(error)) return true;
  const shape = error as ErrorShape;
  if (typeof shape.name === 'string' && TRANSIENT_NAMES.has(shape.name)) return true;
  if (typeof shape.code === 'string' && NETWORK_CODES.has(shape.code)) return true;
  if (shape.$retryable) return true;
  const status = shape.$metadata?.httpStatusCode;
  return typeof status === 'number' && status >= 500;
}

/** Whether a DynamoDB error is a failed condition check. */
export function isConditionFailure(
  error: unknown,
): error is Error & { Item?: Record<string, import('@aws-sdk/client-dynamodb').AttributeValue> } {
  return error instanceof Error && error.name === 'ConditionalCheckFailedException';
}

/** What kind of failure a transient error is, for messages: throttling, no answer in time, or other. */
export function transientKind(error: unknown): 'throttled' | 'timed-out' | 'failed' {
  const inner = isTransientShape(error) ? undefined : unwrapSdkError(error);
  if (inner !== undefined) return transientKind(inner);
  const shape = (typeof error === 'object' && error !== null ? error : {}) as ErrorShape;
  const name = typeof shape.name === 'string' ? shape.name : '';
  if (THROTTLING_NAMES.has(name)) return 'throttled';
  if (isBrokenConnection(error)) return 'failed';
  if (TIMEOUT_NAMES.has(name) || name === 'AbortError' || shape.code === 'ETIMEDOUT') return 'timed-out';
  return 'failed';
}

/** Why a request never got an answer from DynamoDB: no connection, or no way to build or sign it. */
export type ConnectionProblemKind =
  /** Connection refused or reset, unknown host, network unreachable, timeout. */
  | 'unreachable'
  /** The endpoint is not a URL the SDK can send to. */
  | 'bad-endpoint'
  /** No AWS region configured. */
  | 'no-region'
  /** No AWS credentials found. */
  | 'no-credentials';

/** A {@link ConnectionProblemKind} and the error that tells it (for a failed connection to every address of a host, the first). */
export interface ConnectionProblem {
  kind: ConnectionProblemKind;
  error: unknown;
}

/**
 * What kept a request from reaching DynamoDB, or `undefined` when DynamoDB answered (or the
 * error is of another kind). Used by the start-up table check and the CLI.
 */
export function connectionProblem(error: unknown): ConnectionProblem | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const shape = error as ErrorShape;
  if (shape.name === 'CredentialsProviderError') return { kind: 'no-credentials', error };
  if (typeof shape.message === 'string' && /region is missing/i.test(shape.message)) return { kind: 'no-region', error };
  if (shape.code === 'ERR_INVALID_URL') return { kind: 'bad-endpoint', error };
  if (typeof shape.code === 'string' && NETWORK_CODES.has(shape.code)) return { kind: 'unreachable', error };
  if (shape.name === 'TimeoutError' || shape.name === 'RequestTimeout') return { kind: 'unreachable', error };
  if (everyAddressFailed.has(error)) return { kind: 'unreachable', error };
  // Node reports a failed connection to every address of a host as an AggregateError.
  if (Array.isArray(shape.errors)) {
    const first: unknown = shape.errors.find((inner) => typeof inner === 'object' && inner !== null);
    if (first !== undefined) return connectionProblem(first);
  }
  const inner = unwrapSdkError(error);
  return inner === undefined ? undefined : connectionProblem(inner);
}

/** The start of the message of the SDK's stand-in for an error it could not keep (`asSdkError` in its retry middleware). */
const SDK_WRAPPER = /^AWS SDK error wrapper for (.*)$/s;
/** `Name: message`, as `String(error)` writes an error. */
const NAMED_TEXT = /^(\w+): (.*)$/s;
/** Node's text for a connection reset while waiting for an answer; its code is always ECONNRESET. */
const HANG_UP = /\bsocket hang up\b/;
/**
 * Errors rebuilt from the SDK's stand-in for Node's failed connection to every address of a host,
 * which keeps no more than the name `AggregateError`: a failed connection, of no known code.
 */
const everyAddressFailed = new WeakSet<object>();

/**
 * The error an SDK error stands for when the request got no HTTP answer (its `$metadata` has no
 * `httpStatusCode`), or `undefined` for any other error:
 * - its `cause`, when it keeps one;
 * - else, for the stand-in the SDK's retry middleware makes of an error that fails its
 *   `instanceof Error` (a network error of Node's realm, seen from Jest's VM modules or a `vm`
 *   context), an error rebuilt from the only thing it keeps, the text:
 *   `AWS SDK error wrapper for Error: connect ECONNREFUSED ...` gives name, message and the network
 *   code in the text (`socket hang up` is ECONNRESET); Node's failed connection to every address
 *   of a host keeps only its name, `AggregateError`.
 * Duck-typed on purpose: `instanceof` is what fails across realms.
 */
export function unwrapSdkError(error: unknown): unknown {
  if (typeof error !== 'object' || error === null) return undefined;
  const shape = error as ErrorShape;
  const metadata: unknown = shape.$metadata;
  if (typeof metadata !== 'object' || metadata === null || (metadata as { httpStatusCode?: unknown }).httpStatusCode !== undefined) {
    return undefined;
  }
  if (typeof shape.cause === 'object' && shape.cause !== null) return shape.cause;
  const text = typeof shape.message === 'string' ? SDK_WRAPPER.exec(shape.message)?.[1] : undefined;
  return text === undefined ? undefined : rebuilt(text);
}

/** An error with the name, message and network code that `String(error)` left in `text`. */
function rebuilt(text: string): Error & { code?: string } {
  if (text === 'AggregateError') {
    const error = Object.assign(new Error(''), { name: text });
    everyAddressFailed.add(error);
    return error;
  }
  const [, name, message] = NAMED_TEXT.exec(text) ?? [undefined, undefined, text];
  const error: Error & { code?: string } = new Error(message);
  if (name !== undefined) error.name = name;
  const code = text.match(/\bE[A-Z_]{3,}\b/g)?.find((word) => NETWORK_CODES.has(word)) ?? (HANG_UP.test(text) ? 'ECONNRESET' : undefined);
  if (code !== undefined) error.code = code;
  return error;
}

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
  $retryable?: unknown;
  $metadata?: { httpStatusCode?: number };
}

/**
 * Whether an error (after the SDK's own retries) is worth retrying later:
 * throttling, 5xx answers, timeouts and network failures. Such an error says nothing
 * about who holds a lock, and a write that failed this way may still have been applied.
 */
export function isTransientError(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
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
  // Node reports a failed connection to every address of a host as an AggregateError.
  if (Array.isArray(shape.errors)) {
    const first: unknown = shape.errors.find((inner) => typeof inner === 'object' && inner !== null);
    if (first !== undefined) return connectionProblem(first);
  }
  return unwrapped(shape);
}

/**
 * A network error the SDK wrapped because it came from another realm (Jest's VM modules, `vm`):
 * the wrapper keeps only its text, `AWS SDK error wrapper for Error: connect ECONNREFUSED ...`.
 */
function unwrapped(shape: ErrorShape): ConnectionProblem | undefined {
  const text = typeof shape.message === 'string' ? /^AWS SDK error wrapper for \w*Error: (.*)$/s.exec(shape.message)?.[1] : undefined;
  const code = text?.match(/\bE[A-Z_]{3,}\b/g)?.find((word) => NETWORK_CODES.has(word));
  return text && code ? { kind: 'unreachable', error: Object.assign(new Error(text), { code }) } : undefined;
}

const TRANSIENT_NAMES = new Set([
  'ThrottlingException',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
  'LimitExceededException',
  'InternalServerError',
  'InternalFailure',
  'ServiceUnavailable',
  'ServiceUnavailableException',
  'TransactionConflictException',
  'TimeoutError',
  'RequestTimeout',
  'RequestTimeoutException',
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
]);

interface ErrorShape {
  name?: unknown;
  code?: unknown;
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

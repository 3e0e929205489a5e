/**
 * The backoff between retries of a DynamoDB request that failed for a passing reason (a
 * transient error, a table still being created): the first pause, doubled after every failure
 * up to the longest. One copy, so every retry loop backs off alike.
 */

/** The first pause before a retry, in ms. */
export const RETRY_MIN_MS = 50;

/** The longest pause between retries, in ms. */
export const RETRY_MAX_MS = 2_000;

/** The pause after one of `ms`: twice as long, at most {@link RETRY_MAX_MS}. */
export function nextRetryMs(ms: number): number {
  return Math.min(ms * 2, RETRY_MAX_MS);
}

import { LockUnavailableError } from '../../errors/lock.errors';
import { LOCK_UNAVAILABLE, TRANSIENT_RETRY } from '../../errors/lock.messages';
import type { LockEvent } from '../../interfaces/lock-event.interface';
import type { LockLogger } from '../../interfaces/lock-logger.interface';
import type { LockTrace } from '../../observability/lock.telemetry';
import { isTransientError } from '../../store/dynamo/transient-error';
import { monotonicNow } from '../../utils/clock';
import type { Waiter } from '../engine/lock-state';

/** Where a waiter's retries are told: the logger, and the lock's events. */
export interface RetryReporter {
  readonly options: { readonly logger: LockLogger };
  emit(event: LockEvent, trace?: LockTrace): void;
}

/**
 * Takes in a failed request of a waiter: an error that is not transient (a bad request, access
 * denied) is thrown on; a transient one becomes the waiter's last error (its cause if the wait ends
 * without an answer that showed a holder), and the caller retries.
 */
export function takeTransient(waiter: Waiter, error: unknown): void {
  if (!isTransientError(error)) throw error;
  waiter.lastError = error;
}

/** Tells a waiter's retry in `delayMs`: a warning, and a `retry` event. */
export function reportRetry(reporter: RetryReporter, waiter: Waiter, error: unknown, delayMs: number): void {
  reporter.options.logger.warn?.(TRANSIENT_RETRY('Acquisition', waiter.key, error, delayMs));
  reporter.emit({ type: 'retry', key: waiter.key, owner: waiter.owner, operation: 'acquire', error, delayMs }, waiter.trace);
}

/**
 * The error of a wait that ended without an answer showing another holder: DynamoDB failed or
 * did not answer (an outage, not contention), with `cause`, the last failure, when there was one.
 */
export function unavailableError(waiter: Waiter, requestTimeoutMs: number, cause: unknown): LockUnavailableError {
  const waited = Math.round(monotonicNow() - waiter.startedAt);
  return new LockUnavailableError(
    LOCK_UNAVAILABLE(waiter.key, waiter.deadline <= waiter.startedAt ? undefined : waited, cause),
    waiter.key,
    waited,
    requestTimeoutMs,
    cause === undefined ? undefined : { cause },
  );
}

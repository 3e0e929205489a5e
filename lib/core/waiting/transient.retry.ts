import { LockUnavailableError } from '../../errors/lock.errors';
import { LOCK_UNAVAILABLE, TRANSIENT_RETRY } from '../../errors/lock.messages';
import type { LockEvent } from '../../interfaces/lock-event.interface';
import type { LockLogger } from '../../interfaces/lock-logger.interface';
import type { LockTrace } from '../../observability/lock.telemetry';
import { isTransientError } from '../../store/dynamo/transient-error';
import { monotonicNow, sleep } from '../../utils/clock';
import type { Waiter } from '../engine/lock-state';
import type { RetryBackoff } from './retry.backoff';

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

/** One acquisition run as steps (see {@link stepUntilGranted}). */
export interface SteppedAcquisition<T> {
  readonly waiter: Waiter;
  /** Where retries are told. */
  readonly reporter: RetryReporter;
  /** Pauses between failed steps (reset by a step that got an answer). */
  readonly backoff: RetryBackoff;
  /** A single attempt (`wait: false`): a failed step ends it. */
  readonly single: boolean;
  /** One step: a write, a read, or a pause and a read; the grant once held. */
  step(): Promise<T | undefined>;
  /** A failed step: what was known of the item is stale now. */
  failed(): void;
  /** The error when the wait ends after a failed step. */
  deadlineError(): unknown;
  /** Undoes what the acquisition left behind when it ends without a grant (its ticket, say). */
  cleanUp(): Promise<void>;
}

/**
 * Runs an acquisition's steps until one grants, the caller gives up (its cancel signal), or a step
 * fails with a transient error too near the deadline to retry; other errors end it at once. An
 * acquisition that ends without a grant cleans up before its error is thrown.
 */
export async function stepUntilGranted<T>(acquisition: SteppedAcquisition<T>): Promise<T> {
  try {
    return await stepLoop(acquisition);
  } catch (error) {
    await acquisition.cleanUp();
    throw error;
  }
}

async function stepLoop<T>(acquisition: SteppedAcquisition<T>): Promise<T> {
  const { waiter, backoff } = acquisition;
  for (;;) {
    waiter.cancel.signal.throwIfAborted();
    try {
      const granted = await acquisition.step();
      if (granted) return granted;
      backoff.reset();
    } catch (error) {
      takeTransient(waiter, error);
      acquisition.failed();
      if (acquisition.single || monotonicNow() + backoff.base >= waiter.deadline) throw acquisition.deadlineError();
      const delayMs = backoff.next();
      reportRetry(acquisition.reporter, waiter, error, delayMs);
      await sleep(delayMs, waiter.cancel.signal);
    }
  }
}

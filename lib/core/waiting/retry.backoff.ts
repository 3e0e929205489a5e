import { nextRetryMs, RETRY_MIN_MS } from '../../utils/backoff';
import { jitter } from '../../utils/clock';

/**
 * The pauses between retries of a failed request, for every primitive and for leadership: from
 * {@link RETRY_MIN_MS}, growing after each failure, with jitter, back to the start after an answer.
 */
export class RetryBackoff {
  private delayMs = RETRY_MIN_MS;

  /** The next pause before jitter (a wait whose deadline comes sooner ends instead). */
  get base(): number {
    return this.delayMs;
  }

  /** The pause before the next attempt: the current delay with jitter, at most `capMs`. The delay then grows. */
  next(capMs = Number.POSITIVE_INFINITY): number {
    const ms = Math.min(jitter(this.delayMs), capMs);
    this.delayMs = nextRetryMs(this.delayMs);
    return ms;
  }

  /** An answer came: the next failure starts from the shortest pause again. */
  reset(): void {
    this.delayMs = RETRY_MIN_MS;
  }
}

import type { LockLogger } from '../interfaces/lock-logger.interface';
import { SKIPPED_BUSY, SKIPPED_BUSY_AGAIN, SKIPPED_FIRE } from '../errors/lock.messages';
import type { FireSkipReason } from '../interfaces/lock-event.interface';

/** A scheduled fire that was skipped: its scheduled time, why, and the instance that has it. */
export interface SkippedFire {
  readonly scheduledAt: Date;
  readonly reason: FireSkipReason;
  readonly by: string | undefined;
}

/** At most one line per this long about one method's skipped calls, after the first. */
const REPORT_EVERY_MS = 60_000;

/**
 * Logs the skipped calls of one `onBusy: 'skip'` method at debug level without flooding the
 * logger (Nest's default logger prints debug lines): the first skip, then at most one line a
 * minute that counts the skips since the last line.
 */
export class SkipReporter {
  private reportedAt: number | undefined;
  private unreported = 0;

  constructor(private readonly where: string) {}

  /** Notes one skipped call of `key`, held by `holder` (a scheduled `fire`: why it was skipped). */
  skipped(logger: LockLogger, key: string, holder: string | undefined, fire?: SkippedFire, now = Date.now()): void {
    if (this.reportedAt === undefined) {
      this.reportedAt = now;
      logger.debug?.(fire ? SKIPPED_FIRE(this.where, key, fire.scheduledAt, fire.reason, fire.by) : SKIPPED_BUSY(this.where, key, holder));
      return;
    }
    this.unreported++;
    if (now - this.reportedAt < REPORT_EVERY_MS) return;
    logger.debug?.(SKIPPED_BUSY_AGAIN(this.where, key, this.unreported, Math.round((now - this.reportedAt) / 1000), holder));
    this.reportedAt = now;
    this.unreported = 0;
  }
}

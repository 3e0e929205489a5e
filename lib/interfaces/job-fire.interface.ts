/** How a scheduled fire of a job ended, as its lock item records it. */
export type JobFireOutcome =
  /** Its run holds the job's lock now. */
  | 'running'
  /** Its run returned. */
  | 'done'
  /** Its run threw, or the app shut down before it returned. */
  | 'failed'
  /** Its instance stopped renewing the lock (a crash, a freeze) and another instance passed it. */
  | 'lost';

/**
 * The last fire of a scheduled job claimed in its lock item (`@Cron` with `@WithLock`, or
 * `acquire(key, { fireTime })`): which scheduled time ran, where, and how it ended. Read with
 * `lastFire()`; `inspect()` shows it on a held lock as `lastFire`.
 */
export interface JobFire {
  /** The fire's scheduled time (the schedule's, not the clock of the instance that ran it). */
  scheduledAt: Date;
  /** Owner name of the instance that claimed it. */
  owner: string;
  /** When its run started, by that instance's wall clock. */
  startedAt: Date;
  /** When its run ended (or was passed, for `lost`), by the writer's wall clock; absent while running. */
  endedAt?: Date;
  outcome: JobFireOutcome;
}

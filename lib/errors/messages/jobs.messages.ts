/** Messages about scheduled jobs (`@Cron` with `@WithLock`): fires skipped, missed or caught up, and boot checks. */

import { describe } from './message.format';

const SKIP_CAUSES = {
  'ran-elsewhere': (key: string, by: string | undefined) => `${by ? `"${by}"` : 'another instance'} claimed it first (lock "${key}"`,
  superseded: (key: string, by: string | undefined) =>
    `a later fire was claimed already${by ? ` by "${by}"` : ''}, so this one is past (lock "${key}"`,
  'previous-run': (key: string, by: string | undefined) => `the previous run still holds lock "${key}"${by ? ` on "${by}"` : ''} (`,
} as const;

export const SKIPPED_FIRE = (where: string, key: string, fire: Date, reason: keyof typeof SKIP_CAUSES, by: string | undefined) =>
  `Skipped ${where} for the fire of ${fire.toISOString()}: ${SKIP_CAUSES[reason](key, by)}${reason === 'previous-run' ? '' : '; '}further skips are counted, one line a minute).`;

export const FIRES_CHECK_FAILED = (where: string, key: string, error: unknown) =>
  `${where}: could not read the last fire of lock "${key}" at start-up to look for missed fires: ${error instanceof Error ? error.message : String(error)}`;

export const CRON_UNREADABLE = (where: string) =>
  `@WithLock on ${where}: its @Cron schedule could not be read (the "cron" package that @nestjs/schedule uses was not found, or is older than 3.0), so its fires cannot be claimed once across instances by their scheduled time. Install @nestjs/schedule with its own "cron" dependency.`;

export const LEASE_REACHES_PERIOD = (where: string, leaseMs: number, periodMs: number) =>
  `@WithLock on ${where}: leaseDuration (${leaseMs} ms) reaches the period of its @Cron schedule (${periodMs} ms): a run whose instance dies would hold the job past the next fire, which every instance would then skip. Use a lease below the period (a third of it is a good choice), or leave leaseDuration out.`;

export const FIRES_MISSED = (where: string, key: string, last: Date, count: number, claimed: Date) =>
  `${where}: ${count === 1 ? 'the fire' : `${count} fires, the last`} of ${last.toISOString()} ran on no instance (lock "${key}" last claimed the fire of ${claimed.toISOString()}); set catchUp: 'last' to run the most recent missed fire at start-up.`;

export const CATCH_UP_INVALID = (where: string, value: unknown) =>
  `@WithLock on ${where}: option "catchUp" must be 'none' or 'last'; got ${describe(value)}.`;

export const CATCH_UP_NEEDS_CRON = (where: string) =>
  `@WithLock on ${where}: catchUp needs a @Cron schedule and onBusy: 'skip' (a single attempt at each fire), so that a missed fire is named by its scheduled time.`;

export const CATCH_UP_NEEDS_STATIC_KEY = (where: string, template: string) =>
  `@WithLock on ${where}: catchUp needs a key that takes no argument, as the scheduler calls the job without any; "${template}" uses the method's arguments.`;

export const CATCH_UP_FAILED = (where: string, error: unknown) =>
  `${where}: the catch-up run of its most recent missed fire failed: ${error instanceof Error ? error.message : String(error)}`;

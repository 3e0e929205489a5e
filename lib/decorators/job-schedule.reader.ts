import { createRequire } from 'node:module';
import { join } from 'node:path';
import { loadOptionalPeer } from '../utils/optional-peer';

/** Metadata keys of `@nestjs/schedule` on a job method (read as plain metadata: no import needed). */
const CRON_OPTIONS = 'SCHEDULE_CRON_OPTIONS';
const INTERVAL_OPTIONS = 'SCHEDULE_INTERVAL_OPTIONS';

/** How many upcoming cron fire times are compared to find the shortest gap. */
const FIRE_TIMES = 16;
/**
 * How long after a fire's scheduled time a call still belongs to it: half the period, at most this.
 * The scheduler calls a job at its scheduled time on the instance's own clock, never before, and
 * late by as long as the event loop was blocked; a call further off is a call by hand, which
 * claims no fire (and keeps the lock `holdAtLeast`).
 */
const MAX_LATE_MS = 10 * 60_000;
/** How long before a fire's scheduled time a call belongs to it (a timer's rounding): a quarter of the period, at most this. */
const MAX_EARLY_MS = 1_000;
/** The furthest back a missed fire is looked for, and how many are counted at most. */
const MAX_LOOKBACK_MS = 400 * 24 * 3_600_000;
const MAX_COUNTED = 10_000;

/** The part of the `cron` package (which `@nestjs/schedule` runs on) used to read a cron expression. */
interface CronPackage {
  CronTime: new (
    source: string,
    timeZone?: string,
    utcOffset?: number,
  ) => {
    sendAt(count: number): { toMillis(): number }[];
    getNextDateFrom(start: Date, timeZone?: string): { toMillis(): number };
    readonly timeZone?: string;
  };
}

/**
 * The fires of a `@Cron` schedule, named by their scheduled time (epoch ms) in the schedule's own
 * time zone: every instance names a fire the same, whatever its clock says.
 */
export interface FireSchedule {
  /** The shortest time between two fires. */
  readonly periodMs: number;
  /**
   * The fire a call at `nowMs` (this instance's clock) is for: the latest one, when the call comes
   * less than half a period (10 minutes at most) after it; `undefined` for a call further off (by hand).
   */
  near(nowMs: number): number | undefined;
  /** The latest fire at or before `nowMs`, if any in the last 400 days. */
  lastBefore(nowMs: number): number | undefined;
  /** How many fires fall in (`fromMs`, `toMs`] (counted up to 10,000). */
  countBetween(fromMs: number, toMs: number): number;
}

/** A job method's schedule: an interval (no shared fire times), or a cron expression. */
export type JobSchedule = { kind: 'interval'; periodMs: number } | { kind: 'cron'; periodMs: number; fires: FireSchedule };

/**
 * The schedule of a method with `@Interval` or `@Cron` (a cron expression: its fires, and the
 * shortest gap among its next fire times); `undefined` for a method without such a schedule (or a
 * one-off `@Timeout`, or a cron date); `null` for a cron expression that could not be read (the
 * `cron` package not found, or too old to name past fires).
 */
export async function scheduleOf(method: object): Promise<JobSchedule | undefined | null> {
  const interval = Reflect.getMetadata(INTERVAL_OPTIONS, method) as { timeout?: unknown } | undefined;
  if (typeof interval?.timeout === 'number') return { kind: 'interval', periodMs: interval.timeout };
  const cron = Reflect.getMetadata(CRON_OPTIONS, method) as
    { cronTime?: unknown; timeZone?: string; utcOffset?: number; disabled?: boolean } | undefined;
  // A disabled job does not run on this instance: no fire of it is claimed here.
  if (typeof cron?.cronTime !== 'string' || cron.disabled === true) return undefined;
  const pkg = await loadCron();
  if (!pkg) return null;
  const time = new pkg.CronTime(cron.cronTime, cron.timeZone, cron.utcOffset);
  if (typeof time.getNextDateFrom !== 'function') return null;
  const times = time.sendAt(FIRE_TIMES).map((t) => t.toMillis());
  let periodMs = Number.POSITIVE_INFINITY;
  for (let i = 1; i < times.length; i++) periodMs = Math.min(periodMs, times[i] - times[i - 1]);
  if (!Number.isFinite(periodMs)) return undefined;
  // As the `cron` package fires it: in the schedule's zone, or at its fixed UTC offset.
  const zone = cron.utcOffset === undefined ? time.timeZone : offsetZone(cron.utcOffset);
  return { kind: 'cron', periodMs, fires: fireSchedule((fromMs) => time.getNextDateFrom(new Date(fromMs), zone).toMillis(), periodMs) };
}

/** The fires of a schedule, from `next` (the first fire strictly after a time). */
export function fireSchedule(next: (afterMs: number) => number, periodMs: number): FireSchedule {
  const lateMs = Math.min(periodMs / 2, MAX_LATE_MS);
  const earlyMs = Math.min(periodMs / 4, MAX_EARLY_MS);
  const lastBefore = (nowMs: number): number | undefined => {
    for (let windowMs = 2 * periodMs; windowMs <= 2 * MAX_LOOKBACK_MS; windowMs *= 2) {
      let fire = next(nowMs - windowMs);
      if (fire > nowMs) continue;
      for (let after = next(fire); after <= nowMs; after = next(fire)) fire = after;
      return fire;
    }
    return undefined;
  };
  return {
    periodMs,
    near(nowMs) {
      const fire = lastBefore(nowMs + earlyMs);
      return fire !== undefined && nowMs - fire < lateMs ? fire : undefined;
    },
    lastBefore,
    countBetween(fromMs, toMs) {
      let count = 0;
      for (let fire = next(fromMs); fire <= toMs && count < MAX_COUNTED; fire = next(fire)) count++;
      return count;
    },
  };
}

/** The fixed-offset zone the `cron` package uses for `utcOffset` (minutes): `UTC+02:00`. */
function offsetZone(utcOffset: number): string {
  const sign = utcOffset < 0 ? '-' : '+';
  const minutes = Math.abs(utcOffset);
  return `UTC${sign}${String(Math.trunc(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;
}

/**
 * The `cron` package `@nestjs/schedule` runs on: the copy next to `@nestjs/schedule` as this
 * library finds it (CommonJS), or as the app's directory finds it (pnpm keeps it there); else a
 * hoisted one (npm).
 */
async function loadCron(): Promise<CronPackage | undefined> {
  const from = [
    () => (typeof require === 'function' ? require.resolve('@nestjs/schedule/package.json') : undefined),
    () => createRequire(join(process.cwd(), 'package.json')).resolve('@nestjs/schedule/package.json'),
  ];
  for (const find of from) {
    try {
      const schedule = find();
      if (schedule) return createRequire(schedule)('cron') as CronPackage;
    } catch {
      // Not found from there: the next place.
    }
  }
  return loadOptionalPeer<CronPackage>('cron');
}

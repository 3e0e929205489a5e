import { createRequire } from 'node:module';
import { join } from 'node:path';
import { loadOptionalPeer } from '../utils/optional-peer';

/** Metadata keys of `@nestjs/schedule` on a job method (read as plain metadata: no import needed). */
const CRON_OPTIONS = 'SCHEDULE_CRON_OPTIONS';
const INTERVAL_OPTIONS = 'SCHEDULE_INTERVAL_OPTIONS';

/** How many upcoming cron fire times are compared to find the shortest gap. */
const FIRE_TIMES = 16;

/** The part of the `cron` package (which `@nestjs/schedule` runs on) used to read a cron expression. */
interface CronPackage {
  CronTime: new (source: string, timeZone?: string, utcOffset?: number) => { sendAt(count: number): { toMillis(): number }[] };
}

/**
 * The shortest time between two runs of a method scheduled with `@Interval` or `@Cron` (a cron
 * expression: the shortest gap among its next fire times); `undefined` for a method without such
 * a schedule (or a one-off `@Timeout`, or a cron date); `null` for a cron expression that could
 * not be read (the `cron` package not found).
 */
export async function schedulePeriodMs(method: object): Promise<number | undefined | null> {
  const interval = Reflect.getMetadata(INTERVAL_OPTIONS, method) as { timeout?: unknown } | undefined;
  if (typeof interval?.timeout === 'number') return interval.timeout;
  const cron = Reflect.getMetadata(CRON_OPTIONS, method) as { cronTime?: unknown; timeZone?: string; utcOffset?: number } | undefined;
  if (typeof cron?.cronTime !== 'string') return undefined;
  const pkg = await loadCron();
  if (!pkg) return null;
  const times = new pkg.CronTime(cron.cronTime, cron.timeZone, cron.utcOffset).sendAt(FIRE_TIMES).map((t) => t.toMillis());
  let shortest = Number.POSITIVE_INFINITY;
  for (let i = 1; i < times.length; i++) shortest = Math.min(shortest, times[i] - times[i - 1]);
  return Number.isFinite(shortest) ? shortest : undefined;
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

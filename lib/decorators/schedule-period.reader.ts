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
 * The `cron` package: found from this library when the package manager hoisted it (npm), else the
 * copy `@nestjs/schedule` itself uses, found from the app's directory (pnpm keeps it there).
 */
async function loadCron(): Promise<CronPackage | undefined> {
  const hoisted = await loadOptionalPeer<CronPackage>('cron');
  if (hoisted) return hoisted;
  try {
    const app = createRequire(join(process.cwd(), 'package.json'));
    return createRequire(app.resolve('@nestjs/schedule/package.json'))('cron') as CronPackage;
  } catch {
    return undefined;
  }
}

/**
 * The fires of a `@Cron` schedule, named by their scheduled time: the same on every instance
 * whatever its clock or time zone, found near a scheduler's call, and counted back for catch-up.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { Cron, type CronOptions, Interval } from '@nestjs/schedule';
import { fireSchedule, scheduleOf } from '../../lib/decorators/job-schedule.reader';

/** A method with `@Cron(expression, options)` metadata, as `@nestjs/schedule` leaves it. */
function cronMethod(expression: string, options: CronOptions = {}): object {
  class Job {
    @Cron(expression, options)
    run(): void {}
  }
  return Job.prototype.run;
}

describe('scheduleOf', () => {
  const tz = process.env.TZ;
  afterEach(() => {
    if (tz === undefined) delete process.env.TZ;
    else process.env.TZ = tz;
  });

  it('names the fires of a cron with a time zone the same whatever the process time zone', async () => {
    const fires: number[] = [];
    for (const zone of ['Asia/Tokyo', 'UTC', 'America/Los_Angeles']) {
      process.env.TZ = zone;
      const schedule = await scheduleOf(cronMethod('0 0 9 * * *', { timeZone: 'America/New_York' }));
      expect(schedule).toMatchObject({ kind: 'cron', periodMs: 24 * 3_600_000 });
      if (schedule?.kind !== 'cron') throw new Error('not a cron schedule');
      fires.push(schedule.fires.lastBefore(Date.UTC(2026, 10, 27, 20, 0))!);
    }
    // 9:00 in New York on 27 November 2026 is 14:00 UTC (EST), on every instance.
    expect(fires).toEqual([Date.UTC(2026, 10, 27, 14, 0), Date.UTC(2026, 10, 27, 14, 0), Date.UTC(2026, 10, 27, 14, 0)]);
  });

  it('reads a utcOffset as the cron package fires it', async () => {
    const schedule = await scheduleOf(cronMethod('0 30 8 * * *', { utcOffset: 120 }));
    if (schedule?.kind !== 'cron') throw new Error('not a cron schedule');
    expect(schedule.fires.lastBefore(Date.UTC(2026, 10, 27, 12, 0))).toBe(Date.UTC(2026, 10, 27, 6, 30));
  });

  it('reads an interval as a period without shared fires, and a method without a schedule as none', async () => {
    class Job {
      @Interval(3_000)
      every(): void {}
      plain(): void {}
    }
    expect(await scheduleOf(Job.prototype.every)).toEqual({ kind: 'interval', periodMs: 3_000 });
    expect(await scheduleOf(Job.prototype.plain)).toBeUndefined();
  });
});

describe('fireSchedule', () => {
  // Every 5 s, as a cron expression's next-fire function gives it.
  const every5 = fireSchedule((after) => (Math.floor(after / 5_000) + 1) * 5_000, 5_000);

  it('names the fire of a call near its scheduled time, on either side, and none for a call far from it', () => {
    expect(every5.near(100_000)).toBe(100_000);
    expect(every5.near(100_900)).toBe(100_000); // a busy event loop: the call came late
    expect(every5.near(102_400)).toBe(100_000); // late by almost half a period
    expect(every5.near(99_200)).toBe(100_000); // a timer's rounding, a little early
    expect(every5.near(102_500)).toBeUndefined(); // half a period after the fire: a call by hand
    expect(every5.near(103_700)).toBeUndefined();
  });

  it('finds the latest fire at or before a time, and counts the fires in a span', () => {
    expect(every5.lastBefore(100_000)).toBe(100_000);
    expect(every5.lastBefore(104_999)).toBe(100_000);
    expect(every5.countBetween(100_000, 120_000)).toBe(4); // 105, 110, 115, 120
    expect(every5.countBetween(100_000, 104_999)).toBe(0);
  });

  it('looks back across long gaps (a monthly schedule) without scanning them', () => {
    let calls = 0;
    const monthly = fireSchedule((after) => {
      calls++;
      const d = new Date(after);
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
    }, 28 * 86_400_000);
    expect(monthly.lastBefore(Date.UTC(2026, 10, 27))).toBe(Date.UTC(2026, 10, 1));
    expect(calls).toBeLessThan(20);
  });
});

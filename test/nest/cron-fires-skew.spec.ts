/**
 * Scheduled jobs across instances whose clocks disagree by more than half the period: each fire
 * is claimed by its scheduled time in the job's lock item, so it runs exactly once whatever the
 * clocks say (with the release freeing it again, a lagging instance ran it a second time).
 */
import { afterAll, afterEach, beforeAll, expect, it } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import { CronInstances, fireOf, type JobRun } from '../support/cron-app-process';
import { LockFixture } from '../support/lock-fixture';
import { describeEachServer } from '../support/servers';

const WINDOW_MS = 60_000;
/** The most any instance's clock is ahead: it fires first, this much before the scheduled time. */
const MOST_AHEAD_MS = 7_000;

describeEachServer('@Cron + @WithLock on instances with skewed clocks', { shortRunOn: 'dynalite' }, (server) => {
  const fixture = new LockFixture(server);
  let instances: CronInstances;
  beforeAll(() => fixture.setup());
  afterAll(() => fixture.close());
  afterEach(() => instances.stopAll());

  it('runs every fire of an every-5-seconds and an every-10-seconds job exactly once over 60 s, clocks at 0, +7 s and -12 s', async () => {
    instances = new CronInstances(server.endpoint, fixture.tableName);
    const jobs = [
      { name: 'every5', cron: '*/5 * * * * *', workMs: 300 },
      { name: 'every10', cron: '*/10 * * * * *', workMs: 300 },
    ];
    for (const [name, skewMs] of [
      ['P', 0],
      ['Q', MOST_AHEAD_MS],
      ['R', -12_000],
    ] as const) {
      instances.start(name, jobs, { skewMs });
    }
    await instances.allReady();
    const upAt = Date.now();
    await sleep(WINDOW_MS);
    const downAt = Date.now();
    await instances.stopAll();

    for (const [job, periodMs] of [
      ['every5', 5_000],
      ['every10', 10_000],
    ] as const) {
      const runs = instances.runs.filter((run) => run.job === job);
      // No fire ran twice, whichever instance's clock named it.
      const byFire = new Map<number, JobRun[]>();
      for (const run of runs) byFire.set(fireOf(run, periodMs), [...(byFire.get(fireOf(run, periodMs)) ?? []), run]);
      for (const [fire, ran] of byFire)
        expect({ job, fire, instances: ran.map((r) => r.instance) }).toEqual({ job, fire, instances: [expect.any(String)] });
      // None was lost: every fire the most-ahead instance was up for (it fires first) ran. Margins
      // of a second at each end for its timer and the write.
      const first = Math.ceil((upAt + MOST_AHEAD_MS + 1_000) / periodMs) * periodMs;
      const last = Math.floor((downAt + MOST_AHEAD_MS - 1_500) / periodMs) * periodMs;
      const expected: number[] = [];
      for (let fire = first; fire <= last; fire += periodMs) expected.push(fire);
      expect(expected.length).toBeGreaterThanOrEqual(WINDOW_MS / periodMs - 2);
      expect({ job, missing: expected.filter((fire) => !byFire.has(fire)) }).toEqual({ job, missing: [] });
    }
    // The lagging instance finds the fires claimed, and says so: 12 s behind, a 5 s job's fire was
    // claimed by then, and a 10 s job's next one too (so that fire is past: superseded).
    const lagging = instances.fires.filter((f) => f.instance === 'R' && f.fire.outcome === 'skipped');
    expect(lagging.length).toBeGreaterThan(0);
    expect(lagging.every((f) => f.fire.reason === 'ran-elsewhere' || f.fire.reason === 'superseded')).toBe(true);
    expect(lagging.some((f) => f.fire.key === 'every10' && f.fire.reason === 'superseded')).toBe(true);
    expect(instances.problems()).toEqual([]);
  }, 120_000);
});

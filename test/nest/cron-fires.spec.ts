/**
 * Scheduled jobs (`@Cron` + `@WithLock(..., { onBusy: 'skip' })`) in separate app processes: a
 * crashed run costs no fire beyond its lease whatever the period, a graceful stop never frees a
 * fire for a lagging instance, a run that outlasts the period makes the next fires skip, and fires
 * missed while no instance was up are reported, or run once with `catchUp: 'last'`.
 */
import { afterAll, afterEach, beforeAll, expect, it } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import { LockManager } from '../../lib';
import { CronInstances, fireOf } from '../support/cron-app-process';
import { LockFixture } from '../support/lock-fixture';
import { describeEachServer } from '../support/servers';

describeEachServer('@Cron + @WithLock fires across app processes', { shortRunOn: 'dynamodb-local' }, (server) => {
  const fixture = new LockFixture(server);
  let instances: CronInstances;
  let manager: LockManager;
  beforeAll(async () => {
    await fixture.setup();
    manager = fixture.manager();
  });
  afterAll(() => fixture.close());
  afterEach(() => instances.stopAll());

  it('runs the first fire a lease after a SIGKILLed run on a survivor, with a period ten times the lease', async () => {
    instances = new CronInstances(server.endpoint, fixture.tableName);
    const PERIOD_MS = 20_000;
    const LEASE_MS = 2_000;
    const jobs = [{ name: 'slow-report', cron: '*/20 * * * * *', workMs: 8_000 }];
    for (const name of ['K', 'L', 'M']) instances.start(name, jobs, { leaseMs: LEASE_MS });
    await instances.allReady();
    expect(await instances.until(() => instances.runs.length > 0, PERIOD_MS + 5_000)).toBe(true);
    const [crashed] = instances.runs;
    const crashedFire = fireOf(crashed, PERIOD_MS);
    // Killed 2.4 s into its run, a lease after its start: its last heartbeat was about 0.7 s before.
    await sleep(Math.max(0, 2_400 - (Date.now() - crashed.at)));
    await instances.stop(crashed.instance, 'SIGKILL');
    const next = crashedFire + PERIOD_MS;
    expect(await instances.until(() => instances.runs.some((run) => fireOf(run, PERIOD_MS) === next), next - Date.now() + 5_000)).toBe(
      true,
    );
    await sleep(1_000);
    const runs = instances.runs.filter((run) => fireOf(run, PERIOD_MS) === next);
    expect(runs).toHaveLength(1);
    expect(runs[0].instance).not.toBe(crashed.instance);
    // A survivor watched the dead run (two reads a lease) and passed it: its fire is recorded lost.
    const lost = instances.fires.filter((f) => f.fire.outcome === 'lost');
    expect(lost).toHaveLength(1);
    expect(lost[0].fire).toMatchObject({ scheduledAt: crashedFire, by: `instance-${crashed.instance}` });
    const last = await manager.lastFire('slow-report');
    expect(last).toMatchObject({ scheduledAt: new Date(next), outcome: 'running' });
    expect(instances.problems()).toEqual([]);
  }, 90_000);

  it('a graceful stop right after a run does not free its fire for an instance whose clock lags', async () => {
    instances = new CronInstances(server.endpoint, fixture.tableName);
    const PERIOD_MS = 10_000;
    const jobs = [{ name: 'tidy', cron: '*/10 * * * * *', workMs: 100 }];
    instances.start('A', jobs);
    instances.start('B', jobs, { skewMs: -3_000 });
    await instances.allReady();
    expect(await instances.until(() => instances.runs.some((run) => run.instance === 'A'), PERIOD_MS + 5_000)).toBe(true);
    const fire = fireOf(
      instances.runs.find((run) => run.instance === 'A')!,
      PERIOD_MS,
    );
    // A stops (SIGTERM, shutdown hooks on) as soon as its run is done: its lock is released.
    await sleep(300);
    await instances.stop('A', 'SIGTERM');
    // B fires the same tick 3 s later by the real clock, finds it claimed, and the next one is its own.
    const next = fire + PERIOD_MS;
    expect(await instances.until(() => instances.runs.some((run) => fireOf(run, PERIOD_MS) === next), 3_000 + PERIOD_MS + 5_000)).toBe(
      true,
    );
    expect(instances.runs.filter((run) => fireOf(run, PERIOD_MS) === fire).map((run) => run.instance)).toEqual(['A']);
    expect(instances.runs.filter((run) => fireOf(run, PERIOD_MS) === next).map((run) => run.instance)).toEqual(['B']);
    expect(instances.fires).toContainEqual({
      instance: 'B',
      fire: expect.objectContaining({ scheduledAt: fire, outcome: 'skipped', reason: 'ran-elsewhere', by: 'instance-A' }),
    });
    expect(instances.problems()).toEqual([]);
  }, 60_000);

  it('skips every fire while the previous run still holds the job, on every instance, and says why', async () => {
    instances = new CronInstances(server.endpoint, fixture.tableName);
    const PERIOD_MS = 2_000;
    const jobs = [{ name: 'long-run', cron: '*/2 * * * * *', workMs: 5_000 }];
    instances.start('X', jobs);
    instances.start('Y', jobs);
    await instances.allReady();
    expect(await instances.until(() => instances.runs.length >= 2, 20_000)).toBe(true);
    await instances.stopAll();
    const [first, second] = instances.runs;
    // The second run started once the first had ended (5 s), never in parallel.
    expect(second.at - first.at).toBeGreaterThanOrEqual(5_000 - 100);
    const skipped = instances.fires.filter((f) => f.fire.outcome === 'skipped' && f.fire.scheduledAt > fireOf(first, PERIOD_MS));
    const during = skipped.filter((f) => f.fire.scheduledAt < fireOf(second, PERIOD_MS));
    // Two fires came during the first run; each instance skipped each (or found it claimed by none).
    expect(during.length).toBeGreaterThanOrEqual(2);
    expect(during.every((f) => f.fire.reason === 'previous-run')).toBe(true);
    expect(new Set(during.map((f) => f.instance))).toEqual(new Set(['X', 'Y']));
    expect(instances.problems()).toEqual([]);
  }, 60_000);

  it('reports fires missed while no instance was up, and runs the last one once with catchUp: last', async () => {
    instances = new CronInstances(server.endpoint, fixture.tableName);
    const PERIOD_MS = 10_000;
    const job = { name: 'digest', cron: '*/10 * * * * *', workMs: 50 };
    instances.start('first', [job]);
    await instances.allReady();
    expect(await instances.until(() => instances.runs.length > 0, PERIOD_MS + 5_000)).toBe(true);
    await instances.stop('first', 'SIGTERM');
    const stoppedAt = Date.now();
    // No instance up for a few fires; then one without catch-up: it reports them, runs none of them.
    // Fires of the last half period before a start may still be running elsewhere: not counted.
    await sleep(2 * PERIOD_MS + 500);
    instances.start('plain', [job]);
    await instances.allReady();
    const plainUpAt = Date.now();
    expect(await instances.until(() => instances.fires.some((f) => f.fire.outcome === 'missed'), 5_000)).toBe(true);
    const missed = instances.fires.find((f) => f.fire.outcome === 'missed')!;
    expect(missed.instance).toBe('plain');
    expect(missed.fire.count).toBeGreaterThanOrEqual(1);
    expect(missed.fire.scheduledAt).toBeGreaterThan(stoppedAt);
    expect(instances.runs.filter((run) => run.instance === 'plain' && run.at < plainUpAt - 100)).toEqual([]);
    await instances.stop('plain', 'SIGTERM');
    // Nobody up again; then two instances with catchUp: 'last' start together, just after a fire
    // (a later fire that runs first makes the catch-up moot: its claim only takes an earlier one
    // while no later one was claimed): the last missed fire runs once.
    await sleep(PERIOD_MS + 500);
    while (Date.now() % PERIOD_MS > 200) await sleep(20);
    const catching = { ...job, catchUp: 'last' as const };
    const startedAt = Date.now();
    instances.start('C', [catching]);
    instances.start('D', [catching]);
    await instances.allReady();
    // A catch-up run is for a fire from before the start: exactly one, on C or D.
    const caughtUp = () =>
      instances.fires.filter((f) => ['C', 'D'].includes(f.instance) && f.fire.outcome === 'ran' && f.fire.scheduledAt < startedAt);
    const state = () => JSON.stringify({ startedAt, fires: instances.fires, runs: instances.runs, logs: instances.logs.slice(-20) });
    expect((await instances.until(() => caughtUp().length > 0, 8_000)) || state()).toBe(true);
    await sleep(1_000);
    expect(caughtUp()).toHaveLength(1);
    expect(caughtUp()[0].fire.scheduledAt).toBeGreaterThan(startedAt - PERIOD_MS - 300);
    expect(instances.problems()).toEqual([]);
  }, 120_000);
});

/**
 * `dynamo-lock inspect` on a scheduled job's key: the last fire claimed (scheduled time, the
 * instance that ran it, start, end, outcome), while its run holds the lock and after its release.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { LockFixture } from '../support/lock-fixture';
import { describeEachServer } from '../support/servers';
import { Cli } from './support/cli-process';

describeEachServer('dynamo-lock inspect: the last fire of a scheduled job', (server) => {
  const fixture = new LockFixture(server);
  let cli: Cli;
  beforeAll(async () => {
    await fixture.setup();
    cli = new Cli(server, ['--table', fixture.tableName]);
  });
  afterAll(() => fixture.close());

  it('shows the fire with its run while held, and after the release, in text and JSON', async () => {
    const manager = fixture.manager({ ownerName: 'instance-a' });
    const fire = new Date('2026-11-27T03:00:00.000Z');
    const lock = (await manager.tryAcquire('nightly', { fireTime: fire }))!;
    expect(lock).not.toBeNull();

    const held = await cli.run(['inspect', 'nightly']);
    expect(held.code).toBe(0);
    expect(held.stdout).toMatch(/^Last fire: +2026-11-27T03:00:00\.000Z \(/m);
    expect(held.stdout).toMatch(/^Ran on: +instance-a$/m);
    expect(held.stdout).toMatch(/^Outcome: +running$/m);
    const json = JSON.parse((await cli.run(['inspect', 'nightly', '--json'])).stdout) as Record<string, unknown>;
    expect(json.lastFire).toEqual({
      scheduledAt: fire.toISOString(),
      owner: 'instance-a',
      startedAt: expect.any(String),
      outcome: 'running',
    });

    await lock.release();
    const free = await cli.run(['inspect', 'nightly']);
    expect(free.code).toBe(0);
    expect(free.stdout).toMatch(/^Lock "nightly" is free\.$/m);
    expect(free.stdout).toMatch(/^Last fire: +2026-11-27T03:00:00\.000Z \(/m);
    expect(free.stdout).toMatch(/^Ended: +\d{4}-/m);
    expect(free.stdout).toMatch(/^Outcome: +done$/m);
    // A key that no job ever claimed shows no fire.
    expect((await cli.run(['inspect', 'never-claimed'])).stdout).toBe('Lock "never-claimed" is free.\n');
  });
});

/**
 * Scheduled jobs in one process, on the memory store (`forTesting()`): each fire claimed by its
 * scheduled time, the `fire` events, and the mistakes in a job's configuration that fail the boot
 * naming the method.
 */
import { describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { Cron, Interval, ScheduleModule } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import {
  DynamoLockModule,
  type LockEvent,
  LockConfigurationError,
  LockService,
  LockValidationError,
  MemoryLockStore,
  WithLock,
} from '../../lib';

/** Boots a testing module with `providers`, on `store`; returns it and the events of its locks. */
async function boot(providers: unknown[], store = new MemoryLockStore(), ownerName = 'instance') {
  const events: LockEvent[] = [];
  const moduleRef = await Test.createTestingModule({
    imports: [ScheduleModule.forRoot(), DynamoLockModule.forTesting({ store, ownerName, onEvent: (event) => events.push(event) })],
    providers: providers as never[],
  }).compile();
  await moduleRef.init();
  return { moduleRef, events, locks: moduleRef.get(LockService) };
}

describe('@Cron + @WithLock fire claims (memory store)', () => {
  it('runs each fire once for two instances on one memory store, the other skipping it as ran elsewhere', async () => {
    const runs: { instance: string; at: number }[] = [];
    const make = (instance: string) => {
      @Injectable()
      class Report {
        @Cron('*/2 * * * * *')
        @WithLock('report', { onBusy: 'skip' })
        async run(): Promise<void> {
          runs.push({ instance, at: Date.now() });
        }
      }
      return Report;
    };
    const store = new MemoryLockStore();
    const a = await boot([make('a')], store, 'a');
    const b = await boot([make('b')], store, 'b');
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    await a.moduleRef.close();
    await b.moduleRef.close();
    const fires = runs.map((run) => Math.round(run.at / 2_000));
    expect(runs.length).toBeGreaterThanOrEqual(2);
    expect(new Set(fires).size).toBe(fires.length);
    const events = [...a.events, ...b.events].filter((e): e is Extract<LockEvent, { type: 'fire' }> => e.type === 'fire');
    expect(events.filter((e) => e.outcome === 'ran')).toHaveLength(runs.length);
    const skipped = events.filter((e) => e.outcome === 'skipped');
    expect(skipped.length).toBeGreaterThanOrEqual(runs.length - 1);
    expect(skipped.every((e) => e.reason === 'ran-elsewhere' && e.scheduledAt.getTime() % 2_000 === 0)).toBe(true);
    // The item keeps the last fire after the release: another instance reads it.
    const c = await boot([], store, 'c');
    expect(await c.locks.lastFire('report')).toMatchObject({ outcome: 'done', owner: expect.stringMatching(/^[ab]$/) });
    await c.moduleRef.close();
  }, 20_000);

  it('fails the boot naming the method: a lease that reaches the period, catch-up without a cron or with a key that takes arguments', async () => {
    @Injectable()
    class LongLease {
      @Cron('*/2 * * * * *')
      @WithLock('long-lease', { onBusy: 'skip', leaseDuration: '3s' })
      async tick(): Promise<void> {}
    }
    @Injectable()
    class IntervalCatchUp {
      @Interval(5_000)
      @WithLock('interval-catch-up', { onBusy: 'skip', catchUp: 'last' })
      async tick(): Promise<void> {}
    }
    @Injectable()
    class WaitingCatchUp {
      @Cron('*/5 * * * * *')
      @WithLock('waiting-catch-up', { catchUp: 'last' })
      async tick(): Promise<void> {}
    }
    @Injectable()
    class ArgumentCatchUp {
      @Cron('*/5 * * * * *')
      @WithLock('tenant-<0>', { onBusy: 'skip', catchUp: 'last' })
      async tick(tenant?: string): Promise<void> {
        void tenant;
      }
    }
    for (const [job, pattern] of [
      [LongLease, /LongLease\.tick: leaseDuration \(3000 ms\) reaches the period of its @Cron schedule \(2000 ms\)/],
      [IntervalCatchUp, /IntervalCatchUp\.tick: catchUp needs a @Cron schedule and onBusy: 'skip'/],
      [WaitingCatchUp, /WaitingCatchUp\.tick: catchUp needs a @Cron schedule and onBusy: 'skip'/],
      [ArgumentCatchUp, /ArgumentCatchUp\.tick: catchUp needs a key that takes no argument, .*"tenant-<0>"/],
    ] as const) {
      const moduleRef = await Test.createTestingModule({
        imports: [ScheduleModule.forRoot(), DynamoLockModule.forTesting()],
        providers: [job],
      }).compile();
      const init = moduleRef.init();
      await expect(init).rejects.toThrow(LockConfigurationError);
      await expect(init).rejects.toThrow(pattern);
      await moduleRef.close();
    }
  });

  it('rejects a catchUp that is neither none nor last when the class is defined', () => {
    expect(() => {
      class Job {
        @WithLock('x', { onBusy: 'skip', catchUp: 'all' as never })
        async tick(): Promise<void> {}
      }
      return Job;
    }).toThrow(LockValidationError);
  });
});

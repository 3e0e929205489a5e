/**
 * `@WhenLeader` on app instances that share one in-memory store (`DynamoLockModule.forTesting()`):
 * exactly one instance runs the method, the others skip it without a single store request; either
 * decorator order with `@Cron`/`@Interval`; campaigns start at bootstrap and hand over at shutdown;
 * bad input fails at class definition or at boot.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { type DynamicModule, type INestApplicationContext, Injectable, Module, type Type } from '@nestjs/common';
import { Cron, Interval, ScheduleModule } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { setTimeout as sleep } from 'node:timers/promises';
import { isObservable, lastValueFrom, Observable, of, toArray } from 'rxjs';
import {
  DynamoLockModule,
  LockManager,
  type LockItemStore,
  LockService,
  LockValidationError,
  MemoryLockStore,
  WhenLeader,
} from '../../lib';
import { customStores, memoryStoresOf } from '../support/custom-stores';
import { MemoryLogger } from '../support/lock-fixture';
import { rejectionOf } from '../support/rejection';

/** A memory store that counts the requests made of it. */
function countingStore(): { store: LockItemStore; count: () => number } {
  const inner = memoryStoresOf(new MemoryLockStore());
  let requests = 0;
  const mutex = new Proxy(inner.mutex, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        requests++;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store: customStores(mutex, inner.semaphore), count: () => requests };
}

const apps: INestApplicationContext[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()));
});

async function start(
  provider: Type,
  store: LockItemStore,
  owner: string,
  imports: (Type | DynamicModule)[] = [],
): Promise<INestApplicationContext> {
  @Module({
    imports: [...imports, DynamoLockModule.forTesting({ store, ownerName: owner, leaseDuration: '2s', logger: new MemoryLogger() })],
    providers: [provider],
  })
  class AppModule {}
  const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
  apps.push(moduleRef);
  return moduleRef.init();
}

@Injectable()
class Reports {
  runs = 0;
  tokens: number[] = [];
  constructor(private readonly locks: LockService) {}

  @WhenLeader('reports', { watchInterval: '100ms' })
  async send(): Promise<string | undefined> {
    this.runs++;
    this.tokens.push(this.locks.current('reports')!.fencingToken);
    return 'sent';
  }

  @WhenLeader('reports')
  count(): number | undefined {
    return this.runs;
  }
}

@Injectable()
class Feed {
  @WhenLeader('feed', { watchInterval: '100ms' })
  stream(): Observable<number | undefined> {
    return of(1, 2);
  }
}

@Injectable()
class UndeclaredFeed {
  // No annotation: the result type is inferred, so the metadata has no declared result.
  @WhenLeader('undeclared-feed', { watchInterval: '100ms' })
  stream() {
    return of(1, 2, undefined);
  }
}

describe('@WhenLeader on instances sharing one store', () => {
  it('runs on exactly one instance; the others skip without any store request', async () => {
    const { store, count } = countingStore();
    const instances = await Promise.all(['A', 'B', 'C'].map((owner) => start(Reports, store, owner)));
    const services = instances.map((app) => app.get(Reports));
    const locks = instances.map((app) => app.get(LockService));
    // Campaigns started at bootstrap: a leader is elected without any call of the method.
    await Promise.race(locks.map((l) => l.lead('reports').whenLeader()));
    const leader = locks.findIndex((l) => l.lead('reports').isLeader);
    expect(locks.filter((l) => l.lead('reports').isLeader)).toHaveLength(1);

    const before = count();
    const results = [];
    for (let tick = 0; tick < 100; tick++) results.push(await Promise.all(services.map((s) => s.send())));
    // No request per tick: only the local state of the campaign is read.
    expect(count() - before).toBe(0);
    for (const tick of results) expect(tick.filter((r) => r === 'sent')).toHaveLength(1);
    expect(services.map((s) => s.runs)).toEqual(services.map((_, i) => (i === leader ? 100 : 0)));
    // The method runs holding the leader's lock; a follower's async call resolves to undefined.
    expect(new Set(services[leader].tokens)).toEqual(new Set([locks[leader].lead('reports').lock!.fencingToken]));
    expect(services.map((s) => s.count())).toEqual(services.map((_, i) => (i === leader ? 100 : undefined)));
    await expect(services[(leader + 1) % 3].send()).resolves.toBeUndefined();
  });

  it("a follower's call of an Observable method returns an Observable that emits undefined and completes, as @WithLock's skip does", async () => {
    const store = new MemoryLockStore();
    const instances = await Promise.all(['A', 'B'].map((owner) => start(Feed, store, owner)));
    const locks = instances.map((app) => app.get(LockService));
    await Promise.race(locks.map((l) => l.lead('feed').whenLeader()));
    const leader = locks.findIndex((l) => l.lead('feed').isLeader);
    const results = instances.map((app) => app.get(Feed).stream());
    expect(results.map((result) => isObservable(result))).toEqual([true, true]);
    const emitted = await Promise.all(results.map((result) => lastValueFrom(result.pipe(toArray()))));
    expect(emitted).toEqual(instances.map((_, i) => (i === leader ? [1, 2] : [undefined])));
  });

  it("on the leader, an Observable from a method whose declared result could not be read throws, as @WithLock does (a follower's call returns undefined)", async () => {
    const store = new MemoryLockStore();
    const instances = await Promise.all(['A', 'B'].map((owner) => start(UndeclaredFeed, store, owner)));
    const locks = instances.map((app) => app.get(LockService));
    await Promise.race(locks.map((l) => l.lead('undeclared-feed').whenLeader()));
    const leader = locks.findIndex((l) => l.lead('undeclared-feed').isLeader);
    expect(() => instances[leader]!.get(UndeclaredFeed).stream()).toThrow(LockValidationError);
    expect(() => instances[leader]!.get(UndeclaredFeed).stream()).toThrow(
      /@WhenLeader on UndeclaredFeed\.stream: the method returned an Observable, but its declared result could not be read/,
    );
    expect(instances[1 - leader]!.get(UndeclaredFeed).stream()).toBeUndefined();
  });

  it('hands over within one watch interval when the leading app closes, and the campaign ends with the app', async () => {
    const { store } = countingStore();
    const instances = await Promise.all(['A', 'B'].map((owner) => start(Reports, store, owner)));
    const leaderships = instances.map((app) => app.get(LockService).lead('reports'));
    await Promise.race(leaderships.map((l) => l.whenLeader()));
    const leader = leaderships.findIndex((l) => l.isLeader);
    const follower = 1 - leader;
    const closedAt = performance.now();
    await instances[leader].close();
    expect(leaderships[leader].resigned).toBe(true);
    expect(leaderships[leader].isLeader).toBe(false);
    await leaderships[follower].whenLeader();
    // watchInterval 100 ms: without the release the follower would wait for the 2 s lease.
    expect(performance.now() - closedAt).toBeLessThan(1_000);
    await expect(instances[follower].get(Reports).send()).resolves.toBe('sent');
    // A call after shutdown is skipped quietly.
    await expect(instances[leader].get(Reports).send()).resolves.toBeUndefined();
  });

  it('works under @Cron and @Interval in either order: only the leader runs scheduled ticks', async () => {
    const runs = new Map<string, number>();
    const makeJob = (owner: string) => {
      @Injectable()
      class Job {
        @Interval(40)
        @WhenLeader('jobs')
        async fast(): Promise<void> {
          runs.set(`${owner}:fast`, (runs.get(`${owner}:fast`) ?? 0) + 1);
        }

        @WhenLeader('jobs')
        @Interval(40)
        async other(): Promise<void> {
          runs.set(`${owner}:other`, (runs.get(`${owner}:other`) ?? 0) + 1);
        }

        @WhenLeader('jobs')
        @Cron('* * * * * *')
        async cron(): Promise<void> {}
      }
      return Job;
    };
    const jobs = ['A', 'B'].map(makeJob);
    // The schedule's metadata is on the wrapper in both orders.
    expect(Reflect.getMetadata('SCHEDULE_INTERVAL_OPTIONS', jobs[0].prototype.fast)).toBeDefined();
    expect(Reflect.getMetadata('SCHEDULE_INTERVAL_OPTIONS', jobs[0].prototype.other)).toBeDefined();
    expect(Reflect.getMetadata('SCHEDULE_CRON_OPTIONS', jobs[0].prototype.cron)).toBeDefined();
    const { store, count } = countingStore();
    const instances = await Promise.all(['A', 'B'].map((owner, i) => start(jobs[i], store, owner, [ScheduleModule.forRoot()])));
    const leaderships = instances.map((app) => app.get(LockService).lead('jobs'));
    await Promise.race(leaderships.map((l) => l.whenLeader()));
    const leader = ['A', 'B'][leaderships.findIndex((l) => l.isLeader)];
    const follower = leader === 'A' ? 'B' : 'A';
    const before = count();
    await sleep(500);
    // About 12 ticks each; a 2 s lease and 667 ms watch interval make at most a few requests.
    expect(count() - before).toBeLessThanOrEqual(4);
    expect(runs.get(`${leader}:fast`)).toBeGreaterThanOrEqual(3);
    expect(runs.get(`${leader}:other`)).toBeGreaterThanOrEqual(3);
    expect(runs.get(`${follower}:fast`)).toBeUndefined();
    expect(runs.get(`${follower}:other`)).toBeUndefined();
  });

  it('fails at class definition for an empty name or bad options, naming the method', () => {
    const define = (name: string, options?: object) => () => {
      class Job {
        @WhenLeader(name, options)
        async run(): Promise<void> {}
      }
      return Job;
    };
    expect(define('')).toThrow(LockValidationError);
    expect(define('')).toThrow(/@WhenLeader on Job\.run: Lock key must be a non-empty string/);
    expect(define('x', { watchInterval: 'soon' })).toThrow(/@WhenLeader on Job\.run: watchInterval must be a positive duration/);
    expect(define('x', { leaseDuration: '1s', watchInterval: '2s' })).toThrow(
      /watchInterval \(2000 ms\) must not be longer than the lease/,
    );
    expect(define('x', { leaseDuraton: '1s' })).toThrow(/lead\(\) has no option "leaseDuraton"; did you mean "leaseDuration"/);
  });

  it('fails the boot, naming the class and method, when no DynamoLockModule is imported', async () => {
    @Injectable()
    class Lonely {
      @WhenLeader('lonely')
      async run(): Promise<void> {}
    }
    @Module({ providers: [Lonely] })
    class NoLockModule {}
    const moduleRef = await Test.createTestingModule({ imports: [NoLockModule] }).compile();
    const error = await rejectionOf(moduleRef.init());
    expect(String(error)).toContain('Lonely.run uses @WhenLeader, but no LockService is available to it. Import DynamoLockModule');
    await moduleRef.close();
  });

  it('fails the boot when two methods ask for one leadership with different options', async () => {
    @Injectable()
    class Conflicting {
      @WhenLeader('shared', { leaseDuration: '5s' })
      async one(): Promise<void> {}

      @WhenLeader('shared', { leaseDuration: '9s' })
      async two(): Promise<void> {}
    }
    const error = await rejectionOf(start(Conflicting, new MemoryLockStore(), 'A'));
    expect(String(error)).toContain(`lead('shared'): this process already campaigns for "shared" with another leaseDuration`);
  });
});

describe('lead() on the in-memory store, as on DynamoDB', () => {
  it('replaces a silent leader one lease after its last heartbeat, never earlier; the old one campaigns on', async () => {
    const shared = new MemoryLockStore();
    let cut = false;
    // The first manager's view of the store, which a test can cut off (a network partition).
    const partitioned = new Proxy(memoryStoresOf(shared).mutex, {
      get(target, property, receiver) {
        const value: unknown = Reflect.get(target, property, receiver);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) =>
          cut ? Promise.reject(new Error('network down')) : (value as (...a: unknown[]) => unknown).apply(target, args);
      },
    });
    const options = { leaseDuration: 600, logger: new MemoryLogger() };
    const a = new LockManager({ ...options, store: customStores(partitioned, memoryStoresOf(shared).semaphore), ownerName: 'a' });
    const b = new LockManager({ ...options, store: shared, ownerName: 'b' });
    try {
      const first = a.lead('memory', { watchInterval: 100 });
      const firstLock = await first.whenLeader();
      const second = b.lead('memory', { watchInterval: 100 });
      await sleep(300);
      expect(second.isLeader).toBe(false);
      let overlap = false;
      second.onElected(() => (overlap ||= first.isLeader));
      cut = true;
      const cutAt = performance.now();
      const lock = await second.whenLeader();
      const tookMs = performance.now() - cutAt;
      // Heartbeats every 200 ms: the last one was at most that long before the cut.
      expect(tookMs).toBeGreaterThanOrEqual(600 - 200 - 30);
      expect(tookMs).toBeLessThan(600 + 100 + 1_000);
      expect(overlap).toBe(false);
      expect(lock.fencingToken).toBeGreaterThan(firstLock.fencingToken);
      cut = false;
      await sleep(300);
      expect(first.isLeader).toBe(false);
      expect(first.resigned).toBe(false);
      await second.resign();
      await expect(first.whenLeader()).resolves.toMatchObject({ key: 'memory' });
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});

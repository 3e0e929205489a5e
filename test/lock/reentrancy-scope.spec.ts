import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { Injectable, type Type } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { setTimeout as sleep } from 'node:timers/promises';
import { DynamoLockModule, LockBusyError, LockLostError, LockService, WithLock, type Lock } from '../../lib';
import { LockFixture } from '../support/lock-fixture';
import { describeEachServer } from '../support/servers';

let keySeq = 0;
const newKey = (name: string) => `${name}-${++keySeq}`;

/** What detached work started inside a lock saw when it ran after the release. */
interface Seen {
  current: Lock | undefined;
  isHeld: boolean;
  aborted: boolean;
  reason: unknown;
}

describeEachServer('Re-entrancy never outlives the lock', (server) => {
  const fixture = new LockFixture(server);
  beforeAll(() => fixture.setup());
  afterAll(() => fixture.close());

  /** Boots a Nest module with `DynamoLockModule` and `provider`, runs `use` on the provider, closes it. */
  async function withInstance<T>(provider: Type<T>, use: (instance: T) => Promise<void>): Promise<void> {
    const moduleRef = await Test.createTestingModule({
      imports: [DynamoLockModule.forRoot(fixture.moduleOptions())],
      providers: [provider],
    }).compile();
    await moduleRef.init();
    try {
      await use(moduleRef.get(provider));
    } finally {
      await moduleRef.close();
    }
  }

  it('a timer started inside withLock sees no lock after the release, and its withLock goes to DynamoDB', async () => {
    const manager = fixture.manager({ ownerName: 'one' });
    const other = fixture.manager({ ownerName: 'two' });
    const key = newKey('timer');
    let seen: Seen | undefined;
    let innerRan = false;
    let inner: Promise<unknown> | undefined;
    let entered: () => void = () => undefined;
    const holding = new Promise<void>((resolve) => (entered = resolve));
    const taken: { lock?: Lock } = {};
    const fired = new Promise<void>((resolve) => {
      void manager.withLock(key, (lock) => {
        entered();
        // The timer (and the timers it starts, in its async context) looks once the other instance
        // holds the key. The test used to wait fixed times (50 ms for the first lock, 150 ms for the
        // other's): under load the first acquisition took longer than 50 ms, the other instance took
        // the key first, and the test hung until its timeout.
        setTimeout(function look() {
          if (!taken.lock) return void setTimeout(look, 10);
          seen = { current: manager.current(key), isHeld: lock.isHeld, aborted: lock.signal.aborted, reason: lock.signal.reason };
          inner = manager
            .withLock(
              key,
              () => {
                innerRan = true;
              },
              { wait: false },
            )
            .catch((error: unknown) => error);
          resolve();
        }, 10);
      });
    });
    // Another instance takes the key once it is free.
    await holding;
    taken.lock = await other.acquire(key, { wait: '10s' });
    await fired;
    expect(seen?.current).toBeUndefined();
    expect(seen?.isHeld).toBe(false);
    expect(seen?.aborted).toBe(true);
    expect(seen?.reason).toBeInstanceOf(LockLostError);
    expect((seen?.reason as LockLostError).reason).toBe('released');
    expect(await inner).toBeInstanceOf(LockBusyError);
    expect(innerRan).toBe(false);
    await taken.lock.release();
  });

  it('a nested handle looks neither held nor valid after the outer lock was released', async () => {
    const manager = fixture.manager();
    const key = newKey('nested');
    let nested: Lock | undefined;
    await manager.withLock(key, () =>
      manager.withLock(key, (lock) => {
        nested = lock;
        expect(lock.isReentrant).toBe(true);
      }),
    );
    expect(nested?.isHeld).toBe(false);
    expect(nested?.signal.aborted).toBe(true);
    expect((nested?.signal.reason as LockLostError).reason).toBe('released');
    expect(manager.current()).toBeUndefined();
  });

  it('current() without a key skips a released inner lock and returns the still-held outer one', async () => {
    const manager = fixture.manager();
    const outerKey = newKey('outer');
    const innerKey = newKey('inner');
    let seenInnermost: Lock | undefined;
    await manager.withLock(outerKey, async (outer) => {
      let timer: Promise<void> | undefined;
      await manager.withLock(innerKey, () => {
        timer = sleep(50).then(() => {
          seenInnermost = manager.current();
        });
      });
      await timer;
      expect(seenInnermost).toBe(outer);
    });
  });

  it('@WithLock with holdAtLeast: work a nested (re-entrant) call left running does not see the lock either', async () => {
    const key = newKey('hold-at-least-nested');
    const seen: (Lock | undefined)[] = [];

    @Injectable()
    class NestedJob {
      constructor(readonly locks: LockService) {}

      @WithLock(key, { onBusy: 'skip', holdAtLeast: '1s' })
      async run(): Promise<void> {
        await this.step();
      }

      @WithLock(key)
      async step(): Promise<void> {
        expect(this.locks.current(key)?.isReentrant).toBe(true);
        setTimeout(() => seen.push(this.locks.current(key)), 100);
      }
    }

    await withInstance(NestedJob, async (job) => {
      await job.run();
      await sleep(300);
      expect(seen).toEqual([undefined]);
    });
  });

  it('@WithLock with holdAtLeast: work the method left running does not join the lock while it is still held', async () => {
    const key = newKey('hold-at-least');
    const calls: { inner: boolean; current: Lock | undefined }[] = [];
    const innerResults: unknown[] = [];

    @Injectable()
    class Job {
      constructor(readonly locks: LockService) {}

      @WithLock(key, { onBusy: 'skip', holdAtLeast: '1s' })
      async run(): Promise<void> {
        setTimeout(() => {
          calls.push({ inner: false, current: this.locks.current(key) });
          innerResults.push(this.step().catch((error: unknown) => error));
        }, 100);
      }

      @WithLock(key, { wait: false })
      async step(): Promise<string> {
        calls.push({ inner: true, current: this.locks.current(key) });
        return 'ran';
      }
    }

    await withInstance(Job, async (job) => {
      await job.run();
      await sleep(300);
      expect(calls).toEqual([{ inner: false, current: undefined }]);
      const [result] = await Promise.all(innerResults);
      expect(result).toBeInstanceOf(LockBusyError);
    });
  });
});

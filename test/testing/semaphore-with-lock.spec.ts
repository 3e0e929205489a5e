/**
 * `@WithLock(template, { limit })` in a Nest application on `DynamoLockModule.forTesting()` (the
 * memory store, no server): at most `limit` calls of a key run at once, across two application
 * instances sharing one store; a bad limit fails when the class is defined.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { setTimeout as sleep } from 'node:timers/promises';
import { DynamoLockModule, LockService, LockValidationError, MemoryLockStore, WithLock } from '../../lib';
import { memoryStoresOf } from '../support/custom-stores';

/** Counts the calls inside, per key, across instances. */
const inside = new Map<string, number>();
let most = 0;

@Injectable()
class EncoderService {
  constructor(readonly locks: LockService) {}

  @WithLock('encoder-<0>', { limit: 2, wait: '20s' })
  async encode(pool: string): Promise<number> {
    const now = (inside.get(pool) ?? 0) + 1;
    inside.set(pool, now);
    most = Math.max(most, now);
    const token = this.locks.current()!.fencingToken;
    await sleep(20);
    inside.set(pool, (inside.get(pool) ?? 1) - 1);
    return token;
  }

  @WithLock('report', { limit: 1, onBusy: 'skip' })
  async report(ms: number): Promise<string | undefined> {
    await sleep(ms);
    return 'done';
  }
}

describe('@WithLock with a limit (forTesting)', () => {
  const store = new MemoryLockStore();
  const apps: TestingModule[] = [];
  let services: EncoderService[];

  beforeAll(async () => {
    for (let i = 0; i < 2; i++) {
      apps.push(
        await Test.createTestingModule({
          imports: [DynamoLockModule.forTesting({ store, ownerName: `app-${i}` })],
          providers: [EncoderService],
        }).compile(),
      );
    }
    services = apps.map((app) => app.get(EncoderService));
  });
  afterAll(() => Promise.all(apps.map((app) => app.close())));

  it('runs at most `limit` calls of a key at once across instances; each call gets its own fencing token', async () => {
    const calls = services.flatMap((service) => Array.from({ length: 6 }, () => service.encode('pool')));
    const tokens = await Promise.all(calls);
    expect(most).toBe(2);
    expect(new Set(tokens).size).toBe(12);
    expect(memoryStoresOf(store).semaphore.size).toBe(1);
  });

  it("onBusy: 'skip' skips a call when every slot is taken", async () => {
    const first = services[0]!.report(200);
    await sleep(50);
    expect(await services[1]!.report(0)).toBeUndefined();
    expect(await first).toBe('done');
  });

  it('a bad limit fails when the class is defined, naming the method', () => {
    const define = (limit: number) => {
      class Bad {
        @WithLock('x', { limit })
        async run(): Promise<void> {}
      }
      return Bad;
    };
    expect(() => define(0)).toThrow(LockValidationError);
    expect(() => define(40)).toThrow(/@WithLock on Bad.run option "limit" must be a whole number from 1 to 32/);
  });
});

/**
 * `@WithLock([...templates])` in Nest applications on `DynamoLockModule.forTesting()` (the memory
 * store): a multi-key lock per call, keys in any order never deadlock, no two calls overlap on an
 * account; bad templates and options fail when the class is defined.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { setTimeout as sleep } from 'node:timers/promises';
import { DynamoLockModule, LockService, LockValidationError, MemoryLockStore, WithLock } from '../../lib';

const balances = new Map<string, number>([
  ['a1', 100],
  ['a2', 100],
  ['a3', 100],
]);
const inside = new Map<string, number>();
let overlaps = 0;

@Injectable()
class BankService {
  constructor(readonly locks: LockService) {}

  @WithLock(['account-<0>', 'account-<1>'], { wait: '20s' })
  async transfer(from: string, to: string, amount: number): Promise<string[]> {
    const keys = this.locks.current()!.keys;
    for (const id of [from, to]) {
      inside.set(id, (inside.get(id) ?? 0) + 1);
      if (inside.get(id)! > 1) overlaps++;
      expect(this.locks.current(`account-${id}`)?.isHeld).toBe(true);
    }
    const [fromBalance, toBalance] = [balances.get(from)!, balances.get(to)!];
    await sleep(2);
    balances.set(from, fromBalance - amount);
    balances.set(to, toBalance + amount);
    for (const id of [from, to]) inside.set(id, inside.get(id)! - 1);
    return [...keys];
  }

  @WithLock(['account-<0>', 'account-<1>'], { onBusy: 'skip' })
  async audit(a: string, b: string): Promise<string | undefined> {
    return `${a}+${b}`;
  }
}

describe('@WithLock with an array of key templates (forTesting)', () => {
  const store = new MemoryLockStore();
  const apps: TestingModule[] = [];
  let services: BankService[];

  beforeAll(async () => {
    for (let i = 0; i < 2; i++) {
      apps.push(
        await Test.createTestingModule({
          imports: [DynamoLockModule.forTesting({ store, ownerName: `app-${i}` })],
          providers: [BankService],
        }).compile(),
      );
    }
    services = apps.map((app) => app.get(BankService));
  });
  afterAll(() => Promise.all(apps.map((app) => app.close())));

  it('holds every key of a call in the global order: transfers in both directions conserve balances without overlap', async () => {
    const ids = ['a1', 'a2', 'a3'];
    const calls = services.flatMap((service, s) =>
      Array.from({ length: 30 }, (_, i) => {
        const from = ids[(i + s) % 3];
        const to = ids[(i + s + 1 + (i % 2)) % 3];
        return service.transfer(from, to, 1 + (i % 7));
      }),
    );
    const keys = await Promise.all(calls);
    expect(overlaps).toBe(0);
    expect([...balances.values()].reduce((a, b) => a + b, 0)).toBe(300);
    // current() is the set's lock: whatever the arguments' order, its keys are sorted.
    for (const set of keys) {
      expect(set).toHaveLength(2);
      expect(set).toEqual([...set].sort());
    }
  });

  it("onBusy: 'skip' skips a call when one of its keys is busy", async () => {
    const held = await services[1].locks.acquire('account-a2');
    expect(await services[0].audit('a1', 'a2')).toBeUndefined();
    await held.release();
    expect(await services[0].audit('a2', 'a1')).toBe('a2+a1');
  });

  it('fails at class definition for an empty array, a bad template in it, or options a set cannot take', () => {
    const define = (template: string | readonly string[], options = {}) => {
      class Bad {
        @WithLock(template, options)
        async run(_a: string, _b: string): Promise<void> {}
      }
      return Bad;
    };
    expect(() => define([])).toThrow(LockValidationError);
    expect(() => define([])).toThrow(/array of key templates is empty/);
    expect(() => define(['account-<0>', 'account-{1}'])).toThrow(/account-<1>/);
    expect(() => define(['account-<0>', 'account-<2>'])).toThrow(LockValidationError);
    expect(() => define(['account-<0>', 'account-<1>'], { limit: 2 })).toThrow(/"limit" cannot be used with an array of key templates/);
    expect(() => define(['account-<0>', 'account-<1>'], { data: 1 })).toThrow(/"data" cannot be used/);
    expect(() => define(['account-<0>', 'account-<1>'], { catchUp: 'last' })).toThrow(/"catchUp" cannot be used/);
    expect(define(['account-<0>', 'account-<1>'])).toBeDefined();
  });
});

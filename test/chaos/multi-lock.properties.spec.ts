/**
 * Multi-key locks, property-based (fast-check) over interleavings, on the memory store. The set
 * needs no Promela model of its own (see `model/README.md`): the one-write path is one atomic
 * transaction of free acquires, and the ordered path is textbook lock ordering over mutexes that
 * `model/waiting.pml` covers. These properties are its model:
 *
 * - several managers (instances) run callers that each take a random set of 1 to 3 of 4 keys,
 *   named in a random order with duplicates, some as single attempts (`tryAcquire`), some waiting;
 *   some hold their set across awaits of random length; the store has transactions or not (the
 *   one-write path, or the ordered path only);
 *
 * and whatever the interleaving: every caller finishes (no deadlock: the waits are long enough for
 * every set to be served in turn); a set is held all or none (a caller that got its lock holds
 * every key of it, a refused single attempt holds none and leaves no key held or queued: every
 * key is free once all callers are done); no key is ever held by two callers at once.
 */
import { describe, expect, it } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import { LockManager, MemoryLockStore } from '../../lib';
import { MemoryLogger } from '../support/lock-fixture';

const KEYS = ['a', 'b', 'c', 'd'];

interface Caller {
  manager: number;
  keys: string[];
  single: boolean;
  holdMs: number;
}

const callerArb: fc.Arbitrary<Caller> = fc.record({
  manager: fc.nat({ max: 2 }),
  keys: fc.array(fc.constantFrom(...KEYS), { minLength: 1, maxLength: 4 }),
  single: fc.boolean(),
  holdMs: fc.nat({ max: 3 }),
});

describe('multi-key locks: properties over interleavings (memory store)', () => {
  for (const transactions of [true, false]) {
    it(`all or none, no deadlock, one holder per key (${transactions ? 'with' : 'without'} transactions)`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(callerArb, { minLength: 2, maxLength: 8 }), async (callers) => {
          const store = new MemoryLockStore({ transactions });
          const managers = Array.from(
            { length: 3 },
            (_, i) => new LockManager({ store, verifyTable: false, ownerName: `m${i}`, maxPollInterval: 20, logger: new MemoryLogger() }),
          );
          const holders = new Map<string, number>();
          const clashes: string[] = [];
          try {
            const runs = callers.map(async (caller, index) => {
              const manager = managers[caller.manager];
              const lock = caller.single ? await manager.tryAcquire(caller.keys) : await manager.acquire(caller.keys, { wait: '30s' });
              if (lock === null) return 'refused';
              const held = [...new Set(caller.keys)];
              expect([...lock.keys].sort()).toEqual(held.sort());
              for (const key of held) {
                if (holders.has(key)) clashes.push(`${key}: caller ${index} with caller ${holders.get(key)}`);
                holders.set(key, index);
              }
              await sleep(caller.holdMs);
              expect(lock.isHeld).toBe(true);
              for (const key of held) holders.delete(key);
              await lock.release();
              return 'held';
            });
            const outcomes = await Promise.all(runs);
            expect(clashes).toEqual([]);
            // Waiting callers always get their set; nothing is left held or queued behind anyone.
            callers.forEach((caller, i) => {
              if (!caller.single) expect(outcomes[i]).toBe('held');
            });
            for (const key of KEYS) expect(await managers[0].tryAcquire(key)).not.toBeNull();
          } finally {
            await Promise.all(managers.map((m) => m.close()));
          }
        }),
        { numRuns: 40 },
      );
    }, 120_000);
  }
});

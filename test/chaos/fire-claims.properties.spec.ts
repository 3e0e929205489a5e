/**
 * The fire-claim rule of scheduled jobs, property-based (fast-check) over interleavings, on the
 * memory mutex store (which applies every write as the DynamoDB store conditions it, and passes the
 * same contract suite). The Promela model (`model/`) covers the waiting line; a claim is one more
 * condition on the writes that grant the lock, and these properties are its model:
 *
 * - instances attempt the fires of one schedule in order, each when its own clock says so, so
 *   their attempts interleave arbitrarily (any clock skew);
 * - a run holds the lock until its release, or its instance crashes (no release); a crashed run is
 *   passed later by another instance (the run watch or the next fire's attempt), recording it lost;
 *
 * and whatever the interleaving: no fire runs twice; a fire whose first attempt found no run in
 * progress runs (none is lost while an instance was up for it); claims only grow; a released claim
 * stays with its outcome.
 */
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { isHeld } from '../../lib/store/mutex/mutex.record';
import { MemoryMutexStore } from '../../lib/store/mutex/mutex.memory-store';

const KEY = 'job';
const LEASE_MS = 1_000;

/** One step of the world: an instance's attempt at its next fire, the end of a run, a crash, a pass. */
type Step = { kind: 'attempt'; instance: number } | { kind: 'end'; failed: boolean } | { kind: 'crash' } | { kind: 'pass' };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 0, max: 2 }).map((instance) => ({ kind: 'attempt' as const, instance })) },
  { weight: 3, arbitrary: fc.boolean().map((failed) => ({ kind: 'end' as const, failed })) },
  { weight: 1, arbitrary: fc.constant({ kind: 'crash' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'pass' as const }) },
);

interface Run {
  fire: number;
  token: string;
  ticket: number | undefined;
}

describe('fire claims over interleavings (memory store)', () => {
  it('no fire runs twice, none found free is lost, claims only grow and stay', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 60 }), async (steps) => {
        const store = new MemoryMutexStore();
        const nextFire = [1, 1, 1]; // each instance's next fire, in schedule order (fires 1, 2, 3, ...)
        const ran = new Map<number, number>(); // fire → runs
        const firstAttemptFree = new Set<number>(); // fires whose first attempt found no run in progress
        const attempted = new Set<number>();
        let running: Run | undefined;
        let crashed: Run | undefined;
        let highest = 0;
        for (const step of steps) {
          if (step.kind === 'attempt') {
            const fire = nextFire[step.instance]++;
            const before = await store.read(KEY);
            if (!attempted.has(fire) && !isHeld(before)) firstAttemptFree.add(fire);
            attempted.add(fire);
            const token = `i${step.instance}-f${fire}`;
            const result = await store.acquire({
              key: KEY,
              token,
              owner: `i${step.instance}`,
              leaseMs: LEASE_MS,
              condition: { kind: 'free' },
              fire,
            });
            if (result.ok) {
              // Granted: no run in progress, and no fire at or after this one claimed before.
              expect(running).toBeUndefined();
              expect(crashed).toBeUndefined();
              expect(fire).toBeGreaterThan(highest);
              highest = fire;
              ran.set(fire, (ran.get(fire) ?? 0) + 1);
              running = { fire, token, ticket: result.record.head };
              expect(result.record.fire).toMatchObject({ at: fire, outcome: 'running' });
            }
          } else if (step.kind === 'end' && running) {
            const done = await store.release(
              KEY,
              { token: running.token, ticket: running.ticket },
              LEASE_MS,
              10,
              step.failed ? 'failed' : 'done',
            );
            expect(done).toBe(true);
            const after = await store.read(KEY);
            expect(after?.fire).toMatchObject({ at: running.fire, outcome: step.failed ? 'failed' : 'done' });
            running = undefined;
          } else if (step.kind === 'crash' && running) {
            crashed = running;
            running = undefined;
          } else if (step.kind === 'pass' && crashed) {
            // A watcher saw the crashed run's version unchanged for its lease: one write conditioned on it.
            const seen = (await store.read(KEY))!;
            const passed = await store.skip({
              key: KEY,
              rvn: seen.rvn!,
              live: seen.live,
              target: seen.head! + 1,
              fireLost: seen.fire?.outcome === 'running',
            });
            expect(passed.ok).toBe(true);
            expect(passed.ok && passed.record.fire).toMatchObject({ at: crashed.fire, outcome: 'lost' });
            crashed = undefined;
          }
          // The claim never moves back, whatever was written.
          const now = await store.read(KEY);
          expect(now?.fire?.at ?? 0).toBe(highest);
        }
        for (const [fire, count] of ran) expect({ fire, count }).toEqual({ fire, count: 1 });
        // Attempts go in schedule order per instance, so the first attempt at a fire found free
        // always claimed it (unless a later fire was claimed first: impossible, instances go in order,
        // but another instance may be ahead of it — then that one attempted this fire before).
        for (const fire of firstAttemptFree) expect({ fire, ran: ran.get(fire) ?? 0 }).toEqual({ fire, ran: 1 });
      }),
      { numRuns: 300 },
    );
  });
});

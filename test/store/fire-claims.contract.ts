import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { FireRecord, LockRecord } from '../../lib/store/mutex/mutex.record';
import type { MutexStorePort } from '../../lib/store/mutex/mutex-store.port';
import type { AcquireWrite, Holding, ReleaseFire, SkipWrite, WriteResult } from '../../lib/store/mutex/mutex-store.protocol';
import type { StoreUnderTest } from './lock-store.contract';
import { type ContractTraits, okRecord, tok } from './support/contract-stores';

const ownerOf = (token: string) => `owner-${token.slice(0, 6)}`;
const LEASE = 10_000;
const CLAIM = 2_000;
/** A scheduled time, as a cron schedule names a fire (epoch ms); far from any clock on purpose. */
const T = Date.UTC(2031, 0, 1, 4, 0, 0);
/** The schedule's period. */
const P = 60_000;

/** A holder the helpers took the lock for. */
interface Taken {
  token: string;
  owner: string;
  ticket: number;
  holding: Holding;
  record: LockRecord;
}

/**
 * The contract of scheduled-fire claims on a {@link MutexStorePort} (`AcquireWrite.fire`,
 * `SkipWrite.holder.fire`, `SkipWrite.fireLost`, the `fire` argument of `release`): the item keeps
 * the last fire claimed (`fire`: its scheduled time, its owner, start, end, outcome); a write that
 * takes the lock with a fire succeeds only if no fire at or after it was claimed, on top of its
 * own condition; the claim outlives the release, which records how the run ended. Every store runs
 * it (`fire-claims.contract.spec.ts`), so they must agree.
 */
export function fireClaimsContract(name: string, makeStore: () => Promise<StoreUnderTest>, traits: ContractTraits): void {
  describe(`fire claims contract: ${name}`, () => {
    let under: StoreUnderTest;
    let store: MutexStorePort;
    let seq = 0;
    const newKey = (label: string) => `fire-contract/${label}/${++seq}-${tok().slice(0, 6)}`;

    beforeAll(async () => {
      under = await makeStore();
      store = under.store;
    });
    afterAll(() => under?.close());

    // ---- helpers ----

    const acquireWrite = (key: string, token: string, extra: Partial<AcquireWrite> = {}): AcquireWrite => ({
      key,
      token,
      owner: ownerOf(token),
      leaseMs: LEASE,
      condition: { kind: 'free' },
      ...extra,
    });

    /** Takes the lock of `key` with a 'free' write, claiming `fire` when given. */
    async function take(key: string, fire?: number, extra: Partial<AcquireWrite> = {}): Promise<Taken> {
      const token = extra.token ?? tok();
      const write = acquireWrite(key, token, { ...(fire !== undefined && { fire }), ...extra });
      const record = okRecord(await store.acquire(write));
      expect(record.token).toBe(token);
      return { token, owner: write.owner, ticket: record.head!, holding: { token, ticket: record.head! }, record };
    }

    async function mustRead(key: string): Promise<LockRecord> {
      const record = await store.read(key);
      if (!record) throw new Error(`no record for ${key}`);
      return record;
    }

    /** The write failed and changed nothing; its `current`, where the store reports one, is the item as it was. */
    async function expectRefused(result: WriteResult, key: string, before: LockRecord | undefined): Promise<void> {
      expect(result.ok).toBe(false);
      if (result.ok) return;
      if (traits.returnsCurrent) expect(result.current).toEqual(before);
      else if (result.current !== undefined) expect(result.current).toEqual(before);
      expect(await store.read(key)).toEqual(before);
    }

    const skip = (key: string, seen: LockRecord, target: number, extra: Partial<SkipWrite> = {}): Promise<WriteResult> =>
      store.skip({ key, rvn: seen.rvn!, live: seen.live, target, ...extra });

    /** A claim as the item shows it while its run holds the lock, started between `from` and `to`. */
    const running = (at: number, owner: string, from: number, to: number): FireRecord => ({
      at,
      owner,
      startedAt: expectBetween(from, to),
      endedAt: undefined,
      outcome: 'running',
    });

    // ---- claims ----

    describe('claiming a fire with the write that takes the lock', () => {
      it('claims a fire on a new item: the fire, its owner and start are recorded as running, with no end', async () => {
        const key = newKey('new');
        const before = Date.now();
        const { record, owner } = await take(key, T, { owner: 'alice' });
        const after = Date.now();
        expect(owner).toBe('alice');
        expect(record.fire).toEqual(running(T, 'alice', before, after));
        expect(record.fire!.endedAt).toBeUndefined();
        expect(record.owner).toBe('alice');
        // The answer is the item as written.
        expect(await mustRead(key)).toEqual(record);
      });

      it('claims a fire on an existing free item that never had one; a write without a fire records none', async () => {
        const key = newKey('existing');
        const plain = await take(key);
        expect(plain.record.fire).toBeUndefined();
        expect(await store.release(key, plain.holding, LEASE)).toBe(true);
        expect((await mustRead(key)).fire).toBeUndefined();
        const before = Date.now();
        const { record, owner } = await take(key, T);
        expect(record.fire).toEqual(running(T, owner, before, Date.now()));
      });

      it('keeps a fire of epoch 0 and a far one exactly', async () => {
        const zero = newKey('zero');
        expect((await take(zero, 0)).record.fire?.at).toBe(0);
        const late = newKey('late');
        const far = Date.UTC(2400, 11, 31, 23, 59, 59, 999);
        expect((await take(late, far)).record.fire?.at).toBe(far);
      });

      it('a second claim of the same fire after the release fails, whoever sends it; the failed answer shows the fire', async () => {
        const key = newKey('same');
        const first = await take(key, T);
        expect(await store.release(key, first.holding, LEASE, 5, 'done')).toBe(true);
        const before = await mustRead(key);
        expect(before.token).toBeUndefined();
        expect(before.fire).toMatchObject({ at: T, owner: first.owner, outcome: 'done' });

        const result = await store.acquire(acquireWrite(key, tok(), { fire: T }));
        await expectRefused(result, key, before);
        if (traits.returnsCurrent && !result.ok) expect(result.current?.fire).toMatchObject({ at: T, owner: first.owner, outcome: 'done' });
        // The token that ran it cannot claim it again either.
        await expectRefused(await store.acquire(acquireWrite(key, first.token, { fire: T })), key, before);
      });

      it('an earlier fire fails; a later one succeeds and replaces the claim (new owner, start, running, no end)', async () => {
        const key = newKey('order');
        const first = await take(key, T + P);
        expect(await store.release(key, first.holding, LEASE, 5, 'done')).toBe(true);
        const before = await mustRead(key);
        expect(before.fire?.endedAt).toEqual(expect.any(Number));

        await expectRefused(await store.acquire(acquireWrite(key, tok(), { fire: T })), key, before);
        await expectRefused(await store.acquire(acquireWrite(key, tok(), { fire: T + P - 1 })), key, before);

        const startFrom = Date.now();
        const second = await take(key, T + P + 1);
        expect(second.record.fire).toEqual(running(T + P + 1, second.owner, startFrom, Date.now()));
        expect(second.record.fire!.startedAt).toBeGreaterThanOrEqual(before.fire!.startedAt!);
        expect(await mustRead(key)).toEqual(second.record);
      });

      it('a write without a fire takes a free lock whatever fire was claimed, and leaves the claim as it was', async () => {
        const key = newKey('plain-after');
        const first = await take(key, T);
        expect(await store.release(key, first.holding, LEASE, 5, 'done')).toBe(true);
        const claimed = (await mustRead(key)).fire;

        const plain = await take(key);
        expect(plain.record.fire).toEqual(claimed);
        expect(await store.release(key, plain.holding, LEASE, 5)).toBe(true);
        const after = await mustRead(key);
        expect(after.fire).toEqual(claimed);
        // The claim still holds against that fire.
        await expectRefused(await store.acquire(acquireWrite(key, tok(), { fire: T })), key, after);
      });

      it('a heartbeat keeps the claim as it is', async () => {
        const key = newKey('heartbeat');
        const holder = await take(key, T);
        const beat = okRecord(
          await store.heartbeat({ key, holding: holder.holding, owner: holder.owner, leaseMs: LEASE + 1, ttlLeaseMs: LEASE + 1 }),
        );
        expect(beat.rvn).not.toBe(holder.record.rvn);
        expect(beat.fire).toEqual(holder.record.fire);
      });
    });

    // ---- the claim composes with the write's own condition ----

    describe("the claim composes with the write's own condition", () => {
      it('a held item never grants a free write, even with a later fire (and the claim is not written)', async () => {
        const key = newKey('held');
        const holder = await take(key, T);
        const before = await mustRead(key);
        await expectRefused(await store.acquire(acquireWrite(key, tok(), { fire: T + P })), key, before);
        await expectRefused(await store.acquire(acquireWrite(key, tok(), { fire: T + 10 * P })), key, before);
        // Held without any fire claimed: the same.
        const plainKey = newKey('held-plain');
        await take(plainKey);
        const plainBefore = await mustRead(plainKey);
        await expectRefused(await store.acquire(acquireWrite(plainKey, tok(), { fire: T })), plainKey, plainBefore);
        expect(holder.record.fire?.at).toBe(T);
      });

      it('a free-looking item with waiters in line (a release served a ticket) never grants a free write with a later fire', async () => {
        const key = newKey('line');
        const holder = await take(key, T);
        const waiter = okRecord(await store.enqueue({ key, token: tok(), claimMs: CLAIM }));
        expect(waiter.tail).toBe(holder.ticket + 2);
        expect(await store.release(key, holder.holding, LEASE, 5, 'done')).toBe(true);
        const before = await mustRead(key);
        // No token, but head serves the waiter's ticket: held by the promoted waiter.
        expect(before.token).toBeUndefined();
        expect(before.head).toBe(holder.ticket + 1);
        expect(before.fire).toMatchObject({ at: T, outcome: 'done' });
        await expectRefused(await store.acquire(acquireWrite(key, tok(), { fire: T + P })), key, before);
      });

      it('a hand-over grants only a later fire than the one claimed, and claims it', async () => {
        const key = newKey('handover');
        const holder = await take(key, T);
        const before = await mustRead(key);
        const next = tok();
        const handover = (fire: number) => acquireWrite(key, next, { fire, condition: { kind: 'handover', from: holder.holding } });
        await expectRefused(await store.acquire(handover(T)), key, before);
        await expectRefused(await store.acquire(handover(T - 1)), key, before);
        const startFrom = Date.now();
        const record = okRecord(await store.acquire(handover(T + P)));
        expect(record.token).toBe(next);
        expect(record.fencingToken).toBe(before.fencingToken! + 1);
        expect(record.fire).toEqual(running(T + P, ownerOf(next), startFrom, Date.now()));
      });

      it('a hand-over from a holding that does not hold is refused whatever the fire', async () => {
        const key = newKey('handover-stranger');
        await take(key, T);
        const before = await mustRead(key);
        const write = acquireWrite(key, tok(), { fire: T + P, condition: { kind: 'handover', from: { token: tok() } } });
        await expectRefused(await store.acquire(write), key, before);
      });
    });

    // ---- release ----

    describe('release', () => {
      it.each<ReleaseFire>(['done', 'failed'])(
        "a release with '%s' frees the lock, keeps the fire and its start, and records the outcome and end",
        async (outcome) => {
          const key = newKey(`release-${outcome}`);
          const holder = await take(key, T);
          const claimed = holder.record.fire!;
          const from = Date.now();
          expect(await store.release(key, holder.holding, LEASE, 42, outcome)).toBe(true);
          const to = Date.now();
          const after = await mustRead(key);
          expect(after.token).toBeUndefined();
          expect(after.owner).toBeUndefined();
          expect(after.released).toBe(holder.token);
          expect(after.lastHoldMs).toBe(42);
          expect(after.fire).toEqual({
            at: T,
            owner: holder.owner,
            startedAt: claimed.startedAt,
            endedAt: expectBetween(from, to),
            outcome,
          });
          expect(after.fire!.endedAt).toBeGreaterThanOrEqual(claimed.startedAt!);
        },
      );

      it('a release without a fire argument keeps the claim as it was: running, no end', async () => {
        const key = newKey('release-plain');
        const holder = await take(key, T);
        expect(await store.release(key, holder.holding, LEASE, 5)).toBe(true);
        const after = await mustRead(key);
        expect(after.token).toBeUndefined();
        expect(after.fire).toEqual(holder.record.fire);
        expect(after.fire?.outcome).toBe('running');
        expect(after.fire?.endedAt).toBeUndefined();
      });

      it('a release by a holding that does not hold changes nothing, the fire included', async () => {
        const key = newKey('release-stranger');
        await take(key, T);
        const before = await mustRead(key);
        expect(await store.release(key, { token: tok() }, LEASE, 5, 'failed')).toBe(false);
        expect(await mustRead(key)).toEqual(before);
      });

      it('a retried release (its answer lost) reports success and writes no second end', async () => {
        const key = newKey('release-retry');
        const holder = await take(key, T);
        expect(await store.release(key, holder.holding, LEASE, 5, 'done')).toBe(true);
        const after = await mustRead(key);
        expect(await store.release(key, holder.holding, LEASE, 5, 'failed')).toBe(true);
        expect(await mustRead(key)).toEqual(after);
        expect(after.fire?.outcome).toBe('done');
      });
    });

    // ---- skip ----

    describe('skip (passing a silent holder)', () => {
      it("with fireLost: frees the lock and marks the fire 'lost' with an end, keeping its owner and start; it still counts as claimed", async () => {
        const key = newKey('skip-lost');
        const holder = await take(key, T);
        const seen = await mustRead(key);
        const from = Date.now();
        const record = okRecord(await skip(key, seen, seen.head! + 1, { fireLost: true }));
        const to = Date.now();
        expect(record.token).toBeUndefined();
        expect(record.head).toBe(record.tail);
        expect(record.fencingToken).toBe(seen.fencingToken! + 1);
        expect(record.fire).toEqual({
          at: T,
          owner: holder.owner,
          startedAt: seen.fire!.startedAt,
          endedAt: expectBetween(from, to),
          outcome: 'lost',
        });
        expect(await mustRead(key)).toEqual(record);
        // A lost fire was claimed: it is not run again; the next one is taken with a free write.
        await expectRefused(await store.acquire(acquireWrite(key, tok(), { fire: T })), key, record);
        const startFrom = Date.now();
        const next = await take(key, T + P);
        expect(next.record.fire).toEqual(running(T + P, next.owner, startFrom, Date.now()));
      });

      it('without fireLost: the claim stays as it was (running)', async () => {
        const key = newKey('skip-kept');
        await take(key, T);
        const seen = await mustRead(key);
        const record = okRecord(await skip(key, seen, seen.head! + 1));
        expect(record.token).toBeUndefined();
        expect(record.fire).toEqual(seen.fire);
      });

      it('a skip whose condition fails (another version) marks nothing lost', async () => {
        const key = newKey('skip-stale');
        const holder = await take(key, T);
        const stale = await mustRead(key);
        okRecord(await store.heartbeat({ key, holding: holder.holding, owner: holder.owner, leaseMs: undefined, ttlLeaseMs: LEASE }));
        const before = await mustRead(key);
        await expectRefused(await skip(key, stale, stale.head! + 1, { fireLost: true }), key, before);
        expect(before.fire?.outcome).toBe('running');
      });

      it('with a holder and a later fire: the holder takes the lock and claims its fire (running, no end)', async () => {
        const key = newKey('skip-claim');
        const old = await take(key, T);
        const waiterToken = tok();
        okRecord(await store.enqueue({ key, token: waiterToken, claimMs: CLAIM }));
        const seen = await mustRead(key);
        const startFrom = Date.now();
        const holder = { token: waiterToken, owner: 'bob', leaseMs: LEASE, fire: T + P };
        const record = okRecord(await skip(key, seen, old.ticket + 1, { holder }));
        expect(record.token).toBe(waiterToken);
        expect(record.owner).toBe('bob');
        expect(record.head).toBe(old.ticket + 1);
        expect(record.fire).toEqual(running(T + P, 'bob', startFrom, Date.now()));
        expect(await mustRead(key)).toEqual(record);
      });

      it('with a holder and a fire at or before the one claimed: refused, nothing changes', async () => {
        const key = newKey('skip-claim-refused');
        const old = await take(key, T);
        const waiterToken = tok();
        okRecord(await store.enqueue({ key, token: waiterToken, claimMs: CLAIM }));
        const seen = await mustRead(key);
        for (const fire of [T, T - P]) {
          const holder = { token: waiterToken, owner: 'bob', leaseMs: LEASE, fire };
          await expectRefused(await skip(key, seen, old.ticket + 1, { holder }), key, seen);
        }
      });

      it('with a holder and no fire, and fireLost: the new holder takes the lock and the passed fire is recorded lost', async () => {
        const key = newKey('skip-plain-holder-lost');
        const old = await take(key, T);
        const waiterToken = tok();
        okRecord(await store.enqueue({ key, token: waiterToken, claimMs: CLAIM }));
        const seen = await mustRead(key);
        const from = Date.now();
        const record = okRecord(
          await skip(key, seen, old.ticket + 1, { holder: { token: waiterToken, owner: 'bob', leaseMs: LEASE }, fireLost: true }),
        );
        const to = Date.now();
        expect(record.token).toBe(waiterToken);
        expect(record.fire).toEqual({
          at: T,
          owner: old.owner,
          startedAt: seen.fire!.startedAt,
          endedAt: expectBetween(from, to),
          outcome: 'lost',
        });
      });

      it('with a holder that claims a later fire, and fireLost: the new claim replaces the passed fire (fireLost is moot), on every store', async () => {
        const key = newKey('skip-claim-and-lost');
        const old = await take(key, T);
        const waiterToken = tok();
        okRecord(await store.enqueue({ key, token: waiterToken, claimMs: CLAIM }));
        const seen = await mustRead(key);
        const record = okRecord(
          await skip(key, seen, old.ticket + 1, {
            holder: { token: waiterToken, owner: 'bob', leaseMs: LEASE, fire: T + 1_000 },
            fireLost: true,
          }),
        );
        expect(record.token).toBe(waiterToken);
        expect(record.fire).toMatchObject({ at: T + 1_000, owner: 'bob', outcome: 'running' });
        expect(record.fire?.endedAt).toBeUndefined();
      });
    });
  });
}

/** A number between `from` and `to` (inclusive): a wall-clock time written by the store in that window. */
function expectBetween(from: number, to: number): number {
  const matcher = {
    asymmetricMatch: (value: unknown) => typeof value === 'number' && value >= from && value <= to,
    toString: () => `a time between ${from} and ${to}`,
    toAsymmetricMatcher: () => `a time between ${from} and ${to}`,
  };
  return matcher as unknown as number;
}

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { MutexStorePort } from '../../lib/store/mutex/mutex-store.port';
import type { Holding, WriteResult } from '../../lib/store/mutex/mutex-store.protocol';
import { isHeld, LEFT_MAX, leftRun, type LockRecord } from '../../lib/store/mutex/mutex.record';
import type { StoreUnderTest } from './lock-store.contract';
import { type ContractTraits, okRecord, tok } from './support/contract-stores';

const LEASE = 10_000;
const CLAIM = 2_000;

/**
 * The contract of leaving the line on a {@link MutexStorePort} (`leave`, `passLeft`, and what
 * `release`, `skip`, `heartbeat` and the free `acquire` do with the item's `left` set): a waiter
 * that gives up marks its ticket left while it still waits; a left ticket is never held; whoever
 * sees `head` serve left tickets passes them at once, and a release does it itself, so the next
 * waiter (or a free acquisition) is served without a claim lease. Every store runs it
 * (`leave.contract.spec.ts`), so they must agree.
 */
export function leaveContract(name: string, makeStore: () => Promise<StoreUnderTest>, traits: ContractTraits): void {
  describe(`leaving the line: ${name}`, () => {
    let under: StoreUnderTest;
    let store: MutexStorePort;
    let seq = 0;
    const newKey = (label: string) => `leave-contract/${label}/${++seq}-${tok().slice(0, 6)}`;

    beforeAll(async () => {
      under = await makeStore();
      store = under.store;
    });
    afterAll(() => under?.close());

    /** A key held by a fresh token, with `count` waiters' tickets behind it, in order. */
    async function line(label: string, count: number) {
      const key = newKey(label);
      const token = tok();
      const taken = okRecord(await store.acquire({ key, token, owner: 'holder', leaseMs: LEASE, condition: { kind: 'free' } }));
      const holder: Holding = { token, ticket: taken.head };
      const waiters: { token: string; ticket: number }[] = [];
      for (let i = 0; i < count; i++) {
        const waiterToken = tok();
        const record = okRecord(await store.enqueue({ key, token: waiterToken, claimMs: CLAIM }));
        waiters.push({ token: waiterToken, ticket: record.tail! - 1 });
      }
      return { key, holder, waiters };
    }

    async function mustRead(key: string): Promise<LockRecord> {
      const record = await store.read(key);
      if (!record) throw new Error(`no record for ${key}`);
      return record;
    }

    /** Refused, nothing changed; the answer carries the item as it was where the store reports it. */
    async function expectRefused(result: WriteResult, key: string, before: LockRecord | undefined): Promise<void> {
      expect(result.ok).toBe(false);
      if (!result.ok && (traits.returnsCurrent || result.current !== undefined)) expect(result.current).toEqual(before);
      expect(await store.read(key)).toEqual(before);
    }

    const heartbeatBy = (key: string, holding: Holding) =>
      store.heartbeat({ key, holding, owner: 'w', leaseMs: undefined, ttlLeaseMs: LEASE });

    describe('leave', () => {
      it('marks a waiting ticket left, keeping the record version, head, tail and fence', async () => {
        const { key, waiters } = await line('leave', 2);
        const before = await mustRead(key);
        expect((await store.leave(key, waiters[0]!.ticket)).ok).toBe(true);
        const after = await mustRead(key);
        expect(after).toEqual({ ...before, left: [waiters[0]!.ticket] });
        // Leaving twice (a retry whose answer was lost) is harmless: a set.
        expect((await store.leave(key, waiters[0]!.ticket)).ok).toBe(true);
        expect((await store.leave(key, waiters[1]!.ticket)).ok).toBe(true);
        expect((await mustRead(key)).left).toEqual([waiters[0]!.ticket, waiters[1]!.ticket]);
      });

      it('is refused for a ticket served already, passed, not yet handed out, or on a missing item', async () => {
        const { key, holder, waiters } = await line('leave-refused', 2);
        const before = await mustRead(key);
        // The head itself (served) and a ticket never taken.
        await expectRefused(await store.leave(key, holder.ticket!), key, before);
        await expectRefused(await store.leave(key, before.tail!), key, before);
        expect(await store.release(key, holder, LEASE)).toBe(true);
        const served = await mustRead(key);
        expect(served.head).toBe(waiters[0]!.ticket);
        await expectRefused(await store.leave(key, waiters[0]!.ticket), key, served);
        await expectRefused(await store.leave(key, holder.ticket!), key, served);
        const missing = newKey('leave-missing');
        await expectRefused(await store.leave(missing, 5), missing, undefined);
      });

      it(`keeps the set bounded: at most ${LEFT_MAX} tickets, then refused (the waiter keeps its ticket)`, async () => {
        const { key, waiters } = await line('leave-full', LEFT_MAX + 1);
        for (const waiter of waiters.slice(0, LEFT_MAX)) expect((await store.leave(key, waiter.ticket)).ok).toBe(true);
        const full = await mustRead(key);
        expect(full.left).toHaveLength(LEFT_MAX);
        await expectRefused(await store.leave(key, waiters[LEFT_MAX]!.ticket), key, full);
      });
    });

    describe('a left ticket is never held', () => {
      it('a release serving it passes it at once: the next live waiter holds, the fence rises once', async () => {
        const { key, holder, waiters } = await line('release-passes', 3);
        const [gone, next, last] = waiters as [(typeof waiters)[0], (typeof waiters)[0], (typeof waiters)[0]];
        expect((await store.leave(key, gone.ticket)).ok).toBe(true);
        const before = await mustRead(key);
        expect(await store.release(key, holder, LEASE)).toBe(true);
        const after = await mustRead(key);
        expect(after.head).toBe(next.ticket);
        expect(after.left).toBeUndefined();
        expect(after.fencingToken).toBe(before.fencingToken! + 1);
        expect(isHeld(after)).toBe(true);
        // The left waiter cannot hold by its ticket; the next one does.
        expect((await heartbeatBy(key, gone)).ok).toBe(false);
        expect(okRecord(await heartbeatBy(key, next)).token).toBe(next.token);
        expect(last.ticket).toBe(after.tail! - 1);
      });

      it('a release whose whole line left frees the item: a free acquisition takes it at once', async () => {
        const { key, holder, waiters } = await line('release-frees', 2);
        for (const waiter of waiters) expect((await store.leave(key, waiter.ticket)).ok).toBe(true);
        expect(await store.release(key, holder, LEASE)).toBe(true);
        const freed = await mustRead(key);
        expect(isHeld(freed)).toBe(false);
        expect(freed.head).toBe(freed.tail);
        const token = tok();
        const taken = okRecord(await store.acquire({ key, token, owner: 'next', leaseMs: LEASE, condition: { kind: 'free' } }));
        expect(taken.token).toBe(token);
        expect(taken.fencingToken).toBe(freed.fencingToken);
        expect(taken.left).toBeUndefined();
      });

      it('heartbeat and release by a left ticket are refused when head serves it (a late write of the waiter that left)', async () => {
        const { key, holder, waiters } = await line('left-head', 1);
        const gone = waiters[0]!;
        expect((await store.leave(key, gone.ticket)).ok).toBe(true);
        // A release written before the leave landed would have served it: here head serves it with the leave in place.
        const passedBy = await mustRead(key);
        expect(passedBy.left).toEqual([gone.ticket]);
        const skipped = okRecord(await store.skip({ key, rvn: passedBy.rvn!, live: undefined, target: gone.ticket }));
        expect(skipped.head).toBe(gone.ticket);
        expect(skipped.left).toEqual([gone.ticket]);
        const before = await mustRead(key);
        await expectRefused(await heartbeatBy(key, gone), key, before);
        expect(await store.release(key, gone, LEASE)).toBe(false);
        expect(await mustRead(key)).toEqual(before);
        void holder;
      });
    });

    describe('passLeft', () => {
      it('moves head past the run of left tickets, with a new version, the fence kept, the run out of the set', async () => {
        const { key, holder, waiters } = await line('pass-left', 4);
        const [a, b, c, d] = waiters as [(typeof waiters)[0], (typeof waiters)[0], (typeof waiters)[0], (typeof waiters)[0]];
        for (const ticket of [a.ticket, b.ticket, d.ticket]) expect((await store.leave(key, ticket)).ok).toBe(true);
        // Skip the silent holder to `a` (as a waiter's pass would): head serves a left ticket.
        const seen = await mustRead(key);
        okRecord(await store.skip({ key, rvn: seen.rvn!, live: undefined, target: a.ticket }));
        const atLeft = await mustRead(key);
        const run = leftRun(atLeft)!;
        expect(run).toEqual({ head: a.ticket, passed: [a.ticket, b.ticket], target: c.ticket });
        const passed = okRecord(await store.passLeft(key, run));
        expect(passed).toEqual({ ...atLeft, head: c.ticket, rvn: expect.any(String), updatedAt: expect.any(Number), left: [d.ticket] });
        expect(passed.rvn).not.toBe(atLeft.rvn);
        expect(leftRun(passed)).toBeUndefined();
        expect(okRecord(await heartbeatBy(key, c)).token).toBe(c.token);
        void holder;
      });

      it('is refused when head moved, a token holds the item, or a ticket passed is not left', async () => {
        const { key, waiters } = await line('pass-left-refused', 2);
        const [a, b] = waiters as [(typeof waiters)[0], (typeof waiters)[0]];
        expect((await store.leave(key, a.ticket)).ok).toBe(true);
        const held = await mustRead(key);
        // The holder's token is in the item: nothing to pass.
        await expectRefused(await store.passLeft(key, { head: held.head!, passed: [held.head!], target: a.ticket }), key, held);
        okRecord(await store.skip({ key, rvn: held.rvn!, live: undefined, target: a.ticket }));
        const atLeft = await mustRead(key);
        // `b` never left: passing it would skip a live waiter.
        await expectRefused(await store.passLeft(key, { head: a.ticket, passed: [a.ticket, b.ticket], target: b.ticket + 1 }), key, atLeft);
        // A head that moved since.
        await expectRefused(await store.passLeft(key, { head: a.ticket - 1, passed: [a.ticket], target: b.ticket }), key, atLeft);
        okRecord(await store.passLeft(key, leftRun(atLeft)!));
        expect((await mustRead(key)).head).toBe(b.ticket);
      });
    });

    it('a skip removes the left tickets below its target it was given; a free acquisition removes the set', async () => {
      const { key, waiters } = await line('skip-left', 3);
      const [a, b, c] = waiters as [(typeof waiters)[0], (typeof waiters)[0], (typeof waiters)[0]];
      expect((await store.leave(key, a.ticket)).ok).toBe(true);
      expect((await store.leave(key, c.ticket)).ok).toBe(true);
      const seen = await mustRead(key);
      const skipped = okRecord(await store.skip({ key, rvn: seen.rvn!, live: undefined, target: b.ticket, leftPassed: [a.ticket] }));
      expect(skipped.head).toBe(b.ticket);
      expect(skipped.left).toEqual([c.ticket]);
      // `b` releases: `c` left, so the item is free, and the next free acquisition clears what is left of the set.
      expect(okRecord(await heartbeatBy(key, b)).token).toBe(b.token);
      expect(await store.release(key, b, LEASE)).toBe(true);
      const freed = await mustRead(key);
      expect(freed.head).toBe(freed.tail);
      expect(freed.left).toBeUndefined();
    });
  });
}

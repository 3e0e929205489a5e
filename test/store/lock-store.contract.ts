import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { MutexStorePort } from '../../lib/store/mutex/mutex-store.port';
import type {
  AcquireCondition,
  AcquireWrite,
  HeartbeatWrite,
  Holding,
  SkipWrite,
  WriteResult,
} from '../../lib/store/mutex/mutex-store.protocol';
import { isHeld, type LockRecord, ticketsWaiting } from '../../lib/store/mutex/mutex.record';
import { type ContractTraits, okRecord, tok } from './support/contract-stores';

/** A store under test, and how to dispose of whatever it needed (a table, a client). */
export interface StoreUnderTest {
  store: MutexStorePort;
  close(): Promise<void>;
}

const ownerOf = (token: string) => `owner-${token.slice(0, 6)}`;
const LEASE = 10_000;
/** The claim lease the helpers' waiters take tickets with. */
const CLAIM = 2_000;
const RVN = /^[0-9a-f]{32}$/;

/** A ticket taken by a waiter: the holding it writes with once `head` serves it. */
interface Waiter {
  token: string;
  ticket: number;
  /** The enqueue's answer: the item as written. */
  record: LockRecord;
}

/** The holding a waiter (or a holder that took its ticket with 'free') writes with. */
const holdingOf = (w: { token: string; ticket: number }): Holding => ({ token: w.token, ticket: w.ticket });

/**
 * The shared contract of {@link MutexStorePort}: every method's conditions and effects, as the
 * DynamoDB store defines them. Each implementation runs it (`lock-store.contract.spec.ts`).
 *
 * The item is a line of tickets: `head` is the ticket served (its holder holds the lock), `tail`
 * the next ticket handed out; the lock is free when `head` = `tail` and no token is written. A
 * holder holds by its token, or (a waiter a release or a skip promoted, before its first write)
 * by its ticket while no token is written and `head` serves it.
 */
export function lockStoreContract(
  name: string,
  makeStore: () => Promise<StoreUnderTest>,
  traits: ContractTraits = { returnsCurrent: false },
): void {
  describe(`MutexStorePort contract: ${name}`, () => {
    let under: StoreUnderTest;
    let store: MutexStorePort;
    let seq = 0;
    const newKey = (label: string) => `contract/${label}/${++seq}-${tok().slice(0, 6)}`;

    beforeAll(async () => {
      under = await makeStore();
      store = under.store;
    });
    afterAll(() => under?.close());

    // ---- helpers ----

    const write = (key: string, token: string, condition: AcquireCondition, extra: Partial<AcquireWrite> = {}): AcquireWrite => ({
      key,
      token,
      owner: ownerOf(token),
      leaseMs: LEASE,
      condition,
      ...extra,
    });

    /** Takes a free key for a new token: it holds ticket `head`. */
    async function take(key: string, extra: Partial<AcquireWrite> = {}): Promise<{ token: string; ticket: number; record: LockRecord }> {
      const token = extra.token ?? tok();
      const record = okRecord(await store.acquire(write(key, token, { kind: 'free' }, extra)));
      return { token, ticket: record.head!, record };
    }

    /** Takes the next ticket for `token`: its ticket is the answer's `tail - 1`. */
    async function enqueue(key: string, token = tok()): Promise<Waiter> {
      const record = okRecord(await store.enqueue({ key, token, claimMs: CLAIM }));
      expect(record.tailToken).toBe(token);
      return { token, ticket: record.tail! - 1, record };
    }

    /** A key held by a fresh token (ticket `head`), with `count` waiters' tickets behind it, in order. */
    async function line(label: string, count: number, extra: Partial<AcquireWrite> = {}) {
      const key = newKey(label);
      const holder = await take(key, extra);
      const waiters: Waiter[] = [];
      for (let i = 0; i < count; i++) waiters.push(await enqueue(key));
      return { key, holder, waiters };
    }

    const heartbeat = (key: string, holding: Holding, extra: Partial<HeartbeatWrite> = {}): Promise<WriteResult> =>
      store.heartbeat({ key, holding, owner: ownerOf(holding.token), leaseMs: undefined, ttlLeaseMs: LEASE, ...extra });

    const skip = (key: string, seen: LockRecord, target: number, extra: Partial<SkipWrite> = {}): Promise<WriteResult> =>
      store.skip({ key, rvn: seen.rvn!, live: seen.live, target, ...extra });

    async function mustRead(key: string): Promise<LockRecord> {
      const record = await store.read(key);
      if (!record) throw new Error(`no record for ${key}`);
      return record;
    }

    /**
     * The write failed and changed nothing; its `current` (where the store reports one) is the
     * record as it was before, or undefined when there was none.
     */
    async function expectRefused(result: WriteResult, key: string, before: LockRecord | undefined): Promise<void> {
      expect(result.ok).toBe(false);
      if (result.ok) return;
      if (traits.returnsCurrent || result.current !== undefined) expect(result.current).toEqual(before);
      expect(await store.read(key)).toEqual(before);
    }

    /** The holder attributes a release or a skip without a holder removes. */
    const NO_HOLDER = { token: undefined, owner: undefined, data: undefined, leaseMs: undefined, acquiredAt: undefined } as const;

    // ---- acquire: 'free' ----

    describe("acquire 'free'", () => {
      it('creates a missing record: ticket `head` and the fence from the clock in microseconds, tail = head + 1, a new rvn', async () => {
        const key = newKey('create');
        const before = Date.now();
        const { token, record } = await take(key, { owner: 'alice', leaseMs: 7_000, data: '{"job":1}' });
        const after = Date.now();
        expect(record).toEqual({
          key,
          owner: 'alice',
          token,
          rvn: expect.stringMatching(RVN),
          leaseMs: 7_000,
          fencingToken: record.head,
          acquiredAt: expect.any(Number),
          updatedAt: record.acquiredAt,
          data: '{"job":1}',
          released: undefined,
          lastHoldMs: undefined,
          head: expect.any(Number),
          tail: record.head! + 1,
          tailToken: token,
          live: undefined,
        });
        expect(record.head).toBeGreaterThanOrEqual(before * 1000);
        expect(record.head).toBeLessThanOrEqual(after * 1000);
        expect(record.acquiredAt).toBeGreaterThanOrEqual(before);
        expect(record.acquiredAt).toBeLessThanOrEqual(after);
        expect(isHeld(record)).toBe(true);
        expect(ticketsWaiting(record)).toBe(0);
        expect(await store.read(key)).toEqual(record);
      });

      it('is refused while another token holds the record, reporting the holder', async () => {
        const key = newKey('busy');
        const { record } = await take(key);
        await expectRefused(await store.acquire(write(key, tok(), { kind: 'free' })), key, record);
      });

      it('is refused while tickets wait: behind a holder, and for a promoted waiter that has not written (no token, head < tail)', async () => {
        const { key, holder } = await line('free-waiting', 1);
        let before = await mustRead(key);
        await expectRefused(await store.acquire(write(key, tok(), { kind: 'free' })), key, before);
        expect(await store.release(key, holdingOf(holder), LEASE)).toBe(true);
        before = await mustRead(key);
        expect(before.token).toBeUndefined();
        expect(before.head).toBeLessThan(before.tail!);
        await expectRefused(await store.acquire(write(key, tok(), { kind: 'free' })), key, before);
      });

      it('retried by its own token fails (it would take a second ticket): the record shows its own token', async () => {
        const key = newKey('retry-free');
        const { token, record } = await take(key);
        const retry = await store.acquire(write(key, token, { kind: 'free' }));
        await expectRefused(retry, key, record);
        if (!retry.ok && retry.current) expect(retry.current.token).toBe(token);
        expect((await mustRead(key)).token).toBe(token);
      });

      it('takes a released record nobody waits on: the next ticket, the fence the release left; data replaced or dropped; released removed', async () => {
        const key = newKey('reuse');
        const a = await take(key, { data: '"a"' });
        expect(await store.release(key, holdingOf(a), LEASE, 1_500)).toBe(true);
        const freed = await mustRead(key);
        expect(freed.head).toBe(freed.tail);
        expect(freed.fencingToken).toBe(a.record.fencingToken! + 1);
        const b = await take(key);
        expect(b.record).toEqual({
          key,
          owner: ownerOf(b.token),
          token: b.token,
          rvn: expect.stringMatching(RVN),
          leaseMs: LEASE,
          // The release raised it for the next holder: one above the last holder's.
          fencingToken: a.record.fencingToken! + 1,
          acquiredAt: expect.any(Number),
          updatedAt: b.record.acquiredAt,
          data: undefined,
          // Another holder took it: a retry of the last release is no longer recognised.
          released: undefined,
          lastHoldMs: 1_500,
          head: freed.tail,
          tail: freed.tail! + 1,
          tailToken: b.token,
          live: undefined,
        });
        expect(b.record.rvn).not.toBe(freed.rvn);
        expect(b.record.acquiredAt).toBeGreaterThanOrEqual(freed.updatedAt!);
        expect(await store.release(key, holdingOf(b), LEASE)).toBe(true);
        const c = await take(key, { data: '"c"' });
        expect(c.record).toMatchObject({ data: '"c"', head: b.record.tail, fencingToken: b.record.fencingToken! + 1 });
      });

      it('lets exactly one of many concurrent writers take a free record', async () => {
        const key = newKey('race');
        const results = await Promise.all(Array.from({ length: 8 }, () => store.acquire(write(key, tok(), { kind: 'free' }))));
        const winners = results.filter((r) => r.ok);
        expect(winners).toHaveLength(1);
        const record = await mustRead(key);
        expect(record.token).toBe(winners[0]!.ok && winners[0]!.record.token);
        expect(record.tail).toBe(record.head! + 1);
      });
    });

    // ---- acquire: 'handover' ----

    describe("acquire 'handover'", () => {
      it('swaps the holder for the new token: owner, lease, data, acquiredAt, a new rvn, fence + 1; head and tail stay', async () => {
        const { key, holder, waiters } = await line('handover', 1, { data: '"a"', leaseMs: 4_000 });
        const before = await mustRead(key);
        const b = tok();
        const at = Date.now();
        const handed = okRecord(await store.acquire(write(key, b, { kind: 'handover', from: holdingOf(holder) }, { data: '"b"' })));
        expect(handed).toEqual({
          ...before,
          owner: ownerOf(b),
          token: b,
          rvn: expect.stringMatching(RVN),
          leaseMs: LEASE,
          fencingToken: before.fencingToken! + 1,
          acquiredAt: expect.any(Number),
          updatedAt: handed.acquiredAt,
          data: '"b"',
        });
        expect(handed.rvn).not.toBe(before.rvn);
        expect(handed.acquiredAt).toBeGreaterThanOrEqual(at);
        expect(handed).toMatchObject({ head: holder.ticket, tail: waiters[0]!.ticket + 1 });
        expect(await store.read(key)).toEqual(handed);
        // Without data, the new holder's record has none.
        const c = tok();
        const again = okRecord(await store.acquire(write(key, c, { kind: 'handover', from: { token: b, ticket: holder.ticket } })));
        expect(again).toMatchObject({ token: c, data: undefined, head: holder.ticket, fencingToken: handed.fencingToken! + 1 });
      });

      it('retried by the new token succeeds again (re-applicable: the head does not move) and raises the fence again', async () => {
        const key = newKey('handover-retry');
        const a = await take(key);
        const b = tok();
        const first = okRecord(await store.acquire(write(key, b, { kind: 'handover', from: holdingOf(a) })));
        const second = okRecord(await store.acquire(write(key, b, { kind: 'handover', from: holdingOf(a) })));
        expect(second).toMatchObject({ token: b, head: first.head, tail: first.tail, fencingToken: first.fencingToken! + 1 });
        expect(second.rvn).not.toBe(first.rvn);
      });

      it('leaves the previous holder nothing, even with its ticket still served: heartbeat, release and hand-over all fail', async () => {
        const key = newKey('handover-old');
        const a = await take(key);
        const b = tok();
        okRecord(await store.acquire(write(key, b, { kind: 'handover', from: holdingOf(a) })));
        const before = await mustRead(key);
        expect(before.head).toBe(a.ticket);
        await expectRefused(await heartbeat(key, holdingOf(a)), key, before);
        expect(await store.release(key, holdingOf(a), LEASE)).toBe(false);
        expect(await store.read(key)).toEqual(before);
        await expectRefused(await store.acquire(write(key, tok(), { kind: 'handover', from: holdingOf(a) })), key, before);
      });

      it('is refused from a token that does not hold it, from a waiter not yet served, and on a missing record', async () => {
        const { key, waiters } = await line('handover-refused', 1);
        const before = await mustRead(key);
        await expectRefused(await store.acquire(write(key, tok(), { kind: 'handover', from: { token: tok() } })), key, before);
        await expectRefused(await store.acquire(write(key, tok(), { kind: 'handover', from: holdingOf(waiters[0]!) })), key, before);
        // A ticket alone does not hold while a token is written, even the one served.
        await expectRefused(
          await store.acquire(write(key, tok(), { kind: 'handover', from: { token: tok(), ticket: before.head } })),
          key,
          before,
        );
        const missing = newKey('handover-missing');
        await expectRefused(
          await store.acquire(write(missing, tok(), { kind: 'handover', from: { token: tok(), ticket: 0 } })),
          missing,
          undefined,
        );
      });

      it('is accepted from a holding known only by its token (a lease id)', async () => {
        const key = newKey('handover-token');
        const a = await take(key);
        const b = tok();
        const handed = okRecord(await store.acquire(write(key, b, { kind: 'handover', from: { token: a.token } })));
        expect(handed).toMatchObject({ token: b, fencingToken: a.record.fencingToken! + 1, head: a.ticket });
      });

      it('is accepted from a promoted waiter that has not written yet (no token, head = its ticket)', async () => {
        const { key, holder, waiters } = await line('handover-promoted', 2);
        const [w1, w2] = waiters as [Waiter, Waiter];
        expect(await store.release(key, holdingOf(holder), LEASE)).toBe(true);
        const promoted = await mustRead(key);
        const b = tok();
        const handed = okRecord(await store.acquire(write(key, b, { kind: 'handover', from: holdingOf(w1) })));
        expect(handed).toMatchObject({
          token: b,
          owner: ownerOf(b),
          head: w1.ticket,
          tail: w2.ticket + 1,
          fencingToken: promoted.fencingToken! + 1,
        });
        // The waiter's ticket is still served, but the token written now is the new holder's.
        expect(await store.release(key, holdingOf(w1), LEASE)).toBe(false);
      });
    });

    // ---- enqueue ----

    describe('enqueue', () => {
      it('hands out tickets in order behind the holder, changing only tail, tailToken and the claim leases (same rvn, updatedAt and fence)', async () => {
        const key = newKey('enqueue');
        const { record } = await take(key);
        const w1 = await enqueue(key);
        const w2 = await enqueue(key);
        const w3 = await enqueue(key);
        expect([w1.ticket, w2.ticket, w3.ticket]).toEqual([record.head! + 1, record.head! + 2, record.head! + 3]);
        expect(w3.record).toEqual({ ...record, tail: record.head! + 4, tailToken: w3.token, claimMs: CLAIM });
        expect(isHeld(w3.record)).toBe(true);
        expect(ticketsWaiting(w3.record)).toBe(3);
        expect(await store.read(key)).toEqual(w3.record);
      });

      it("on a free record serves the waiter's ticket at once: head = its ticket, held with no token; the rvn stays", async () => {
        const key = newKey('enqueue-free');
        const a = await take(key);
        expect(await store.release(key, holdingOf(a), LEASE)).toBe(true);
        const freed = await mustRead(key);
        const w = await enqueue(key);
        expect(w.ticket).toBe(freed.head);
        expect(w.record).toEqual({ ...freed, tail: freed.tail! + 1, tailToken: w.token, claimMs: CLAIM });
        expect(w.record.token).toBeUndefined();
        expect(isHeld(w.record)).toBe(true);
        expect(ticketsWaiting(w.record)).toBe(0);
      });

      it('on a missing record creates it with the ticket served: head from the clock in microseconds, fence = head', async () => {
        const key = newKey('enqueue-missing');
        const before = Date.now();
        const w = await enqueue(key);
        const after = Date.now();
        expect(w.record).toMatchObject({
          key,
          token: undefined,
          owner: undefined,
          tail: w.ticket + 1,
          head: w.ticket,
          fencingToken: w.ticket,
          tailToken: w.token,
        });
        expect(w.ticket).toBeGreaterThanOrEqual(before * 1000);
        expect(w.ticket).toBeLessThanOrEqual(after * 1000);
        expect(isHeld(w.record)).toBe(true);
        // A version to watch: should this first holder die before it writes, waiters can pass it.
        expect(w.record.rvn).toEqual(expect.any(String));
        expect(w.record.updatedAt).toBeGreaterThanOrEqual(before);
        const passed = await store.enqueue({ key, token: 'next-waiter', claimMs: CLAIM });
        expect(passed.ok).toBe(true);
        expect(
          okRecord(await store.skip({ key, rvn: w.record.rvn!, live: undefined, target: w.ticket + 1, holder: undefined })),
        ).toMatchObject({ head: w.ticket + 1, fencingToken: w.ticket + 1 });
      });

      it('on a missing record: the first write of the waiter served claims it', async () => {
        const key = newKey('enqueue-claim');
        const w = await enqueue(key);
        expect(await store.read(key)).toEqual(w.record);
        const claimed = okRecord(await heartbeat(key, holdingOf(w), { leaseMs: LEASE }));
        expect(claimed).toMatchObject({ token: w.token, owner: ownerOf(w.token), head: w.ticket, fencingToken: w.ticket });
      });

      it('refuses a retried enqueue (its token is the last ticket taken); a different token is accepted', async () => {
        const key = newKey('enqueue-twice');
        await take(key);
        const w = await enqueue(key);
        const before = await mustRead(key);
        const retry = await store.enqueue({ key, token: w.token, claimMs: CLAIM });
        await expectRefused(retry, key, before);
        // The caller learns its ticket from the item: the last one taken is its own.
        if (!retry.ok && retry.current) expect(retry.current.tailToken).toBe(w.token);
        const other = await enqueue(key);
        expect(other.ticket).toBe(w.ticket + 1);
        // Only the last ticket is recognised: once another was taken, the same token takes a new one.
        expect((await enqueue(key, w.token)).ticket).toBe(w.ticket + 2);
      });

      it('never lets a retry adopt a ticket it did not take: a free write names its own token as the last ticket taken', async () => {
        // A waiter's enqueue was applied but its answer lost; its ticket was served and passed
        // while it retried; then another caller took the free lock.
        const key = newKey('enqueue-adopt');
        const a = await take(key);
        const w = await enqueue(key);
        expect(await store.release(key, holdingOf(a), LEASE)).toBe(true);
        const served = await mustRead(key);
        expect(okRecord(await skip(key, served, served.tail!))).toMatchObject({ head: served.tail, token: undefined });
        const b = await take(key);
        expect(b.record.tailToken).toBe(b.token);
        // The retry is not refused as a duplicate (which would name ticket `tail - 1`, the free
        // writer's, as the waiter's own): it takes a new ticket behind the holder.
        const retry = okRecord(await store.enqueue({ key, token: w.token, claimMs: CLAIM }));
        expect(retry).toMatchObject({ tailToken: w.token, head: b.ticket, tail: b.ticket + 2, token: b.token });
      });

      it('records the claim leases of the tickets taken (the largest is read back) until the line is empty again', async () => {
        const key = newKey('claims');
        const holder = await take(key);
        expect(holder.record.claimMs).toBeUndefined();
        await store.enqueue({ key, token: tok(), claimMs: 1_000 });
        expect((await store.read(key))?.claimMs).toBe(1_000);
        await store.enqueue({ key, token: tok(), claimMs: 3_000 });
        await store.enqueue({ key, token: tok(), claimMs: 1_000 });
        expect((await store.read(key))?.claimMs).toBe(3_000);
        // Every ticket passed: the line is empty, and the next free write starts the claim leases anew.
        const last = (await store.read(key))!;
        expect(okRecord(await store.skip({ key, rvn: last.rvn!, live: undefined, target: last.tail! }))).toMatchObject({ head: last.tail });
        expect((await take(key)).record.claimMs).toBeUndefined();
      });

      it('gives each of many concurrent enqueues its own ticket, consecutive (no lost update)', async () => {
        const key = newKey('enqueue-race');
        const { record } = await take(key);
        const tokens = Array.from({ length: 8 }, tok);
        const results = await Promise.all(tokens.map((token) => store.enqueue({ key, token, claimMs: CLAIM })));
        const tickets = results.map((r) => okRecord(r).tail! - 1);
        expect([...tickets].sort((x, y) => x - y)).toEqual(Array.from({ length: 8 }, (_, i) => record.head! + 1 + i));
        const after = await mustRead(key);
        expect(after).toEqual({ ...record, tail: record.head! + 9, tailToken: expect.any(String), claimMs: CLAIM });
        expect(tokens).toContain(after.tailToken);
      });

      it('on a missing record under concurrency: exactly one ticket is served, the others wait behind it in order', async () => {
        const key = newKey('enqueue-race-missing');
        const results = await Promise.all(Array.from({ length: 6 }, () => store.enqueue({ key, token: tok(), claimMs: CLAIM })));
        const tickets = results.map((r) => okRecord(r).tail! - 1).sort((x, y) => x - y);
        const after = await mustRead(key);
        expect(tickets).toEqual(Array.from({ length: 6 }, (_, i) => after.head! + i));
        expect(after.tail).toBe(after.head! + 6);
        expect(ticketsWaiting(after)).toBe(5);
      });
    });

    // ---- release ----

    describe('release', () => {
      it('serves the next ticket: head + 1, fence + 1, a new rvn, released = token, lastHoldMs; the holder attributes go', async () => {
        const { key, holder, waiters } = await line('release', 2, { data: '"x"' });
        const before = await mustRead(key);
        expect(await store.release(key, holdingOf(holder), LEASE, 1_234.6)).toBe(true);
        const after = await mustRead(key);
        expect(after).toEqual({
          ...before,
          ...NO_HOLDER,
          rvn: expect.stringMatching(RVN),
          fencingToken: before.fencingToken! + 1,
          updatedAt: expect.any(Number),
          released: holder.token,
          lastHoldMs: 1_235,
          head: waiters[0]!.ticket,
        });
        expect(after.rvn).not.toBe(before.rvn);
        expect(after.updatedAt).toBeGreaterThanOrEqual(before.updatedAt!);
        // The next waiter holds by its ticket, before it writes anything.
        expect(isHeld(after)).toBe(true);
        expect(ticketsWaiting(after)).toBe(1);
      });

      it('frees the record when nobody waits (head = tail); a negative hold time is recorded as 0, none removes the last one', async () => {
        const key = newKey('release-free');
        const a = await take(key);
        expect(await store.release(key, holdingOf(a), LEASE, -5)).toBe(true);
        const freed = await mustRead(key);
        expect(freed).toMatchObject({ ...NO_HOLDER, head: a.record.tail, tail: a.record.tail, fencingToken: a.record.fencingToken! + 1 });
        expect(freed.lastHoldMs).toBe(0);
        expect(isHeld(freed)).toBe(false);
        expect(ticketsWaiting(freed)).toBe(0);
        const b = await take(key);
        expect(await store.release(key, holdingOf(b), LEASE)).toBe(true);
        // A release without a hold time leaves none: waiters would count the last one again under its token.
        const again = await mustRead(key);
        expect(again.released).toBe(b.token);
        expect(again.lastHoldMs).toBeUndefined();
      });

      it('is true again for the same holding (a retried release, nothing written), false for any other token', async () => {
        const { key, holder } = await line('release-twice', 1);
        expect(await store.release(key, { token: tok() }, LEASE)).toBe(false);
        expect(await store.release(key, { token: tok(), ticket: holder.ticket }, LEASE)).toBe(false);
        expect((await mustRead(key)).token).toBe(holder.token);
        expect(await store.release(key, holdingOf(holder), LEASE)).toBe(true);
        const released = await mustRead(key);
        expect(await store.release(key, holdingOf(holder), LEASE)).toBe(true);
        // The repeat writes nothing: waiters watching the record version are not reset.
        expect(await store.read(key)).toEqual(released);
        expect(await store.release(key, { token: tok() }, LEASE)).toBe(false);
        expect(await store.read(key)).toEqual(released);
      });

      it('is accepted from a holding known only by its token (a lease id)', async () => {
        const key = newKey('release-token');
        const a = await take(key);
        expect(await store.release(key, { token: a.token }, LEASE)).toBe(true);
        expect(await mustRead(key)).toMatchObject({ token: undefined, released: a.token, head: a.record.tail });
      });

      it('recognises a retry by `released` until an acquisition replaces it: free and hand-over remove it', async () => {
        const key = newKey('release-retry-later');
        const a = await take(key);
        expect(await store.release(key, holdingOf(a), LEASE)).toBe(true);
        await take(key);
        // The lost answer of a's release, retried after b took the lock: not recognised any more.
        const held = await mustRead(key);
        expect(held.released).toBeUndefined();
        expect(await store.release(key, holdingOf(a), LEASE)).toBe(false);
        expect(await store.read(key)).toEqual(held);

        const line2 = await line('release-retry-handover', 1);
        const [w1] = line2.waiters as [Waiter];
        expect(await store.release(line2.key, holdingOf(line2.holder), LEASE)).toBe(true);
        // Served, not yet written, then claimed: the release is still recognised.
        expect(await store.release(line2.key, holdingOf(line2.holder), LEASE)).toBe(true);
        okRecord(await heartbeat(line2.key, holdingOf(w1)));
        expect(await store.release(line2.key, holdingOf(line2.holder), LEASE)).toBe(true);
        okRecord(await store.acquire(write(line2.key, tok(), { kind: 'handover', from: holdingOf(w1) })));
        expect((await mustRead(line2.key)).released).toBeUndefined();
        expect(await store.release(line2.key, holdingOf(line2.holder), LEASE)).toBe(false);
      });

      it('recognises a retry after a skip too: a skip leaves `released` as it was', async () => {
        const { key, holder, waiters } = await line('release-retry-skip', 2);
        const [, w2] = waiters as [Waiter, Waiter];
        expect(await store.release(key, holdingOf(holder), LEASE)).toBe(true);
        const passed = okRecord(
          await skip(key, await mustRead(key), w2.ticket, { holder: { token: w2.token, owner: 'w2', leaseMs: LEASE } }),
        );
        expect(passed.released).toBe(holder.token);
        expect(await store.release(key, holdingOf(holder), LEASE)).toBe(true);
        expect(await store.read(key)).toEqual(passed);
      });

      it('is false for a missing record, and creates none', async () => {
        const key = newKey('release-missing');
        expect(await store.release(key, { token: tok() }, LEASE)).toBe(false);
        expect(await store.release(key, { token: tok(), ticket: 0 }, LEASE)).toBe(false);
        expect(await store.read(key)).toBeUndefined();
      });

      it('is false for a waiter whose ticket is not served yet', async () => {
        const { key, waiters } = await line('release-waiter', 2);
        const before = await mustRead(key);
        expect(await store.release(key, holdingOf(waiters[0]!), LEASE)).toBe(false);
        expect(await store.release(key, holdingOf(waiters[1]!), LEASE)).toBe(false);
        expect(await store.read(key)).toEqual(before);
      });
    });

    // ---- a waiter promoted by a release ----

    describe('a promoted waiter (no token, head = its ticket)', () => {
      it('claims the lock with its first heartbeat: token, owner, acquiredAt, lease and data written; same fence and head', async () => {
        const { key, holder, waiters } = await line('promoted-beat', 2);
        const w1 = waiters[0]!;
        expect(await store.release(key, holdingOf(holder), LEASE)).toBe(true);
        const promoted = await mustRead(key);
        const at = Date.now();
        const claimed = okRecord(await heartbeat(key, holdingOf(w1), { owner: 'bob', leaseMs: 60_000, data: '{"w":1}' }));
        expect(claimed).toEqual({
          ...promoted,
          owner: 'bob',
          token: w1.token,
          rvn: expect.stringMatching(RVN),
          leaseMs: 60_000,
          acquiredAt: expect.any(Number),
          updatedAt: claimed.acquiredAt,
          data: '{"w":1}',
        });
        expect(claimed.rvn).not.toBe(promoted.rvn);
        expect(claimed.acquiredAt).toBeGreaterThanOrEqual(at);
        expect(await store.read(key)).toEqual(claimed);
        // From then on it holds by its token too; an owner already written is kept.
        const renewed = okRecord(await heartbeat(key, { token: w1.token }, { owner: 'someone-else' }));
        expect(renewed).toMatchObject({ owner: 'bob', token: w1.token, leaseMs: 60_000, acquiredAt: claimed.acquiredAt });
        expect(await store.release(key, holdingOf(w1), LEASE)).toBe(true);
        expect(await mustRead(key)).toMatchObject({ ...NO_HOLDER, head: waiters[1]!.ticket, released: w1.token });
      });

      it('writes the acquisition time its first heartbeat gives (when it got the lock), and no later one', async () => {
        const { key, holder, waiters } = await line('promoted-acquired-at', 1);
        const w1 = waiters[0]!;
        expect(await store.release(key, holdingOf(holder), LEASE)).toBe(true);
        // A time unlike the write's own: a store that ignored it would write the time of the write.
        const grantedAt = (await mustRead(key)).updatedAt! - 60_000;
        const claimed = okRecord(await heartbeat(key, holdingOf(w1), { acquiredAt: grantedAt }));
        expect(claimed.acquiredAt).toBe(grantedAt);
        const renewed = okRecord(await heartbeat(key, { token: w1.token }, { acquiredAt: grantedAt + 1_000 }));
        expect(renewed.acquiredAt).toBe(grantedAt);
        expect(await mustRead(key)).toMatchObject({ acquiredAt: grantedAt, token: w1.token });
      });

      it('can release without having written: the next ticket is served', async () => {
        const { key, holder, waiters } = await line('promoted-release', 2);
        const [w1, w2] = waiters as [Waiter, Waiter];
        expect(await store.release(key, holdingOf(holder), LEASE)).toBe(true);
        const promoted = await mustRead(key);
        expect(await store.release(key, holdingOf(w1), LEASE, 10)).toBe(true);
        const after = await mustRead(key);
        expect(after).toEqual({
          ...promoted,
          rvn: expect.stringMatching(RVN),
          updatedAt: expect.any(Number),
          fencingToken: promoted.fencingToken! + 1,
          released: w1.token,
          lastHoldMs: 10,
          head: w2.ticket,
        });
        expect(after.rvn).not.toBe(promoted.rvn);
        // Known only by its token, a promoted waiter that never wrote holds nothing.
        expect(await store.release(key, { token: w2.token }, LEASE)).toBe(false);
        expect(await store.release(key, holdingOf(w2), LEASE)).toBe(true);
        expect(isHeld(await mustRead(key))).toBe(false);
      });

      it('holds nothing once the head moved on (a stale ticket): heartbeat, release and hand-over fail', async () => {
        const { key, holder, waiters } = await line('promoted-stale', 2);
        const [w1, w2] = waiters as [Waiter, Waiter];
        expect(await store.release(key, holdingOf(holder), LEASE)).toBe(true);
        // Nobody heard from w1 for a whole claim lease: w2 passes it.
        okRecord(await skip(key, await mustRead(key), w2.ticket));
        const before = await mustRead(key);
        expect(before).toMatchObject({ token: undefined, head: w2.ticket });
        await expectRefused(await heartbeat(key, holdingOf(w1)), key, before);
        expect(await store.release(key, holdingOf(w1), LEASE)).toBe(false);
        expect(await store.read(key)).toEqual(before);
        await expectRefused(await store.acquire(write(key, tok(), { kind: 'handover', from: holdingOf(w1) })), key, before);
      });
    });

    // ---- heartbeat ----

    describe('heartbeat', () => {
      it('renews the rvn and updatedAt; keeps the lease and data unless given; keeps owner, acquiredAt, fence and the line', async () => {
        const { key, holder, waiters } = await line('beat', 1, { leaseMs: 4_000, data: '"d"', owner: 'alice' });
        const before = await mustRead(key);
        const kept = okRecord(await heartbeat(key, holdingOf(holder), { owner: 'not-alice' }));
        expect(kept).toEqual({ ...before, rvn: expect.stringMatching(RVN), updatedAt: expect.any(Number) });
        expect(kept.rvn).not.toBe(before.rvn);
        expect(kept.updatedAt).toBeGreaterThanOrEqual(before.updatedAt!);
        // The answer shows the line: the holder learns how many wait.
        expect(ticketsWaiting(kept)).toBe(1);
        expect(kept.tail).toBe(waiters[0]!.ticket + 1);
        const changed = okRecord(await heartbeat(key, holdingOf(holder), { leaseMs: 9_000, ttlLeaseMs: 9_000, data: '"e"' }));
        expect(changed).toEqual({ ...kept, rvn: expect.stringMatching(RVN), updatedAt: expect.any(Number), leaseMs: 9_000, data: '"e"' });
        expect(changed.rvn).not.toBe(kept.rvn);
        expect(await store.read(key)).toEqual(changed);
      });

      it('fails for a token that does not hold the lock, a waiter not yet served, a released holder and a missing record', async () => {
        const { key, holder, waiters } = await line('beat-wrong', 2);
        const before = await mustRead(key);
        await expectRefused(await heartbeat(key, { token: tok() }, { leaseMs: 5_000 }), key, before);
        await expectRefused(await heartbeat(key, { token: tok(), ticket: holder.ticket }), key, before);
        await expectRefused(await heartbeat(key, holdingOf(waiters[0]!)), key, before);
        await expectRefused(await heartbeat(key, holdingOf(waiters[1]!)), key, before);
        expect(await store.release(key, holdingOf(holder), LEASE)).toBe(true);
        const released = await mustRead(key);
        await expectRefused(await heartbeat(key, holdingOf(holder)), key, released);
        await expectRefused(await heartbeat(key, holdingOf(waiters[1]!)), key, released);
        const missing = newKey('beat-missing');
        await expectRefused(await heartbeat(missing, { token: tok(), ticket: 0 }, { leaseMs: 5_000 }), missing, undefined);
      });
    });

    // ---- skip ----

    describe('skip', () => {
      it('moves head to the target past a silent holder: fence + 1, a new rvn, the holder attributes go; the waiter served holds', async () => {
        const { key, holder, waiters } = await line('skip', 3, { data: '"dead"' });
        const [, w2, w3] = waiters as [Waiter, Waiter, Waiter];
        const seen = await mustRead(key);
        expect(seen.rvn).toBe(holder.record.rvn); // enqueueing keeps the record version
        const at = Date.now();
        const passed = okRecord(await skip(key, seen, w2.ticket));
        expect(passed).toEqual({
          ...seen,
          ...NO_HOLDER,
          rvn: expect.stringMatching(RVN),
          fencingToken: seen.fencingToken! + 1,
          updatedAt: expect.any(Number),
          head: w2.ticket,
        });
        expect(passed.rvn).not.toBe(seen.rvn);
        expect(passed.updatedAt).toBeGreaterThanOrEqual(at);
        expect(passed.released).toBe(seen.released);
        expect(isHeld(passed)).toBe(true);
        expect(ticketsWaiting(passed)).toBe(1);
        expect(await store.read(key)).toEqual(passed);
        // The waiter served claims it with its first write; the passed holder holds nothing.
        expect(await store.release(key, holdingOf(holder), LEASE)).toBe(false);
        expect(okRecord(await heartbeat(key, holdingOf(w2))).token).toBe(w2.token);
        expect(w3.ticket).toBe(passed.tail! - 1);
      });

      it('to tail frees the record: nobody holds or waits, and a free acquisition takes it', async () => {
        const { key, holder, waiters } = await line('skip-free', 1);
        const seen = await mustRead(key);
        const freed = okRecord(await skip(key, seen, seen.tail!));
        expect(freed).toMatchObject({ ...NO_HOLDER, head: waiters[0]!.ticket + 1, tail: waiters[0]!.ticket + 1 });
        expect(isHeld(freed)).toBe(false);
        // The skip raised the fence for the next holder; a free acquisition takes it as it is.
        expect(freed.fencingToken).toBe(holder.record.fencingToken! + 1);
        expect((await take(key)).record.fencingToken).toBe(holder.record.fencingToken! + 1);
      });

      it('with a holder, the writer holds from that write: token, owner, lease, data (or none), acquiredAt', async () => {
        const { key, waiters } = await line('skip-holder', 2, { data: '"dead"' });
        const [w1, w2] = waiters as [Waiter, Waiter];
        const seen = await mustRead(key);
        const at = Date.now();
        const mine = okRecord(
          await skip(key, seen, w1.ticket, { holder: { token: w1.token, owner: 'carol', leaseMs: 3_000, data: '"w1"' } }),
        );
        expect(mine).toEqual({
          ...seen,
          owner: 'carol',
          token: w1.token,
          rvn: expect.stringMatching(RVN),
          leaseMs: 3_000,
          fencingToken: seen.fencingToken! + 1,
          acquiredAt: expect.any(Number),
          updatedAt: mine.acquiredAt,
          data: '"w1"',
          head: w1.ticket,
        });
        expect(mine.acquiredAt).toBeGreaterThanOrEqual(at);
        expect(await store.read(key)).toEqual(mine);
        // Without data, none is kept from the passed holder.
        const next = okRecord(await skip(key, mine, w2.ticket, { holder: { token: w2.token, owner: 'dave', leaseMs: LEASE } }));
        expect(next).toMatchObject({
          token: w2.token,
          owner: 'dave',
          data: undefined,
          head: w2.ticket,
          fencingToken: mine.fencingToken! + 1,
        });
        expect(okRecord(await heartbeat(key, holdingOf(w2))).token).toBe(w2.token);
      });

      it('is refused at a renewed rvn (the holder is alive), on a missing record, beyond tail, and with a holder at tail', async () => {
        const { key, holder } = await line('skip-renewed', 1);
        const seen = await mustRead(key);
        const renewed = okRecord(await heartbeat(key, holdingOf(holder)));
        await expectRefused(await skip(key, seen, seen.head! + 1), key, renewed);
        await expectRefused(await skip(key, renewed, renewed.tail! + 1), key, renewed);
        // A holder holds by a ticket taken: `tail` is nobody's yet.
        const writer = { token: tok(), owner: 'late', leaseMs: LEASE };
        await expectRefused(await skip(key, renewed, renewed.tail!, { holder: writer }), key, renewed);
        const missing = newKey('skip-missing');
        await expectRefused(await store.skip({ key: missing, rvn: tok(), live: undefined, target: 1 }), missing, undefined);
      });

      it('is refused when the roll call changed since it was read; accepted at the roll call seen, for the live ticket', async () => {
        const { key, waiters } = await line('skip-live', 3);
        const [, w2, w3] = waiters as [Waiter, Waiter, Waiter];
        const seen = await mustRead(key);
        expect((await store.markAlive(key, seen.rvn!, w3.ticket)).ok).toBe(true);
        let before = await mustRead(key);
        // Read before anyone answered: a live waiter appeared since.
        await expectRefused(await skip(key, seen, seen.head! + 1), key, before);
        // Read after w3 answered, but w2 answered since.
        expect((await store.markAlive(key, seen.rvn!, w2.ticket)).ok).toBe(true);
        await expectRefused(await skip(key, before, w3.ticket), key, await mustRead(key));
        before = await mustRead(key);
        expect(before.live).toBe(w2.ticket);
        const passed = okRecord(await skip(key, before, w2.ticket));
        expect(passed).toMatchObject({ head: w2.ticket, live: undefined, token: undefined });
        // A roll call that is over does not match a `live` seen during it.
        await expectRefused(await store.skip({ key, rvn: passed.rvn!, live: w2.ticket, target: w3.ticket }), key, passed);
      });
    });

    // ---- markAlive ----

    describe('markAlive', () => {
      it('records the smallest live ticket: a smaller one replaces it, a larger or equal one is refused; the rvn stays', async () => {
        const { key, waiters } = await line('alive', 3);
        const [, w2, w3] = waiters as [Waiter, Waiter, Waiter];
        const seen = await mustRead(key);
        const answer = await store.markAlive(key, seen.rvn!, w3.ticket);
        expect(answer.ok).toBe(true);
        // The answer carries the key alone.
        expect(answer.ok && answer.record).toEqual({ key });
        const marked = await mustRead(key);
        expect(marked).toEqual({ ...seen, live: w3.ticket });
        expect(okRecord(await store.markAlive(key, seen.rvn!, w2.ticket))).toEqual({ key });
        const before = await mustRead(key);
        expect(before).toEqual({ ...seen, live: w2.ticket });
        await expectRefused(await store.markAlive(key, seen.rvn!, w3.ticket), key, before);
        await expectRefused(await store.markAlive(key, seen.rvn!, w2.ticket), key, before);
      });

      it('is refused at another rvn, for a ticket not handed out (>= tail), and on a missing record', async () => {
        const { key, waiters } = await line('alive-refused', 1);
        const seen = await mustRead(key);
        await expectRefused(await store.markAlive(key, tok(), waiters[0]!.ticket), key, seen);
        await expectRefused(await store.markAlive(key, seen.rvn!, seen.tail!), key, seen);
        await expectRefused(await store.markAlive(key, seen.rvn!, seen.tail! + 5), key, seen);
        const missing = newKey('alive-missing');
        await expectRefused(await store.markAlive(missing, tok(), 1), missing, undefined);
        // The last ticket handed out is accepted.
        expect((await store.markAlive(key, seen.rvn!, seen.tail! - 1)).ok).toBe(true);
      });

      it('ends with any write of the holder or of a change of holder: heartbeat, release, hand-over and skip remove live', async () => {
        const { key, holder, waiters } = await line('alive-ends', 3);
        const [w1, w2, w3] = waiters as [Waiter, Waiter, Waiter];
        const mark = async (ticket: number) => {
          const seen = await mustRead(key);
          expect((await store.markAlive(key, seen.rvn!, ticket)).ok).toBe(true);
          expect((await mustRead(key)).live).toBe(ticket);
        };
        await mark(w3.ticket);
        expect(okRecord(await heartbeat(key, holdingOf(holder))).live).toBeUndefined();
        await mark(w3.ticket);
        const b = tok();
        expect(okRecord(await store.acquire(write(key, b, { kind: 'handover', from: holdingOf(holder) }))).live).toBeUndefined();
        await mark(w2.ticket);
        expect(await store.release(key, { token: b }, LEASE)).toBe(true);
        expect((await mustRead(key)).live).toBeUndefined();
        expect((await mustRead(key)).head).toBe(w1.ticket);
        await mark(w3.ticket);
        const seen = await mustRead(key);
        expect(okRecord(await skip(key, seen, w3.ticket)).live).toBeUndefined();
      });
    });

    // ---- fencing across everything ----

    it('gives every holder a fence one above the previous one (hand-over, release and skip raise it; free takes it) and never changes it otherwise', async () => {
      const key = newKey('fence');
      const fences: number[] = [];
      const note = (record: LockRecord) => fences.push(record.fencingToken!);
      const a = await take(key);
      note(a.record); // 0: free
      const b = tok();
      note(okRecord(await store.acquire(write(key, b, { kind: 'handover', from: holdingOf(a) })))); // 1: hand-over
      note(okRecord(await heartbeat(key, { token: b }, { leaseMs: 20_000 }))); // 1: heartbeat
      const [w1, w2, w3] = [await enqueue(key), await enqueue(key), await enqueue(key)];
      note(w3.record); // 1: enqueue
      expect((await store.markAlive(key, w3.record.rvn!, w2.ticket)).ok).toBe(true);
      note(await mustRead(key)); // 1: roll call
      expect(await store.release(key, { token: b }, LEASE)).toBe(true);
      note(await mustRead(key)); // 2: release, w1 served
      note(okRecord(await heartbeat(key, holdingOf(w1), { leaseMs: LEASE }))); // 2: w1 claims it
      note(okRecord(await skip(key, await mustRead(key), w2.ticket))); // 3: skip, w2 served
      const seen = await mustRead(key);
      note(okRecord(await skip(key, seen, w3.ticket, { holder: { token: w3.token, owner: 'w3', leaseMs: LEASE } }))); // 4: skip to the writer
      expect(await store.release(key, holdingOf(w3), LEASE)).toBe(true);
      const freed = await mustRead(key);
      expect(isHeld(freed)).toBe(false);
      note(freed); // 5: release, free: raised for the next holder
      const c = await take(key);
      note(c.record); // 5: free again takes it
      const w4 = await enqueue(key);
      expect(await store.release(key, holdingOf(c), LEASE)).toBe(true);
      note(await mustRead(key)); // 6: release, w4 served
      const w5 = await enqueue(key);
      expect(await store.release(key, holdingOf(w4), LEASE)).toBe(true);
      note(await mustRead(key)); // 7: release, w5 served
      expect(await store.release(key, holdingOf(w5), LEASE)).toBe(true);
      note(await mustRead(key)); // 8: free
      note((await enqueue(key)).record); // 8: a ticket served at once takes it too
      const base = fences[0]!;
      expect(fences.map((f) => f - base)).toEqual([0, 1, 1, 1, 1, 2, 2, 3, 4, 5, 5, 6, 7, 8, 8]);
    });

    // ---- read / scanHeld ----

    describe('read and scanHeld', () => {
      it('read returns undefined for a missing key, and copies: changing a record changes nothing stored', async () => {
        expect(await store.read(newKey('nothing'))).toBeUndefined();
        const key = newKey('copy');
        const write1 = write(key, tok(), { kind: 'free' }, { data: '"orig"' });
        const record = okRecord(await store.acquire(write1));
        const w = await enqueue(key);
        const read = await mustRead(key);
        const snapshot = structuredClone(read);
        record.token = 'mutated';
        w.record.tail = 0;
        read.data = 'mutated';
        read.head = -1;
        write1.data = 'mutated';
        expect(await store.read(key)).toEqual(snapshot);
      });

      it('scanHeld yields every held record whose key starts with the prefix, a promoted waiter that has not written too, and no free one', async () => {
        const prefix = `${newKey('scan')}/`;
        const a = await take(`${prefix}a`, { data: '"a"' });
        // b: its holder released it to a waiter that has not written yet.
        const b = await take(`${prefix}b`);
        await enqueue(`${prefix}b`);
        expect(await store.release(`${prefix}b`, holdingOf(b), LEASE)).toBe(true);
        // c: released with nobody waiting.
        const c = await take(`${prefix}c`);
        expect(await store.release(`${prefix}c`, holdingOf(c), LEASE)).toBe(true);
        // d: its silent holder passed with nobody left in line.
        await take(`${prefix}d`);
        const dSeen = await mustRead(`${prefix}d`);
        okRecord(await skip(`${prefix}d`, dSeen, dSeen.tail!));
        // e: a waiter whose enqueue found it missing holds it by its ticket.
        await enqueue(`${prefix}e`);
        await take(`${newKey('scan-other')}/a`);
        const found: LockRecord[] = [];
        for await (const record of store.scanHeld(prefix)) found.push(record);
        found.sort((x, y) => x.key.localeCompare(y.key));
        expect(found).toEqual([await mustRead(a.record.key), await mustRead(`${prefix}b`), await mustRead(`${prefix}e`)]);
        expect(found[1]!.token).toBeUndefined();
      });

      it("scanHeld('') yields every held record of the store, and no free one", async () => {
        const prefix = `${newKey('scan-all')}/`;
        const a = await take(`${prefix}a`);
        const b = await take(`${prefix}b`);
        await enqueue(`${prefix}b`);
        expect(await store.release(`${prefix}b`, holdingOf(b), LEASE)).toBe(true);
        const c = await take(`${prefix}c`);
        expect(await store.release(`${prefix}c`, holdingOf(c), LEASE)).toBe(true);
        const all: string[] = [];
        for await (const record of store.scanHeld('')) all.push(record.key);
        expect(all).toEqual(expect.arrayContaining([a.record.key, `${prefix}b`]));
        expect(all).not.toContain(`${prefix}c`);
      });
    });
  });
}

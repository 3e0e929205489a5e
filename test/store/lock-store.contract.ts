import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { AcquireCondition, AcquireWrite, LockRecord, LockStorePort, WriteResult } from '../../lib';
import { CLAIM_LEASE_MS } from '../../lib/store/lock-store.protocol';
import { isTransientError } from '../../lib/store/transient-error';

/** A store under test, and how to dispose of whatever it needed (a table, a client). */
export interface StoreUnderTest {
  store: LockStorePort;
  close(): Promise<void>;
}

/** What differs between stores without being a semantic difference. */
export interface ContractTraits {
  /**
   * Whether a failed conditional write reports the record that blocked it (`current`), as
   * DynamoDB does with `ReturnValuesOnConditionCheckFailure: ALL_OLD`. dynalite ignores that
   * parameter; its failures carry `current: undefined`. Where it is given, it must be exact.
   */
  returnsCurrent: boolean;
  /**
   * Whether strings count toward the 400 KB item limit in UTF-8 bytes, as in DynamoDB.
   * dynalite counts UTF-16 code units (as it does for keys), so only ASCII is compared there.
   */
  itemSizeInUtf8?: boolean;
}

/** DynamoDB's answer to an UpdateItem whose item would exceed 400 KB (measured on DynamoDB Local 3.3.0). */
const ITEM_TOO_LARGE = 'Item size to update has exceeded the maximum allowed size';

const tok = () => randomBytes(16).toString('hex');
const LEASE = 10_000;

function okRecord(result: WriteResult): LockRecord {
  if (!result.ok) throw new Error(`expected the write to succeed; it failed against ${JSON.stringify(result.current)}`);
  return result.record;
}

/**
 * The shared contract of {@link LockStorePort}: every method's conditions and effects, as the
 * DynamoDB store defines them. Each implementation runs it (`lock-store.contract.spec.ts`).
 */
export function lockStoreContract(
  name: string,
  makeStore: () => Promise<StoreUnderTest>,
  traits: ContractTraits = { returnsCurrent: false },
): void {
  describe(`LockStorePort contract: ${name}`, () => {
    let under: StoreUnderTest;
    let store: LockStorePort;
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
      owner: `owner-${token.slice(0, 6)}`,
      leaseMs: LEASE,
      condition,
      ...extra,
    });

    /** Takes a free key for a new token. */
    async function take(key: string, extra: Partial<AcquireWrite> = {}): Promise<{ token: string; record: LockRecord }> {
      const token = extra.token ?? tok();
      const record = okRecord(await store.acquire(write(key, token, { kind: 'free' }, extra)));
      return { token, record };
    }

    async function enqueue(key: string, token: string, leaseMs = LEASE, data?: string): Promise<LockRecord> {
      return okRecord(await store.enqueue({ key, token, owner: `owner-${token.slice(0, 6)}`, leaseMs, data }));
    }

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

    const queueTokens = (record: LockRecord | undefined) => record?.queue.map((w) => w.token);

    // ---- acquire ----

    describe('acquire', () => {
      it("'free' creates a missing record: token, owner, lease, data, a new rvn and a fence from the clock in microseconds", async () => {
        const key = newKey('create');
        const before = Date.now();
        const { token, record } = await take(key, { owner: 'alice', leaseMs: 7_000, data: '{"job":1}' });
        const after = Date.now();
        expect(record).toEqual({
          key,
          owner: 'alice',
          token,
          rvn: expect.stringMatching(/^[0-9a-f]{32}$/),
          leaseMs: 7_000,
          fencingToken: expect.any(Number),
          acquiredAt: expect.any(Number),
          updatedAt: expect.any(Number),
          data: '{"job":1}',
          released: undefined,
          queue: [],
        });
        expect(record.fencingToken).toBeGreaterThanOrEqual(before * 1000 + 1);
        expect(record.fencingToken).toBeLessThanOrEqual(after * 1000 + 1);
        expect(record.acquiredAt).toBeGreaterThanOrEqual(before);
        expect(record.acquiredAt).toBeLessThanOrEqual(after);
        expect(record.updatedAt).toBe(record.acquiredAt);
        expect(await store.read(key)).toEqual(record);
      });

      it("'free' is refused while another token holds the record, reporting the holder", async () => {
        const key = newKey('busy');
        const { record } = await take(key);
        await expectRefused(await store.acquire(write(key, tok(), { kind: 'free' })), key, record);
      });

      it("'free' retried by the holder's own token succeeds again (OR #token = :token) and raises the fence again", async () => {
        const key = newKey('retry-free');
        const token = tok();
        const first = okRecord(await store.acquire(write(key, token, { kind: 'free' })));
        const second = okRecord(await store.acquire(write(key, token, { kind: 'free' })));
        expect(second.token).toBe(token);
        expect(second.fencingToken).toBe(first.fencingToken! + 1);
        expect(second.rvn).not.toBe(first.rvn);
      });

      it("'free' takes a released record with an empty queue: fence + 1, released token cleared, data replaced or dropped", async () => {
        const key = newKey('reuse');
        const a = await take(key, { data: '"a"' });
        expect(await store.release(key, a.token, LEASE)).toBe(true);
        const b = await take(key);
        expect(b.record.fencingToken).toBe(a.record.fencingToken! + 1);
        expect(b.record.released).toBeUndefined();
        expect(b.record.data).toBeUndefined();
        expect(b.record.owner).toBe(`owner-${b.token.slice(0, 6)}`);
      });

      it("'free' is refused on a released record that still has a queue", async () => {
        const key = newKey('free-queued');
        const a = await take(key);
        await enqueue(key, tok());
        expect(await store.release(key, a.token, LEASE)).toBe(true);
        const before = await mustRead(key);
        expect(before.token).toBeUndefined();
        await expectRefused(await store.acquire(write(key, tok(), { kind: 'free' })), key, before);
      });

      it("'head' without queuedAt needs only a free record: it ignores the queue, which stays as it was", async () => {
        const key = newKey('head-plain');
        const a = await take(key);
        const waiter = tok();
        await enqueue(key, waiter);
        expect(await store.release(key, a.token, LEASE)).toBe(true);
        const b = okRecord(await store.acquire(write(key, tok(), { kind: 'head' })));
        expect(queueTokens(b)).toEqual([waiter]);
        expect(b.fencingToken).toBe(a.record.fencingToken! + 1);
        // A held record refuses it, except for its holder's own retry.
        const before = await mustRead(key);
        await expectRefused(await store.acquire(write(key, tok(), { kind: 'head' })), key, before);
        expect(okRecord(await store.acquire(write(key, b.token!, { kind: 'head' }))).fencingToken).toBe(b.fencingToken! + 1);
      });

      it("'head' with queuedAt: the queued waiter at that index takes the released record and leaves the queue, once", async () => {
        const key = newKey('head');
        const a = await take(key);
        const [w1, w2] = [tok(), tok()];
        await enqueue(key, w1, 3_000);
        await enqueue(key, w2);
        expect(await store.release(key, a.token, LEASE)).toBe(true);
        const taken = okRecord(await store.acquire(write(key, w1, { kind: 'head' }, { queuedAt: 0, data: '"mine"' })));
        expect(taken).toMatchObject({ token: w1, leaseMs: LEASE, data: '"mine"', fencingToken: a.record.fencingToken! + 1 });
        expect(queueTokens(taken)).toEqual([w2]);
        // The same write again is not re-applied: it would dequeue someone else.
        const before = await mustRead(key);
        await expectRefused(await store.acquire(write(key, w1, { kind: 'head' }, { queuedAt: 0 })), key, before);
        expect(before.fencingToken).toBe(taken.fencingToken);
        // Dequeuing also forgot the token: once it has handed the lock on, it may queue again.
        okRecord(await store.acquire(write(key, tok(), { kind: 'handover', fromToken: w1 })));
        expect(queueTokens(await enqueue(key, w1))).toEqual([w2, w1]);
      });

      it("'head' with queuedAt is refused at a stale index, while the record is held, and for a token not queued", async () => {
        const key = newKey('head-refused');
        const a = await take(key);
        const [w1, w2] = [tok(), tok()];
        await enqueue(key, w1);
        await enqueue(key, w2);
        let before = await mustRead(key);
        await expectRefused(await store.acquire(write(key, w1, { kind: 'head' }, { queuedAt: 0 })), key, before); // held
        expect(await store.release(key, a.token, LEASE)).toBe(true);
        before = await mustRead(key);
        await expectRefused(await store.acquire(write(key, w1, { kind: 'head' }, { queuedAt: 1 })), key, before); // wrong index
        await expectRefused(await store.acquire(write(key, tok(), { kind: 'head' }, { queuedAt: 0 })), key, before); // not queued
        await expectRefused(await store.acquire(write(key, w2, { kind: 'head' }, { queuedAt: 5 })), key, before); // past the end
        // The second waiter may take it from its own index: the condition is "free and at that index".
        const taken = okRecord(await store.acquire(write(key, w2, { kind: 'head' }, { queuedAt: 1 })));
        expect(queueTokens(taken)).toEqual([w1]);
      });

      it("'free' with queuedAt can never succeed (a queued writer means the queue is not empty)", async () => {
        const key = newKey('free-queuedAt');
        const a = await take(key);
        const w = tok();
        await enqueue(key, w);
        expect(await store.release(key, a.token, LEASE)).toBe(true);
        const before = await mustRead(key);
        await expectRefused(await store.acquire(write(key, w, { kind: 'free' }, { queuedAt: 0 })), key, before);
      });

      it("'takeover' replaces a holder whose rvn is unchanged; a renewed rvn refuses it; its own retry succeeds", async () => {
        const key = newKey('takeover');
        const dead = await take(key);
        const live = await take(newKey('takeover-live'));
        const renewed = okRecord(await store.heartbeat(live.record.key, live.token, undefined));
        // The renewed holder's old rvn no longer matches.
        await expectRefused(
          await store.acquire(write(live.record.key, tok(), { kind: 'takeover', rvn: live.record.rvn! })),
          live.record.key,
          renewed,
        );
        const heir = tok();
        const taken = okRecord(await store.acquire(write(key, heir, { kind: 'takeover', rvn: dead.record.rvn! })));
        expect(taken).toMatchObject({ token: heir, fencingToken: dead.record.fencingToken! + 1, released: undefined });
        expect(taken.rvn).not.toBe(dead.record.rvn);
        // A retried takeover matches its own token (the rvn has changed) and raises the fence again.
        const again = okRecord(await store.acquire(write(key, heir, { kind: 'takeover', rvn: dead.record.rvn! })));
        expect(again.fencingToken).toBe(taken.fencingToken! + 1);
        // On a missing record there is nothing to take over.
        const missing = newKey('takeover-missing');
        await expectRefused(await store.acquire(write(missing, tok(), { kind: 'takeover', rvn: tok() })), missing, undefined);
      });

      it("'takeover' with queuedAt: a queued waiter replaces a dead holder and leaves the queue; not re-applied", async () => {
        const key = newKey('takeover-queued');
        const dead = await take(key);
        const [w1, w2] = [tok(), tok()];
        await enqueue(key, w1);
        await enqueue(key, w2);
        const watched = await mustRead(key);
        expect(watched.rvn).toBe(dead.record.rvn); // enqueueing does not renew the record version
        const taken = okRecord(await store.acquire(write(key, w2, { kind: 'takeover', rvn: watched.rvn! }, { queuedAt: 1 })));
        expect(taken.token).toBe(w2);
        expect(taken.fencingToken).toBe(dead.record.fencingToken! + 1);
        expect(queueTokens(taken)).toEqual([w1]);
        const before = await mustRead(key);
        // The same write again: the rvn changed, and a dequeuing write does not match its own token.
        await expectRefused(await store.acquire(write(key, w2, { kind: 'takeover', rvn: watched.rvn! }, { queuedAt: 1 })), key, before);
        await expectRefused(await store.acquire(write(key, w2, { kind: 'takeover', rvn: taken.rvn! }, { queuedAt: 0 })), key, before);
      });

      it("'handover' swaps the holder's token for the next one's; refused from a token that does not hold it; retry succeeds", async () => {
        const key = newKey('handover');
        const a = await take(key, { data: '"a"' });
        const before = await mustRead(key);
        await expectRefused(await store.acquire(write(key, tok(), { kind: 'handover', fromToken: tok() })), key, before);
        const b = tok();
        const handed = okRecord(await store.acquire(write(key, b, { kind: 'handover', fromToken: a.token })));
        expect(handed).toMatchObject({ token: b, fencingToken: a.record.fencingToken! + 1, data: undefined });
        const again = okRecord(await store.acquire(write(key, b, { kind: 'handover', fromToken: a.token })));
        expect(again.fencingToken).toBe(handed.fencingToken! + 1);
        // The previous holder's token releases nothing now.
        expect(await store.release(key, a.token, LEASE)).toBe(false);
      });

      it('lets exactly one of many concurrent writers take a free record', async () => {
        const key = newKey('race');
        const results = await Promise.all(Array.from({ length: 8 }, () => store.acquire(write(key, tok(), { kind: 'free' }))));
        const winners = results.filter((r) => r.ok);
        expect(winners).toHaveLength(1);
        expect((await mustRead(key)).token).toBe(winners[0]!.ok && winners[0]!.record.token);
      });
    });

    // ---- enqueue / leave ----

    describe('enqueue', () => {
      it('appends waiters in arrival order while the record is held, without a new rvn, updatedAt or fence', async () => {
        const key = newKey('enqueue');
        const { record } = await take(key);
        const [w1, w2, w3] = [tok(), tok(), tok()];
        await enqueue(key, w1);
        await enqueue(key, w2);
        const last = await enqueue(key, w3);
        expect(last.queue).toEqual([
          { token: w1, owner: `owner-${w1.slice(0, 6)}` },
          { token: w2, owner: `owner-${w2.slice(0, 6)}` },
          { token: w3, owner: `owner-${w3.slice(0, 6)}` },
        ]);
        expect(last).toMatchObject({
          token: record.token,
          rvn: record.rvn,
          updatedAt: record.updatedAt,
          fencingToken: record.fencingToken,
        });
        expect(await store.read(key)).toEqual(last);
      });

      it('refuses a token already queued (a retried enqueue)', async () => {
        const key = newKey('enqueue-twice');
        await take(key);
        const w = tok();
        await enqueue(key, w);
        const before = await mustRead(key);
        await expectRefused(await store.enqueue({ key, token: w, owner: 'x', leaseMs: LEASE }), key, before);
      });

      it("refuses the holder's own token: a waiter never queues behind itself", async () => {
        const key = newKey('enqueue-own');
        const held = await take(key);
        const before = await mustRead(key);
        await expectRefused(await store.enqueue({ key, token: held.token, owner: 'x', leaseMs: LEASE }), key, before);
      });

      it('refuses a missing record and a free one with nobody queued', async () => {
        const missing = newKey('enqueue-missing');
        await expectRefused(await store.enqueue({ key: missing, token: tok(), owner: 'x', leaseMs: LEASE }), missing, undefined);
        const key = newKey('enqueue-free');
        const a = await take(key);
        expect(await store.release(key, a.token, LEASE)).toBe(true);
        const before = await mustRead(key);
        await expectRefused(await store.enqueue({ key, token: tok(), owner: 'x', leaseMs: LEASE }), key, before);
      });

      it('accepts a free record while others are still queued (its head has not taken it yet)', async () => {
        const key = newKey('enqueue-behind');
        const a = await take(key);
        const w1 = tok();
        await enqueue(key, w1);
        expect(await store.release(key, a.token, LEASE)).toBe(true);
        const w2 = tok();
        expect(queueTokens(await enqueue(key, w2))).toEqual([w1, w2]);
      });

      it('keeps every one of many concurrent enqueues (no lost update)', async () => {
        const key = newKey('enqueue-race');
        await take(key);
        const tokens = Array.from({ length: 8 }, tok);
        const results = await Promise.all(tokens.map((token) => store.enqueue({ key, token, owner: 'x', leaseMs: LEASE })));
        expect(results.every((r) => r.ok)).toBe(true);
        expect(new Set(queueTokens(await store.read(key)))).toEqual(new Set(tokens));
      });
    });

    describe('leave', () => {
      it('takes the waiter at an index out of the queue; the rest keep their order', async () => {
        const key = newKey('leave');
        await take(key);
        const [w1, w2, w3] = [tok(), tok(), tok()];
        for (const w of [w1, w2, w3]) await enqueue(key, w);
        const before = await mustRead(key);
        const result = await store.leave(key, w2, 1);
        expect(result.ok).toBe(true);
        expect(result.ok && result.record.key).toBe(key);
        const after = await mustRead(key);
        expect(queueTokens(after)).toEqual([w1, w3]);
        // The holder's record is untouched: same token, rvn, fence.
        expect(after).toEqual({ ...before, queue: after.queue });
      });

      it('fails with a stale index or another token at it, changing nothing', async () => {
        const key = newKey('leave-stale');
        await take(key);
        const [w1, w2, w3] = [tok(), tok(), tok()];
        for (const w of [w1, w2, w3]) await enqueue(key, w);
        expect((await store.leave(key, w2, 1)).ok).toBe(true);
        const before = await mustRead(key);
        await expectRefused(await store.leave(key, w3, 2), key, before); // w3 moved to 1
        await expectRefused(await store.leave(key, w3, 0), key, before); // w1 is at 0
        await expectRefused(await store.leave(key, w2, 1), key, before); // a retried leave
        const missing = newKey('leave-missing');
        await expectRefused(await store.leave(missing, w1, 0), missing, undefined);
        expect((await store.leave(key, w3, 1)).ok).toBe(true);
        expect(queueTokens(await store.read(key))).toEqual([w1]);
      });

      it('forgets the token, so it may queue again', async () => {
        const key = newKey('leave-requeue');
        await take(key);
        const w = tok();
        await enqueue(key, w);
        expect((await store.leave(key, w, 0)).ok).toBe(true);
        expect(queueTokens(await enqueue(key, w))).toEqual([w]);
      });

      it('rejects a negative index (DynamoDB: a malformed expression), changing nothing', async () => {
        const key = newKey('leave-negative');
        await take(key);
        const w = tok();
        await enqueue(key, w);
        const before = await mustRead(key);
        await expect(store.leave(key, w, -1)).rejects.toMatchObject({ name: 'ValidationException' });
        expect(await store.read(key)).toEqual(before);
      });
    });

    // ---- promote ----

    describe('promote', () => {
      it("moves the head's token, owner, lease (capped at the claim lease) and small data into the lock; fence + 1; released = promoter", async () => {
        const key = newKey('promote');
        const a = await take(key, { data: '"holder"' });
        const [w1, w2] = [tok(), tok()];
        await enqueue(key, w1, 60_000, '{"w":1}');
        // Data over 256 bytes stays out of the queue: its waiter writes it once promoted.
        await enqueue(key, w2, 2_000, JSON.stringify('x'.repeat(300)));
        const before = Date.now();
        const promoted = okRecord(await store.promote(key, a.token, LEASE));
        expect(promoted).toEqual({
          key,
          owner: `owner-${w1.slice(0, 6)}`,
          token: w1,
          rvn: expect.stringMatching(/^[0-9a-f]{32}$/),
          leaseMs: CLAIM_LEASE_MS,
          fencingToken: a.record.fencingToken! + 1,
          acquiredAt: expect.any(Number),
          updatedAt: expect.any(Number),
          data: '{"w":1}',
          released: a.token,
          queue: [{ token: w2, owner: `owner-${w2.slice(0, 6)}` }],
        });
        expect(promoted.rvn).not.toBe(a.record.rvn);
        expect(promoted.acquiredAt).toBeGreaterThanOrEqual(before);
        expect(await store.read(key)).toEqual(promoted);
        // A heartbeat can set the holder's lease and data.
        const confirmed = okRecord(await store.heartbeat(key, w1, 60_000, 60_000, '{"w":2}'));
        expect(confirmed).toMatchObject({ token: w1, leaseMs: 60_000, data: '{"w":2}', fencingToken: promoted.fencingToken });
        // Next in line: a lease shorter than the claim lease is kept; its large data was not queued.
        const next = okRecord(await store.promote(key, w1, LEASE));
        expect(next).toMatchObject({
          token: w2,
          leaseMs: 2_000,
          data: undefined,
          released: w1,
          fencingToken: promoted.fencingToken! + 1,
          queue: [],
        });
      });

      it('fails with an empty queue, for a token that does not hold the lock, and when retried', async () => {
        const key = newKey('promote-refused');
        const a = await take(key);
        let before = await mustRead(key);
        await expectRefused(await store.promote(key, a.token, LEASE), key, before); // nobody queued
        const w = tok();
        await enqueue(key, w);
        before = await mustRead(key);
        await expectRefused(await store.promote(key, tok(), LEASE), key, before); // not the holder
        await expectRefused(await store.promote(key, w, LEASE), key, before); // a waiter is not the holder
        okRecord(await store.promote(key, a.token, LEASE));
        before = await mustRead(key);
        // A retried promotion fails; the record shows it happened (released = the promoter's token).
        const retry = await store.promote(key, a.token, LEASE);
        await expectRefused(retry, key, before);
        expect(before.released).toBe(a.token);
        const missing = newKey('promote-missing');
        await expectRefused(await store.promote(missing, tok(), LEASE), missing, undefined);
      });

      it('hands the promoted waiter a lock it can renew and release', async () => {
        const key = newKey('promote-then');
        const a = await take(key);
        const w = tok();
        await enqueue(key, w);
        okRecord(await store.promote(key, a.token, LEASE));
        // Its token stays in the queued set while it holds (promote drops the promoter's): it cannot queue again yet.
        const holding = await mustRead(key);
        await expectRefused(await store.enqueue({ key, token: w, owner: 'x', leaseMs: LEASE }), key, holding);
        const renewed = okRecord(await store.heartbeat(key, w, 20_000));
        expect(renewed).toMatchObject({ token: w, leaseMs: 20_000 });
        expect(await store.release(key, w, LEASE)).toBe(true);
        // The record is free with nobody queued: 'free' takes it, and the promoted token may queue again later.
        const b = await take(key);
        expect(queueTokens(await enqueue(key, w))).toEqual([w]);
        expect(b.record.fencingToken).toBe(renewed.fencingToken! + 1);
      });
    });

    // Regression: a hand-over (or takeover) drops the previous holder's token from the queued set,
    // which would otherwise grow on busy keys.
    it("forgets a promoted holder's token once it hands the lock over: that token may queue again", async () => {
      const key = newKey('queued-leak');
      const a = await take(key);
      const w = tok();
      await enqueue(key, w);
      okRecord(await store.promote(key, a.token, LEASE));
      okRecord(await store.acquire(write(key, tok(), { kind: 'handover', fromToken: w })));
      expect(queueTokens(await enqueue(key, w))).toEqual([w]);
    });

    // ---- heartbeat ----

    describe('heartbeat', () => {
      it('renews the rvn and updatedAt; keeps the lease when none is given, sets it otherwise; shows the queue', async () => {
        const key = newKey('beat');
        const a = await take(key, { leaseMs: 4_000, data: '"d"' });
        const w = tok();
        await enqueue(key, w);
        const kept = okRecord(await store.heartbeat(key, a.token, undefined));
        expect(kept.rvn).not.toBe(a.record.rvn);
        expect(kept.updatedAt).toBeGreaterThanOrEqual(a.record.updatedAt!);
        expect(kept).toMatchObject({
          token: a.token,
          leaseMs: 4_000,
          data: '"d"',
          fencingToken: a.record.fencingToken,
          acquiredAt: a.record.acquiredAt,
        });
        expect(queueTokens(kept)).toEqual([w]);
        const changed = okRecord(await store.heartbeat(key, a.token, 9_000, 9_000));
        expect(changed.leaseMs).toBe(9_000);
        expect(changed.rvn).not.toBe(kept.rvn);
        expect(await store.read(key)).toEqual(changed);
      });

      it('fails for a token that does not hold the lock, reporting the record as it is', async () => {
        const key = newKey('beat-wrong');
        const a = await take(key);
        const before = await mustRead(key);
        await expectRefused(await store.heartbeat(key, tok(), 5_000), key, before);
        expect(await store.release(key, a.token, LEASE)).toBe(true);
        const released = await mustRead(key);
        await expectRefused(await store.heartbeat(key, a.token, undefined), key, released);
        const missing = newKey('beat-missing');
        await expectRefused(await store.heartbeat(missing, tok(), 5_000), missing, undefined);
      });
    });

    // ---- release ----

    describe('release', () => {
      it('clears token, owner and data; keeps the fence, lease and queue; records the released token; new rvn', async () => {
        const key = newKey('release');
        const a = await take(key, { data: '"x"' });
        const w = tok();
        await enqueue(key, w);
        const before = await mustRead(key);
        expect(await store.release(key, a.token, LEASE)).toBe(true);
        const after = await mustRead(key);
        expect(after).toEqual({
          ...before,
          owner: undefined,
          token: undefined,
          data: undefined,
          released: a.token,
          rvn: expect.stringMatching(/^[0-9a-f]{32}$/),
          updatedAt: expect.any(Number),
        });
        expect(after.rvn).not.toBe(before.rvn);
        expect(after.updatedAt).toBeGreaterThanOrEqual(before.updatedAt!);
      });

      it('is true again for the same token (a retried release), false for any other token', async () => {
        const key = newKey('release-twice');
        const a = await take(key);
        expect(await store.release(key, tok(), LEASE)).toBe(false);
        expect((await mustRead(key)).token).toBe(a.token);
        expect(await store.release(key, a.token, LEASE)).toBe(true);
        const released = await mustRead(key);
        expect(await store.release(key, a.token, LEASE)).toBe(true);
        // The repeat writes nothing: waiters watching the record version are not reset.
        expect(await mustRead(key)).toEqual(released);
        const before = await mustRead(key);
        expect(await store.release(key, tok(), LEASE)).toBe(false);
        expect(await store.read(key)).toEqual(before);
        // Once another holder took it, the old token releases nothing.
        const b = await take(key);
        expect(await store.release(key, a.token, LEASE)).toBe(false);
        expect((await mustRead(key)).token).toBe(b.token);
      });

      // Regression: `released` records the promoter's token, but it must not let that stale token
      // release the promoted holder's lock.
      it('is false for a token that promoted the lock away: the promoted holder keeps it', async () => {
        const key = newKey('release-after-promote');
        const a = await take(key);
        const w = tok();
        await enqueue(key, w);
        okRecord(await store.promote(key, a.token, LEASE));
        const before = await mustRead(key);
        expect(await store.release(key, a.token, LEASE)).toBe(false);
        expect(await store.read(key)).toEqual(before);
      });

      it('is false for a missing record, and creates none', async () => {
        const key = newKey('release-missing');
        expect(await store.release(key, tok(), LEASE)).toBe(false);
        expect(await store.read(key)).toBeUndefined();
      });
    });

    // ---- read / scanHeld ----

    describe('read and scanHeld', () => {
      it('read returns undefined for a missing key, and copies: changing a record changes nothing stored', async () => {
        expect(await store.read(newKey('nothing'))).toBeUndefined();
        const key = newKey('copy');
        const write1 = write(key, tok(), { kind: 'free' }, { data: '"orig"' });
        const record = okRecord(await store.acquire(write1));
        await enqueue(key, tok());
        const read = await mustRead(key);
        const snapshot = structuredClone(read);
        record.token = 'mutated';
        read.queue.push({ token: 'mutated' });
        read.data = 'mutated';
        write1.data = 'mutated';
        expect(await store.read(key)).toEqual(snapshot);
      });

      it('scanHeld yields every held record whose key starts with the prefix, and no free one', async () => {
        const prefix = `${newKey('scan')}/`;
        const a = await take(`${prefix}a`, { data: '"a"' });
        const b = await take(`${prefix}b`);
        const c = await take(`${prefix}c`);
        expect(await store.release(`${prefix}c`, c.token, LEASE)).toBe(true);
        const other = await take(`${newKey('scan-other')}/a`);
        const found: LockRecord[] = [];
        for await (const record of store.scanHeld(prefix)) found.push(record);
        found.sort((x, y) => x.key.localeCompare(y.key));
        expect(found).toEqual([await mustRead(a.record.key), await mustRead(b.record.key)]);
        const all: string[] = [];
        for await (const record of store.scanHeld('')) all.push(record.key);
        expect(all).toEqual(expect.arrayContaining([a.record.key, b.record.key, other.record.key]));
        expect(all).not.toContain(`${prefix}c`);
      });
    });

    // ---- DynamoDB's 400 KB item limit ----

    describe('item size', () => {
      /** The write failed as DynamoDB fails it: a client error, never retried, not transient. */
      async function expectTooLarge(pending: Promise<unknown>): Promise<void> {
        const error = await pending.then(
          () => undefined,
          (reason: unknown) => reason,
        );
        expect(error).toMatchObject({ name: 'ValidationException', message: ITEM_TOO_LARGE, $metadata: { httpStatusCode: 400 } });
        expect(isTransientError(error)).toBe(false);
      }

      // With the key, owner, tokens, counters and TTL (~186 bytes), a holder's data of 408,900 bytes
      // leaves ~514 of the 409,600: one waiter with 200 bytes of data (~321 bytes with its queue
      // and set entries) fits, a second (~307) does not; a waiter without data (~107) still fits.
      it('refuses a write that would make the item larger than 400 KB, changing nothing', async () => {
        const key = newKey('full');
        await expectTooLarge(store.acquire(write(key, tok(), { kind: 'free' }, { data: 'x'.repeat(409_600) })));
        expect(await store.read(key)).toBeUndefined();

        const holder = await take(key, { data: 'x'.repeat(408_900) });
        await enqueue(key, tok(), LEASE, 'd'.repeat(200));
        let before = await mustRead(key);
        await expectTooLarge(store.enqueue({ key, token: tok(), owner: 'owner-late01', leaseMs: LEASE, data: 'd'.repeat(200) }));
        expect(await store.read(key)).toEqual(before);
        const small = tok();
        expect(queueTokens(await enqueue(key, small))).toEqual([...queueTokens(before)!, small]);

        before = await mustRead(key);
        await expectTooLarge(store.heartbeat(key, holder.token, LEASE, LEASE, 'y'.repeat(409_100)));
        expect(await store.read(key)).toEqual(before);
        // Smaller writes still pass: a plain heartbeat, and the promotion that drops the big data.
        okRecord(await store.heartbeat(key, holder.token, LEASE));
        const promoted = okRecord(await store.promote(key, holder.token, LEASE));
        expect(promoted.data).toBe('d'.repeat(200));
      });

      it('counts strings in UTF-8 bytes', async () => {
        if (!traits.itemSizeInUtf8) return;
        const key = newKey('utf8');
        // 204,800 characters, 409,600 bytes.
        await expectTooLarge(store.acquire(write(key, tok(), { kind: 'free' }, { data: 'é'.repeat(204_800) })));
        expect(await store.read(key)).toBeUndefined();
        expect((await take(key, { data: 'é'.repeat(204_000) })).record.data).toHaveLength(204_000);
      });
    });

    // ---- fencing across everything ----

    it('raises the fence by exactly one with every change of holder, and never otherwise', async () => {
      const key = newKey('fence');
      const fences: number[] = [];
      const note = (record: LockRecord) => fences.push(record.fencingToken!);
      const a = await take(key);
      note(a.record);
      const b = tok();
      note(okRecord(await store.acquire(write(key, b, { kind: 'handover', fromToken: a.token })))); // handover
      note(okRecord(await store.heartbeat(key, b, 20_000))); // no change
      const [w1, w2, w3] = [tok(), tok(), tok()];
      note(await enqueue(key, w1)); // no change
      await enqueue(key, w2);
      await enqueue(key, w3);
      expect((await store.leave(key, w3, 2)).ok).toBe(true);
      note(await mustRead(key)); // no change
      note(okRecord(await store.promote(key, b, LEASE))); // promotion: w1
      expect(await store.release(key, w1, LEASE)).toBe(true);
      note(await mustRead(key)); // release keeps it
      note(okRecord(await store.acquire(write(key, w2, { kind: 'head' }, { queuedAt: 0 })))); // head
      const watched = await mustRead(key);
      const heir = tok();
      note(okRecord(await store.acquire(write(key, heir, { kind: 'takeover', rvn: watched.rvn! })))); // takeover
      expect(await store.release(key, heir, LEASE)).toBe(true);
      note(await mustRead(key));
      note((await take(key)).record); // free again
      const base = fences[0]!;
      expect(fences.map((f) => f - base)).toEqual([0, 1, 1, 1, 1, 2, 2, 3, 4, 4, 5]);
    });
  });
}

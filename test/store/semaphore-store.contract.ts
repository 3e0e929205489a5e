import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { holderEntryOf, type SemaphoreRecord } from '../../lib/store/semaphore/semaphore.record';
import type { SemaphoreGrant, SemaphoreStorePort, SemaphoreWriteResult } from '../../lib/store/semaphore/semaphore-store.port';
import type { ContractTraits } from './support/contract-stores';

/** A semaphore store under test, and how to dispose of whatever it needed. */
export interface SemaphoreStoreUnderTest {
  store: SemaphoreStorePort;
  close(): Promise<void>;
}

const tok = () => randomBytes(16).toString('hex');
const LEASE = 10_000;
const LIMIT = 3;

function okRecord(result: SemaphoreWriteResult): SemaphoreRecord {
  if (!result.ok) throw new Error(`expected the write to succeed; it failed against ${JSON.stringify(result.current)}`);
  return result.record;
}

/**
 * The shared contract of {@link SemaphoreStorePort}: every write's condition and effect, as the
 * DynamoDB store defines them. The DynamoDB store (on each test server) and the memory store run it
 * (`semaphore-store.contract.spec.ts`).
 */
export function semaphoreStoreContract(name: string, makeStore: () => Promise<SemaphoreStoreUnderTest>, traits: ContractTraits): void {
  describe(`SemaphoreStorePort contract: ${name}`, () => {
    let under: SemaphoreStoreUnderTest;
    let store: SemaphoreStorePort;
    let seq = 0;
    const newKey = () => `sem-contract/${++seq}-${tok().slice(0, 6)}`;

    beforeAll(async () => {
      under = await makeStore();
      store = under.store;
    });
    afterAll(() => under?.close());

    const grantOf = (key: string, seen: SemaphoreRecord | undefined, extra: Partial<SemaphoreGrant> = {}): SemaphoreGrant => ({
      key,
      limit: LIMIT,
      token: tok(),
      owner: 'host:1',
      leaseMs: LEASE,
      create: seen === undefined,
      ...extra,
    });

    /** A semaphore with `holders` holders (the first grant creates it). */
    async function withHolders(holders: number): Promise<{ key: string; record: SemaphoreRecord; tokens: string[] }> {
      const key = newKey();
      let record: SemaphoreRecord | undefined;
      const tokens: string[] = [];
      for (let i = 0; i < holders; i++) {
        const write = grantOf(key, record);
        record = okRecord(await store.grant(write));
        tokens.push(write.token);
      }
      return { key, record: record!, tokens };
    }

    /** The write failed, changed nothing, and reported the item as it was where the store reports one. */
    async function refusedUnchanged(result: SemaphoreWriteResult, key: string, before: SemaphoreRecord | undefined): Promise<void> {
      expect(result.ok).toBe(false);
      const now = await store.read(key);
      expect(now).toEqual(before);
      if (traits.returnsCurrent && !result.ok) expect(result.current).toEqual(before);
    }

    it('a first grant creates the item: one holder, the fencing counter from the clock in microseconds, an empty line', async () => {
      const key = newKey();
      const write = grantOf(key, undefined);
      const before = Date.now() * 1000;
      const record = okRecord(await store.grant(write));
      expect(record).toMatchObject({ key, limit: LIMIT, count: 1, gone: [] });
      expect(record.head).toBe(record.tail);
      expect(record.fencingToken).toBeGreaterThanOrEqual(before);
      const holder = holderEntryOf(record, write.token)!;
      expect(holder).toMatchObject({ owner: 'host:1', leaseMs: LEASE, fencingToken: record.fencingToken });
      expect(holder.version).toMatch(/^[0-9a-f]{32}$/);
      expect(await store.read(key)).toEqual(record);
      // A second creation is refused: the item exists.
      await refusedUnchanged(await store.grant(grantOf(key, undefined)), key, record);
    });

    it('free grants: one more holder each, its fencing token the counter plus one; refused at the limit, for another limit or a token already holding', async () => {
      const { key, record, tokens } = await withHolders(2);
      expect(record.count).toBe(2);
      const [first, second] = record.holders;
      expect(second!.fencingToken).toBe(first!.fencingToken + 1);
      expect(record.fencingToken).toBe(second!.fencingToken);
      await refusedUnchanged(await store.grant(grantOf(key, record, { limit: LIMIT + 1 })), key, record);
      await refusedUnchanged(await store.grant(grantOf(key, record, { token: tokens[0] })), key, record);
      const third = okRecord(await store.grant(grantOf(key, record)));
      expect(third.count).toBe(3);
      expect(third.fencingToken).toBe(record.fencingToken + 1);
      expect(third.holders.map((h) => h.fencingToken)).toEqual([first!.fencingToken, second!.fencingToken, third.fencingToken]);
      await refusedUnchanged(await store.grant(grantOf(key, third)), key, third);
      // Concurrent grants for the last free slots: as many succeed as there are slots, with distinct tokens.
      expect(await store.release(key, tokens[0]!, LEASE)).toBe(true);
      expect(await store.release(key, tokens[1]!, LEASE)).toBe(true);
      const racing = await Promise.all(Array.from({ length: 5 }, () => store.grant(grantOf(key, third))));
      const won = racing.filter((r) => r.ok);
      expect(won).toHaveLength(2);
      const final = (await store.read(key))!;
      expect(final.count).toBe(3);
      expect(new Set(final.holders.map((h) => h.fencingToken)).size).toBe(3);
      expect(final.fencingToken).toBe(third.fencingToken + 2);
    });

    it('a grant on a missing item is refused (no item is created but by `create`)', async () => {
      const key = newKey();
      const result = await store.grant(grantOf(key, undefined, { create: false }));
      expect(result.ok).toBe(false);
      if (!result.ok) expect(result.current).toBeUndefined();
      expect(await store.read(key)).toBeUndefined();
    });

    it('a ticket in line: tail moves on, a retry of the same token takes no second ticket, and no free grant jumps ahead', async () => {
      const { key, record } = await withHolders(3);
      const token = tok();
      const queued = okRecord(await store.enqueue(key, LIMIT, token));
      expect(queued.tail).toBe(record.tail + 1);
      expect(queued.tailToken).toBe(token);
      expect(queued.holders).toEqual(record.holders);
      await refusedUnchanged(await store.enqueue(key, LIMIT, token), key, queued);
      await refusedUnchanged(await store.enqueue(key, LIMIT + 1, tok()), key, queued);
      // A slot frees; the line is not empty, so a free grant is refused; the ticket's own grant is not.
      expect(await store.release(key, record.holders[0]!.token, LEASE, 5)).toBe(true);
      const freed = (await store.read(key))!;
      expect(freed).toMatchObject({ count: 2, lastHoldMs: 5 });
      await refusedUnchanged(await store.grant(grantOf(key, freed)), key, freed);
      const admitted = okRecord(await store.grant(grantOf(key, freed, { line: { ticket: queued.tail - 1, seenHead: freed.head } })));
      expect(admitted).toMatchObject({ count: 3, head: freed.head + 1, fencingToken: freed.fencingToken + 1 });
      expect(admitted.head).toBe(admitted.tail);
    });

    it('the line is served in ticket order: a later ticket waits for the earlier one unless it was given up, whose mark the grant removes', async () => {
      const { key } = await withHolders(1);
      const tickets: number[] = [];
      for (let i = 0; i < 3; i++) tickets.push(okRecord(await store.enqueue(key, LIMIT, tok())).tail - 1);
      let record = (await store.read(key))!;
      await refusedUnchanged(
        await store.grant(grantOf(key, record, { line: { ticket: tickets[1]!, seenHead: record.head } })),
        key,
        record,
      );
      record = okRecord(await store.abandon(key, tickets[0]!));
      expect(record.gone).toEqual([tickets[0]]);
      record = okRecord(await store.grant(grantOf(key, record, { line: { ticket: tickets[1]!, seenHead: record.head } })));
      expect(record).toMatchObject({ head: tickets[1]! + 1, gone: [], count: 2 });
      // A ticket the line passed cannot be given up any more.
      await refusedUnchanged(await store.abandon(key, tickets[0]!), key, record);
    });

    it('a heartbeat changes only the holder’s own version (and lease); a token that holds nothing is refused', async () => {
      const { key, record, tokens } = await withHolders(2);
      const beat = okRecord(await store.heartbeat(key, tokens[0]!, 20_000));
      const [mine, other] = [holderEntryOf(beat, tokens[0]!)!, holderEntryOf(beat, tokens[1]!)!];
      expect(mine.version).not.toBe(holderEntryOf(record, tokens[0]!)!.version);
      expect(mine.leaseMs).toBe(20_000);
      expect(other).toEqual(holderEntryOf(record, tokens[1]!));
      expect(beat).toMatchObject({ count: 2, fencingToken: record.fencingToken, head: record.head, tail: record.tail });
      await refusedUnchanged(await store.heartbeat(key, tok(), undefined), key, beat);
    });

    it('a silent holder is passed only at the version watched; the slot is free again', async () => {
      const { key, record, tokens } = await withHolders(3);
      const silent = holderEntryOf(record, tokens[1]!)!;
      const renewed = okRecord(await store.heartbeat(key, tokens[0]!, undefined));
      await refusedUnchanged(await store.pass(key, tokens[0]!, holderEntryOf(record, tokens[0]!)!.version), key, renewed);
      const passed = okRecord(await store.pass(key, silent.token, silent.version));
      expect(passed.count).toBe(2);
      expect(holderEntryOf(passed, silent.token)).toBeUndefined();
      // Its release after that is not a release: it held nothing any more.
      expect(await store.release(key, silent.token, LEASE)).toBe(false);
    });

    it('a silent head of line is passed only while a slot is free and the line stands at the ticket seen', async () => {
      const { key } = await withHolders(3);
      const ticket = okRecord(await store.enqueue(key, LIMIT, tok())).tail - 1;
      okRecord(await store.enqueue(key, LIMIT, tok()));
      let record = (await store.read(key))!;
      await refusedUnchanged(await store.passHead(key, ticket), key, record);
      expect(await store.release(key, record.holders[0]!.token, LEASE)).toBe(true);
      record = (await store.read(key))!;
      await refusedUnchanged(await store.passHead(key, ticket + 1), key, record);
      const passed = okRecord(await store.passHead(key, ticket));
      expect(passed.head).toBe(ticket + 1);
    });

    it('a release frees the slot once; a retry of it is recognised; another token releases nothing', async () => {
      const { key, tokens } = await withHolders(2);
      expect(await store.release(key, tok(), LEASE)).toBe(false);
      expect(await store.release(key, tokens[0]!, LEASE)).toBe(true);
      expect(await store.release(key, tokens[0]!, LEASE)).toBe(true);
      const record = (await store.read(key))!;
      expect(record.count).toBe(1);
      expect(record.holders.map((h) => h.token)).toEqual([tokens[1]]);
      expect(await store.release(newKey(), tok(), LEASE)).toBe(false);
    });

    it('scanHeld yields every item with holders whose key starts with the prefix, with its holders and limit, and no item without holders', async () => {
      const prefix = `sem-scan/${tok().slice(0, 8)}/`;
      const grant = async (key: string, seen: SemaphoreRecord | undefined) => {
        const write = grantOf(key, seen);
        return { record: okRecord(await store.grant(write)), token: write.token };
      };
      const first = await grant(`${prefix}two`, undefined);
      const second = await grant(`${prefix}two`, first.record);
      const emptied = await grant(`${prefix}emptied`, undefined);
      expect(await store.release(`${prefix}emptied`, emptied.token, LEASE)).toBe(true);
      await grant(`${prefix.slice(0, -1)}-outside`, undefined);
      const found: SemaphoreRecord[] = [];
      for await (const record of store.scanHeld!(prefix)) found.push(record);
      expect(found.map((r) => r.key)).toEqual([`${prefix}two`]);
      expect(found[0]).toMatchObject({ limit: LIMIT, count: 2 });
      expect(found[0]!.holders.map((h) => h.token)).toEqual([first.token, second.token]);
      expect(found[0]).toEqual(await store.read(`${prefix}two`));
    });

    it('writes on a missing item are refused and create nothing', async () => {
      const key = newKey();
      expect((await store.enqueue(key, LIMIT, tok())).ok).toBe(false);
      expect((await store.heartbeat(key, tok(), undefined)).ok).toBe(false);
      expect((await store.passHead(key, 1)).ok).toBe(false);
      expect(await store.read(key)).toBeUndefined();
    });
  });
}

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { MutexStorePort } from '../../lib/store/mutex/mutex-store.port';
import type { WriteResult } from '../../lib/store/mutex/mutex-store.protocol';
import type { LockRecord } from '../../lib/store/mutex/mutex.record';
import { MAX_READERS, newEntry, READ_GROUP_TOKEN, type ReaderEntry, readerOf, readersOf } from '../../lib/store/rw/read.record';
import type { ReadStorePort } from '../../lib/store/rw/read-store.port';
import { type ContractTraits, okRecord, tok } from './support/contract-stores';

const LEASE = 10_000;
const CLAIM = 2_000;

/** The stores a read-store contract writes with: readers' writes and the mutex's, on the same items. */
export interface ReadStoresUnderTest {
  read: ReadStorePort;
  mutex: MutexStorePort;
  close(): Promise<void>;
}

/**
 * The contract of readers on mutex items ({@link ReadStorePort}, with the mutex writes they meet):
 * a read group holds the item as one holder (the group's token, a map of entries), readers join it
 * only while nobody waits in line, the last reader's release serves the next ticket as a mutex
 * release does, and a writer's pass of a silent group takes its readers with it. Every store runs
 * it (`read-store.contract.spec.ts`), so they must agree.
 */
export function readStoreContract(name: string, makeStores: () => Promise<ReadStoresUnderTest>, traits: ContractTraits): void {
  describe(`readers on mutex items: ${name}`, () => {
    let under: ReadStoresUnderTest;
    let read: ReadStorePort;
    let mutex: MutexStorePort;
    let seq = 0;
    const newKey = (label: string) => `read-contract/${label}/${++seq}-${tok().slice(0, 6)}`;
    const entry = (leaseMs = LEASE, owner = 'reader'): ReaderEntry => newEntry(tok(), leaseMs, owner);

    beforeAll(async () => {
      under = await makeStores();
      ({ read, mutex } = under);
    });
    afterAll(() => under?.close());

    async function mustRead(key: string): Promise<LockRecord> {
      const record = await mutex.read(key);
      if (!record) throw new Error(`no record for ${key}`);
      return record;
    }

    /** Refused, nothing changed; the answer carries the item as it was where the store reports it. */
    async function expectRefused(result: WriteResult, key: string, before: LockRecord | undefined): Promise<void> {
      expect(result.ok).toBe(false);
      if (!result.ok && (traits.returnsCurrent || result.current !== undefined)) expect(result.current).toEqual(before);
      expect(await mutex.read(key)).toEqual(before);
    }

    /** A key with a read group of `count` readers. */
    async function group(label: string, count: number) {
      const key = newKey(label);
      const readers = [entry()];
      let record = okRecord(await read.start({ key, entry: readers[0] }));
      for (let i = 1; i < count; i++) {
        const next = entry();
        record = okRecord(await read.join({ key, entry: next, head: record.head!, tail: record.tail! }));
        readers.push(next);
      }
      return { key, readers, record };
    }

    it('a start on a free item makes a group of one: the group token, its entry, a ticket taken and served', async () => {
      const key = newKey('start');
      const first = entry(LEASE, 'first');
      const record = okRecord(await read.start({ key, entry: first }));
      expect(record.token).toBe(READ_GROUP_TOKEN);
      expect(readersOf(record)).toEqual([first]);
      expect(record.leaseMs).toBe(LEASE);
      expect(record.tail).toBe(record.head! + 1);
      expect(record.fencingToken).toEqual(expect.any(Number));
      // Held now: a second start and a writer's free acquire are refused.
      const before = await mustRead(key);
      await expectRefused(await read.start({ key, entry: entry() }), key, before);
      await expectRefused(await mutex.acquire({ key, token: tok(), owner: 'w', leaseMs: LEASE, condition: { kind: 'free' } }), key, before);
    });

    it('readers join while nobody waits; a join keeps the fencing counter and changes the record version', async () => {
      const { key, readers, record } = await group('join', 3);
      const after = await mustRead(key);
      expect(
        readersOf(after)
          .map((r) => r.id)
          .sort(),
      ).toEqual(readers.map((r) => r.id).sort());
      expect(after.fencingToken).toBe(record.fencingToken);
      const start = okRecord(await read.start({ key: newKey('x'), entry: entry() }));
      expect(start.rvn).not.toBe(after.rvn);
    });

    it('a writer waiting in line stops every join; once its ticket left the line, joins go on', async () => {
      const { key, record } = await group('writer-waits', 1);
      const writer = tok();
      const queued = okRecord(await mutex.enqueue({ key, token: writer, claimMs: CLAIM }));
      const ticket = queued.tail! - 1;
      const before = await mustRead(key);
      // With the line as it was seen before the writer queued, and as it is now.
      await expectRefused(await read.join({ key, entry: entry(), head: record.head!, tail: record.tail! }), key, before);
      await expectRefused(await read.join({ key, entry: entry(), head: before.head!, tail: before.tail! }), key, before);
      expect((await mutex.leave(key, ticket)).ok).toBe(true);
      const left = await mustRead(key);
      okRecord(await read.join({ key, entry: entry(), head: left.head!, tail: left.tail! }));
      expect(readersOf(await mustRead(key))).toHaveLength(2);
    });

    it('a join of an entry already there, or of a group that ended, is refused', async () => {
      const { key, readers, record } = await group('join-twice', 1);
      const before = await mustRead(key);
      await expectRefused(await read.join({ key, entry: readers[0], head: record.head!, tail: record.tail! }), key, before);
      expect(await read.release(key, readers[0].id, LEASE)).toBe(true);
      const ended = await mustRead(key);
      await expectRefused(await read.join({ key, entry: entry(), head: record.head!, tail: record.tail! }), key, ended);
    });

    it(`at most ${MAX_READERS} readers hold a key: the next join is refused`, async () => {
      const { key, record } = await group('full', MAX_READERS);
      const before = await mustRead(key);
      expect(readersOf(before)).toHaveLength(MAX_READERS);
      await expectRefused(await read.join({ key, entry: entry(), head: record.head!, tail: record.tail! }), key, before);
    });

    it("the last reader's release serves the next ticket and raises the counter; earlier releases only leave", async () => {
      const { key, readers, record } = await group('release', 2);
      const writer = tok();
      const ticket = okRecord(await mutex.enqueue({ key, token: writer, claimMs: CLAIM })).tail! - 1;
      expect(await read.release(key, readers[0].id, LEASE, 25)).toBe(true);
      const one = await mustRead(key);
      expect(one.token).toBe(READ_GROUP_TOKEN);
      expect(readersOf(one).map((r) => r.id)).toEqual([readers[1].id]);
      expect(one.head).toBe(record.head);
      expect(await read.release(key, readers[1].id, LEASE, 30)).toBe(true);
      const served = await mustRead(key);
      expect(served.token).toBeUndefined();
      expect(served.readers).toBeUndefined();
      expect(served.head).toBe(ticket);
      expect(served.fencingToken).toBe(record.fencingToken! + 1);
      expect(served.lastHoldMs).toBe(30);
      // The writer holds by its ticket: its first heartbeat lands.
      okRecord(await mutex.heartbeat({ key, holding: { token: writer, ticket }, owner: 'w', leaseMs: LEASE, ttlLeaseMs: LEASE }));
      // A retried release is recognised; a release of an entry never there is not.
      expect(await read.release(key, readers[1].id, LEASE)).toBe(true);
      expect(await read.release(key, entry().id, LEASE)).toBe(false);
    });

    it('a heartbeat renews the entry (new version); the group lease is raised to a longer one, never lowered', async () => {
      const { key, readers } = await group('heartbeat', 2);
      const renewed = { ...newEntry(tok(), LEASE * 2, 'reader'), id: readers[0].id };
      const raised = okRecord(await read.heartbeat({ key, entry: renewed }));
      expect(readerOf(raised, readers[0].id)?.version).toBe(renewed.version);
      expect(raised.leaseMs).toBe(LEASE * 2);
      const shorter = { ...newEntry(tok(), LEASE / 2, 'reader'), id: readers[1].id };
      expect(okRecord(await read.heartbeat({ key, entry: shorter })).leaseMs).toBe(LEASE * 2);
      const before = await mustRead(key);
      await expectRefused(await read.heartbeat({ key, entry: entry() }), key, before);
    });

    it('a reader passed at the version seen is gone; a pass at an older version is refused; the last pass ends the group', async () => {
      const { key, readers, record } = await group('pass', 2);
      const stale = { ...readers[0], version: 'old-version-0000' };
      const before = await mustRead(key);
      await expectRefused(await read.pass(key, stale), key, before);
      okRecord(await read.pass(key, readers[0]));
      expect(readersOf(await mustRead(key)).map((r) => r.id)).toEqual([readers[1].id]);
      // The passed reader's heartbeat is refused: it lost the key.
      const lost = await mustRead(key);
      await expectRefused(await read.heartbeat({ key, entry: { ...readers[0], version: 'new-version-0000' } }), key, lost);
      const ended = okRecord(await read.pass(key, readers[1]));
      expect(ended.token).toBeUndefined();
      expect(ended.head).toBe(ended.tail);
      expect(ended.fencingToken).toBe(record.fencingToken! + 1);
    });

    it("a writer's pass of a silent group takes its readers with it: their heartbeats are refused", async () => {
      const { key, readers } = await group('skip', 2);
      const writer = tok();
      const queued = okRecord(await mutex.enqueue({ key, token: writer, claimMs: CLAIM }));
      const seen = await mustRead(key);
      const taken = okRecord(
        await mutex.skip({
          key,
          rvn: seen.rvn!,
          live: undefined,
          target: queued.tail! - 1,
          holder: { token: writer, owner: 'w', leaseMs: LEASE },
        }),
      );
      expect(taken.token).toBe(writer);
      expect(taken.readers).toBeUndefined();
      for (const reader of readers)
        expect((await read.heartbeat({ key, entry: { ...reader, version: 'after-skip-0000' } })).ok).toBe(false);
      expect(await read.release(key, readers[0].id, LEASE)).toBe(false);
    });

    it('one upgradeable reader per group; an upgrade stops joins, converts the group of one into a write lock on the same ticket, fence + 1', async () => {
      const key = newKey('upgrade');
      const upgrader = entry(LEASE, 'upgrader');
      const started = okRecord(await read.start({ key, entry: upgrader, upgradeable: true }));
      expect(started.upgrader).toBe(upgrader.id);
      const other = entry();
      okRecord(await read.join({ key, entry: other, head: started.head!, tail: started.tail! }));
      // A second upgradeable reader is refused; a writer queues behind the group.
      let before = await mustRead(key);
      await expectRefused(await read.join({ key, entry: entry(), head: before.head!, tail: before.tail!, upgradeable: true }), key, before);
      const writer = tok();
      const ticket = okRecord(await mutex.enqueue({ key, token: writer, claimMs: CLAIM })).tail! - 1;
      // Only the upgrader may claim the upgrade; then no reader joins, and the conversion waits for the other reader.
      before = await mustRead(key);
      await expectRefused(await read.claimUpgrade(key, other.id), key, before);
      expect(okRecord(await read.claimUpgrade(key, upgrader.id)).upgrading).toBe(upgrader.id);
      before = await mustRead(key);
      const holder = { token: tok(), owner: 'upgraded', leaseMs: LEASE };
      await expectRefused(await read.convert(key, upgrader.id, holder), key, before);
      expect(await read.release(key, other.id, LEASE)).toBe(true);
      const converted = okRecord(await read.convert(key, upgrader.id, holder));
      expect(converted.token).toBe(holder.token);
      expect(converted.readers).toBeUndefined();
      expect(converted.upgrader).toBeUndefined();
      expect(converted.upgrading).toBeUndefined();
      expect(converted.head).toBe(started.head);
      expect(converted.fencingToken).toBe(started.fencingToken! + 1);
      // The writer in line is served by the upgraded holder's release, with a larger token still.
      expect(await mutex.release(key, { token: holder.token }, LEASE)).toBe(true);
      const served = await mustRead(key);
      expect(served.head).toBe(ticket);
      expect(served.fencingToken).toBe(started.fencingToken! + 2);
    });

    it('an abandoned upgrade lets readers join again; the upgrader leaving takes its slot with it', async () => {
      const key = newKey('abandon');
      const upgrader = entry();
      const started = okRecord(await read.start({ key, entry: upgrader, upgradeable: true }));
      okRecord(await read.claimUpgrade(key, upgrader.id));
      let before = await mustRead(key);
      await expectRefused(await read.join({ key, entry: entry(), head: started.head!, tail: started.tail! }), key, before);
      okRecord(await read.abandonUpgrade(key, upgrader.id));
      okRecord(await read.join({ key, entry: entry(), head: started.head!, tail: started.tail! }));
      expect(await read.release(key, upgrader.id, LEASE)).toBe(true);
      before = await mustRead(key);
      expect(before.upgrader).toBeUndefined();
      okRecord(await read.join({ key, entry: entry(), head: started.head!, tail: started.tail!, upgradeable: true }));
    });

    it("no conversion without the mark, nor a second one; the slot and mark go with the upgrader, by release, pass or a writer's skip", async () => {
      const key = newKey('upgrade-edges');
      const upgrader = entry();
      const started = okRecord(await read.start({ key, entry: upgrader, upgradeable: true }));
      const other = entry();
      okRecord(await read.join({ key, entry: other, head: started.head!, tail: started.tail! }));
      const holder = { token: tok(), owner: 'upgraded', leaseMs: LEASE };
      await read.release(key, other.id, LEASE);
      let before = await mustRead(key);
      // Not marked: refused; an abandon by a reader that did not mark: refused.
      await expectRefused(await read.convert(key, upgrader.id, holder), key, before);
      await expectRefused(await read.abandonUpgrade(key, other.id), key, before);
      okRecord(await read.claimUpgrade(key, upgrader.id));
      okRecord(await read.convert(key, upgrader.id, holder));
      // A resend of the conversion is refused, and its answer shows the write token.
      before = await mustRead(key);
      const resent = await read.convert(key, upgrader.id, holder);
      await expectRefused(resent, key, before);
      expect(before.token).toBe(holder.token);
      expect(await mutex.release(key, { token: holder.token }, LEASE)).toBe(true);

      // The upgrader's release while upgrading clears the mark, and readers join again.
      const key2 = newKey('upgrade-release');
      const u2 = entry();
      const s2 = okRecord(await read.start({ key: key2, entry: u2, upgradeable: true }));
      const r2 = entry();
      okRecord(await read.join({ key: key2, entry: r2, head: s2.head!, tail: s2.tail! }));
      okRecord(await read.claimUpgrade(key2, u2.id));
      expect(await read.release(key2, u2.id, LEASE)).toBe(true);
      const after = await mustRead(key2);
      expect(after.upgrader).toBeUndefined();
      expect(after.upgrading).toBeUndefined();
      okRecord(await read.join({ key: key2, entry: entry(), head: s2.head!, tail: s2.tail!, upgradeable: true }));

      // A silent upgrader passed (not the last reader) takes its slot with it.
      const key3 = newKey('upgrade-pass');
      const u3 = entry();
      const s3 = okRecord(await read.start({ key: key3, entry: u3, upgradeable: true }));
      okRecord(await read.join({ key: key3, entry: entry(), head: s3.head!, tail: s3.tail! }));
      okRecord(await read.claimUpgrade(key3, u3.id));
      okRecord(await read.pass(key3, u3));
      const passed = await mustRead(key3);
      expect(passed.upgrader).toBeUndefined();
      expect(passed.upgrading).toBeUndefined();

      // A writer's skip of the silent group takes slot and mark too.
      const writer = tok();
      const queued = okRecord(await mutex.enqueue({ key: key3, token: writer, claimMs: CLAIM }));
      const seen = await mustRead(key3);
      const taken = okRecord(
        await mutex.skip({
          key: key3,
          rvn: seen.rvn!,
          live: undefined,
          target: queued.tail! - 1,
          holder: { token: writer, owner: 'w', leaseMs: LEASE },
        }),
      );
      expect(taken.readers).toBeUndefined();
      expect(taken.upgrader).toBeUndefined();
    });

    it("the group's end passes the left tickets it serves, and a free item takes a writer or a new group", async () => {
      const { key, readers } = await group('left', 1);
      const gone = okRecord(await mutex.enqueue({ key, token: tok(), claimMs: CLAIM })).tail! - 1;
      expect((await mutex.leave(key, gone)).ok).toBe(true);
      expect(await read.release(key, readers[0].id, LEASE)).toBe(true);
      const free = await mustRead(key);
      expect(free.head).toBe(free.tail);
      expect(free.left).toBeUndefined();
      const writer = okRecord(await mutex.acquire({ key, token: tok(), owner: 'w', leaseMs: LEASE, condition: { kind: 'free' } }));
      expect(writer.readers).toBeUndefined();
      expect(writer.fencingToken).toBe(free.fencingToken);
    });
  });
}

import { randomToken } from '../../utils/random-token';
import type { LockRecord } from '../mutex/mutex.record';

/**
 * Readers on a mutex item (`mode: 'read'`). The readers holding a key together are one holder of
 * the item, the read group: its token is {@link READ_GROUP_TOKEN} (no owner token can equal it),
 * its lease the longest of its members', and each member is one entry of the item's `readers`
 * map, renewed on its own. A writer is a mutex caller: it sees the group as a holder, waits in
 * line behind it, and is served by the group's last release.
 */

/** The token of a read group: a control character and a word, which no random owner token can equal. */
export const READ_GROUP_TOKEN = '\u001fread';

/** The owner name a read group shows to writers and to `inspect()` of older versions. */
export const READ_GROUP_OWNER = 'readers';

/**
 * Most readers holding one key at once: the item stays under 8 KB (about 100 bytes an entry).
 * Further readers wait until one leaves.
 */
export const MAX_READERS = 64;

/** Longest owner name kept in an entry (characters); `inspect()` shows it cut there. */
export const READER_OWNER_MAX = 48;

/** One reader of a read group, as its entry says. */
export interface ReaderEntry {
  /** The entry's id: the first 16 characters of the reader's owner token. */
  id: string;
  /** A new random value on every write of the entry: waiters watch it as a holder's record version. */
  version: string;
  /** The reader's lease, in ms. */
  leaseMs: number;
  /** The reader's owner name, cut to {@link READER_OWNER_MAX} characters. */
  owner: string;
}

/**
 * The first character of a reader's owner token (its lease id): `r`, never a hex digit, so a lease
 * id tells a reader's lease from a mutex holder's without a read.
 */
export const READER_TOKEN_MARK = 'r';

/** A reader's owner token: a random token marked as a reader's. */
export function readerToken(token: string): string {
  return READER_TOKEN_MARK + token.slice(1);
}

/** Whether a lease id is a reader's (see {@link READER_TOKEN_MARK}). */
export function isReaderLeaseId(leaseId: string): boolean {
  return leaseId.startsWith(READER_TOKEN_MARK);
}

/** Whether a record shows a read group holding the item. */
export function isReadGroup(record: LockRecord | undefined): boolean {
  return record?.token === READ_GROUP_TOKEN;
}

/** The id of the entry a reader with owner token `token` writes. */
export function readerIdOf(token: string): string {
  return token.slice(0, 16);
}

/** A reader's entry with a new version. */
export function newEntry(token: string, leaseMs: number, owner: string): ReaderEntry {
  return { id: readerIdOf(token), version: randomToken().slice(0, 16), leaseMs, owner: owner.slice(0, READER_OWNER_MAX) };
}

/** The stored form of an entry: `version|leaseMs|owner`. */
export function formatEntry(entry: ReaderEntry): string {
  return `${entry.version}|${entry.leaseMs}|${entry.owner}`;
}

/** Every reader of the group holding the record; none when no group holds it (a map left by a pass is stale). */
export function readersOf(record: LockRecord | undefined): ReaderEntry[] {
  if (!isReadGroup(record) || !record?.readers) return [];
  return Object.entries(record.readers).map(([id, raw]) => parseEntry(id, raw));
}

/** The entry `id` of the group holding the record, if any. */
export function readerOf(record: LockRecord | undefined, id: string): ReaderEntry | undefined {
  const raw = isReadGroup(record) ? record?.readers?.[id] : undefined;
  return raw === undefined ? undefined : parseEntry(id, raw);
}

function parseEntry(id: string, raw: string): ReaderEntry {
  const first = raw.indexOf('|');
  const second = raw.indexOf('|', first + 1);
  return { id, version: raw.slice(0, first), leaseMs: Number(raw.slice(first + 1, second)), owner: raw.slice(second + 1) };
}

/** The tickets strictly between `head` and `tail`: a join needs each of them left (nobody waits). */
export function ticketsBetween(head: number, tail: number): number[] {
  return Array.from({ length: Math.max(0, tail - head - 1) }, (_, index) => head + 1 + index);
}

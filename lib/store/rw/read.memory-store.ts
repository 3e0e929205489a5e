import { randomToken } from '../../utils/random-token';
import type { MemoryMutexStore } from '../mutex/mutex.memory-store';
import { endedHold, hasCounters, type StoredItem, ttlOf } from '../mutex/mutex.memory-item';
import { leftRun } from '../mutex/mutex.record';
import type { WriteResult } from '../mutex/mutex-store.protocol';
import { formatEntry, MAX_READERS, ticketsBetween, READ_GROUP_OWNER, READ_GROUP_TOKEN, type ReaderEntry } from './read.record';
import type { JoinWrite, ReaderWrite, ReadStorePort, UpgradeHolder } from './read-store.port';

/**
 * A {@link ReadStorePort} in process memory, on the items of a {@link MemoryMutexStore}: the same
 * conditions as `DynamoReadStore`, each write applied atomically (the group's lease is raised in
 * the same write, where DynamoDB needs a second one).
 */
export class MemoryReadStore implements ReadStorePort {
  constructor(private readonly mutex: MemoryMutexStore) {}

  start({ key, entry, upgradeable }: ReaderWrite): Promise<WriteResult> {
    const e = structuredClone(entry);
    return this.mutex.apply(key, (item) => {
      if (item.token !== undefined || (item.head !== undefined && item.head !== item.tail)) return undefined;
      const now = Date.now();
      const base = now * 1000;
      const tail = item.tail ?? base;
      return {
        ...item,
        token: READ_GROUP_TOKEN,
        owner: READ_GROUP_OWNER,
        leaseMs: e.leaseMs,
        readers: { [e.id]: formatEntry(e) },
        rvn: randomToken(),
        acquiredAt: now,
        updatedAt: now,
        fence: item.fence ?? base,
        head: tail,
        tail: tail + 1,
        tailToken: `${READ_GROUP_TOKEN}${e.id}`,
        live: undefined,
        releasedToken: undefined,
        claims: undefined,
        left: undefined,
        data: undefined,
        upgrader: upgradeable ? e.id : undefined,
        upgrading: undefined,
        ttl: ttlOf(now, e.leaseMs),
      };
    });
  }

  join({ key, entry, head, tail, upgradeable }: JoinWrite): Promise<WriteResult> {
    const e = structuredClone(entry);
    const seen = ticketsBetween(head, tail);
    return this.mutex.apply(key, (item) => {
      if (!inGroup(item) || item.head !== head || item.tail !== tail || item.readers[e.id] !== undefined) return undefined;
      if (Object.keys(item.readers).length >= MAX_READERS || !seen.every((ticket) => item.left?.includes(ticket))) return undefined;
      // No reader joins a group whose upgradeable reader upgrades; an upgradeable one, none that has one.
      if (item.upgrading !== undefined || (upgradeable && item.upgrader !== undefined)) return undefined;
      return { ...withEntry(item, e), ...(upgradeable ? { upgrader: e.id } : {}) };
    });
  }

  heartbeat({ key, entry }: ReaderWrite): Promise<WriteResult> {
    const e = structuredClone(entry);
    return this.mutex.apply(key, (item) => (inGroup(item) && item.readers[e.id] !== undefined ? withEntry(item, e) : undefined));
  }

  async release(key: string, id: string, leaseMs: number, heldMs?: number): Promise<boolean> {
    const result = await this.leave(key, id, undefined, leaseMs, heldMs);
    return result.ok || result.current?.released === id;
  }

  pass(key: string, seen: ReaderEntry): Promise<WriteResult> {
    return this.leave(key, seen.id, structuredClone(seen), seen.leaseMs);
  }

  claimUpgrade(key: string, id: string): Promise<WriteResult> {
    return this.mutex.apply(key, (item) =>
      inGroup(item) && item.upgrader === id && item.readers[id] !== undefined ? { ...item, upgrading: id } : undefined,
    );
  }

  convert(key: string, id: string, holder: UpgradeHolder): Promise<WriteResult> {
    const h = structuredClone(holder);
    return this.mutex.apply(key, (item) => {
      if (!inGroup(item) || item.upgrading !== id || item.readers[id] === undefined || Object.keys(item.readers).length !== 1)
        return undefined;
      if (item.fence === undefined) return undefined;
      const now = Date.now();
      return {
        ...item,
        token: h.token,
        owner: h.owner,
        leaseMs: h.leaseMs,
        fence: item.fence + 1,
        rvn: randomToken(),
        acquiredAt: now,
        updatedAt: now,
        readers: undefined,
        upgrader: undefined,
        upgrading: undefined,
        live: undefined,
        data: undefined,
        ttl: ttlOf(now, h.leaseMs),
      };
    });
  }

  abandonUpgrade(key: string, id: string): Promise<WriteResult> {
    return this.mutex.apply(key, (item) => (item.upgrading === id ? { ...item, upgrading: undefined } : undefined));
  }

  private async leave(key: string, id: string, seen: ReaderEntry | undefined, leaseMs: number, heldMs?: number): Promise<WriteResult> {
    const result = await this.mutex.apply(key, (item) => {
      if (!inGroup(item) || item.readers[id] === undefined || (seen && item.readers[id] !== formatEntry(seen))) return undefined;
      const now = Date.now();
      const readers = { ...item.readers };
      delete readers[id];
      const released = seen ? {} : { releasedToken: id };
      // The upgrader slot goes with its reader.
      const slot = item.upgrader === id ? { upgrader: undefined, upgrading: undefined } : {};
      if (Object.keys(readers).length > 0) return { ...item, readers, updatedAt: now, ...released, ...slot };
      if (!hasCounters(item)) return undefined;
      const ended = endedHold(item, now, leaseMs, heldMs);
      return { ...ended, ...released, readers: undefined, upgrader: undefined, upgrading: undefined };
    });
    // As the DynamoDB store: the group's end passes the left tickets it serves.
    const run = result.ok ? leftRun(result.record) : undefined;
    if (run) await this.mutex.passLeft(key, run);
    return result;
  }
}

/** Whether a read group holds the item (its `readers` map is then its members). */
function inGroup(item: StoredItem): item is StoredItem & { readers: Record<string, string> } {
  return item.token === READ_GROUP_TOKEN && item.readers !== undefined;
}

/** The item with a reader's entry written: a new record version, the group's lease raised to the reader's. */
function withEntry(item: StoredItem & { readers: Record<string, string> }, entry: ReaderEntry): StoredItem {
  const now = Date.now();
  const leaseMs = Math.max(item.leaseMs ?? 0, entry.leaseMs);
  return {
    ...item,
    readers: { ...item.readers, [entry.id]: formatEntry(entry) },
    leaseMs,
    rvn: randomToken(),
    updatedAt: now,
    live: undefined,
    ttl: ttlOf(now, entry.leaseMs),
  };
}

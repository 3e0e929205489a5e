import { randomToken } from '../../utils/random-token';
import { isHeld, LEFT_MAX, type LeftRun, type LockRecord, leftRun } from './mutex.record';
import type { ReadConsistency } from '../store.protocol';
import type { MutexStorePort } from './mutex-store.port';
import type {
  AcquireAllResult,
  AcquireAllWrite,
  AcquireWrite,
  HeartbeatWrite,
  Holding,
  ReleaseFire,
  SkipWrite,
  TicketWrite,
  WriteResult,
} from './mutex-store.protocol';
import {
  endedHold,
  fenceOf,
  hasCounters,
  MemoryStoreValidationError,
  type StoredItem,
  tick,
  toRecord,
  ttlOf,
  without,
} from './mutex.memory-item';

/**
 * A {@link MutexStorePort} in process memory, for tests: the same records and the same
 * conditional writes as the DynamoDB store, each applied atomically, with no server.
 *
 * Every method mirrors one `UpdateItem`/`GetItem`/`Scan` of `DynamoMutexStore` condition for condition,
 * including its quirks: a write that keeps ownership without moving a ticket counter is
 * re-applicable by the same token, a failed write reports the record as it was (what
 * `ReturnValuesOnConditionCheckFailure: ALL_OLD` returns), `enqueue` and `markAlive` keep the record
 * version, and a release keeps the fencing counter. Leases are not enforced by the
 * store (they are not in DynamoDB either): a holder that stops heartbeating is taken over by waiters that watched
 * its record version for a whole lease.
 *
 * Records are copied in and out, so callers never share state with the store. Each call answers
 * asynchronously (after a microtask), like a real store, and is applied at that moment. It is
 * one of the stores behind a `MemoryLockStore`, so managers sharing a memory store share its locks.
 */
export class MemoryMutexStore implements MutexStorePort {
  private readonly items = new Map<string, StoredItem>();

  /** @param transactions whether {@link acquireAll} applies (as DynamoDB), or answers `unsupported` (as dynalite). */
  constructor(private readonly transactions = true) {}

  /** Number of records (free or held) the store keeps. */
  get size(): number {
    return this.items.size;
  }

  /** Forgets every record. */
  clear(): void {
    this.items.clear();
  }

  async acquire(write: AcquireWrite): Promise<WriteResult> {
    const w = structuredClone(write);
    await tick();
    return this.update(w.key, (item) => {
      if (!claimable(item, w.fire)) return undefined;
      const now = Date.now();
      const holder = holderOf(item, w, now, randomToken());
      if (w.condition.kind === 'free') return takeFree(item, holder, w.token, now);
      if (!holds(item, w.condition.from) && item.token !== w.token) return undefined;
      return { ...holder, fence: fenceOf(item) + 1 };
    });
  }

  /**
   * Free acquires of several keys, all or none, as the DynamoDB store's transaction: each key's
   * condition is a free acquire's with its counter pinned; one failing, nothing changes.
   */
  async acquireAll(write: AcquireAllWrite): Promise<AcquireAllResult> {
    const w = structuredClone(write);
    await tick();
    if (!this.transactions) return { kind: 'unsupported' };
    const next = w.parts.map((part) => {
      const item = structuredClone(this.items.get(part.key) ?? { key: part.key });
      if (item.fence !== part.fence) return undefined;
      const write = { key: part.key, token: part.token, owner: w.owner, leaseMs: w.leaseMs, condition: { kind: 'free' as const } };
      return takeFree(item, holderOf(item, write, w.now, part.rvn), part.token, w.now);
    });
    if (next.some((item) => item === undefined)) {
      const current = w.parts.map((part, i) => {
        const item = next[i] ? undefined : this.items.get(part.key);
        return item && toRecord(item);
      });
      return { kind: 'refused', failed: next.map((item) => item === undefined), current, conflict: false };
    }
    const stored = next.map((item) => structuredClone(item!));
    for (const item of stored) this.items.set(item.key, item);
    return { kind: 'granted', records: stored.map((item) => toRecord(item)) };
  }

  async enqueue(write: TicketWrite): Promise<WriteResult> {
    const w = structuredClone(write);
    await tick();
    return this.update(w.key, (item) => {
      if (item.tailToken === w.token || (item.head === undefined && item.token !== undefined)) return undefined;
      const base = Date.now() * 1000;
      // No new record version: waiters that watch the holder's version are not reset by a newcomer.
      const now = Date.now();
      return {
        ...item,
        tail: (item.tail ?? base) + 1,
        head: item.head ?? base,
        fence: item.fence ?? base,
        tailToken: w.token,
        claims: [...new Set([...(item.claims ?? []), Math.round(w.claimMs)])],
        rvn: item.rvn ?? randomToken(),
        updatedAt: item.updatedAt ?? now,
        ttl: ttlOf(now, 0),
      };
    });
  }

  async skip(write: SkipWrite): Promise<WriteResult> {
    const w = structuredClone(write);
    await tick();
    return this.update(w.key, (item) => {
      if (item.rvn !== w.rvn || item.live !== w.live || item.tail === undefined || item.head === undefined || item.head >= w.target)
        return undefined;
      if (w.holder ? item.tail <= w.target : item.tail < w.target) return undefined;
      if (w.holder && !claimable(item, w.holder.fire)) return undefined;
      const now = Date.now();
      const passed: StoredItem = {
        ...item,
        head: w.target,
        fence: fenceOf(item) + 1,
        rvn: randomToken(),
        updatedAt: now,
        live: undefined,
        left: without(item.left, w.leftPassed),
        // A read group passed goes with its readers.
        readers: undefined,
        upgrader: undefined,
        upgrading: undefined,
      };
      if (w.fireLost && w.holder?.fire === undefined) Object.assign(passed, { fireOutcome: 'lost', fireEnd: now });
      if (!w.holder) return { ...passed, token: undefined, owner: undefined, data: undefined, leaseMs: undefined, acquiredAt: undefined };
      const { token, owner, leaseMs, data } = w.holder;
      return { ...passed, token, owner, leaseMs, data, acquiredAt: now, ttl: ttlOf(now, leaseMs), ...claimOf(w.holder.fire, owner, now) };
    });
  }

  async markAlive(key: string, rvn: string, ticket: number): Promise<WriteResult> {
    await tick();
    const result = this.update(key, (item) =>
      item.rvn === rvn && (item.live === undefined || item.live > ticket) && item.tail !== undefined && item.tail > ticket
        ? { ...item, live: ticket }
        : undefined,
    );
    // Like the DynamoDB store, which asks for no attributes back: a success carries only the key.
    return result.ok ? { ok: true, record: toRecord({ key }) } : result;
  }

  async leave(key: string, ticket: number): Promise<WriteResult> {
    await tick();
    const result = this.update(key, (item) => {
      if (item.head === undefined || item.tail === undefined || !(item.head < ticket && item.tail > ticket)) return undefined;
      if ((item.left?.length ?? 0) >= LEFT_MAX) return undefined;
      return { ...item, left: [...new Set([...(item.left ?? []), ticket])] };
    });
    // Like the DynamoDB store, which asks for no attributes back: a success carries only the key.
    return result.ok ? { ok: true, record: toRecord({ key }) } : result;
  }

  async passLeft(key: string, run: LeftRun): Promise<WriteResult> {
    const r = structuredClone(run);
    await tick();
    return this.update(key, (item) => {
      if (item.head !== r.head || item.token !== undefined || item.tail === undefined || item.tail < r.target) return undefined;
      if (!r.passed.every((ticket) => item.left?.includes(ticket))) return undefined;
      const now = Date.now();
      const removed = [...r.passed, ...(r.stale ?? [])];
      return { ...item, head: r.target, rvn: randomToken(), updatedAt: now, live: undefined, left: without(item.left, removed) };
    });
  }

  async heartbeat(write: HeartbeatWrite): Promise<WriteResult> {
    const w = structuredClone(write);
    await tick();
    return this.update(w.key, (item) => {
      if (!holds(item, w.holding) || (w.rvn !== undefined && item.rvn !== w.rvn)) return undefined;
      const now = Date.now();
      return {
        ...item,
        token: w.holding.token,
        owner: item.owner ?? w.owner,
        acquiredAt: item.acquiredAt ?? w.acquiredAt ?? now,
        rvn: randomToken(),
        updatedAt: now,
        leaseMs: w.leaseMs ?? item.leaseMs,
        data: w.data ?? item.data,
        live: undefined,
        ttl: ttlOf(now, w.ttlLeaseMs),
      };
    });
  }

  async release(key: string, holding: Holding, leaseMs: number, heldMs?: number, fire?: ReleaseFire): Promise<boolean> {
    const h = structuredClone(holding);
    await tick();
    const result = this.update(key, (item) => {
      if (!holds(item, h)) return undefined;
      // `#head + :one` on a missing counter: DynamoDB rejects the request.
      if (!hasCounters(item)) {
        throw new MemoryStoreValidationError('The provided expression refers to an attribute that does not exist in the item');
      }
      const now = Date.now();
      return {
        ...endedHold(item, now, leaseMs, heldMs),
        releasedToken: h.token,
        ...(fire === undefined ? {} : { fireOutcome: fire, fireEnd: now }),
      };
    });
    if (result.ok) {
      // As the DynamoDB store does: the left tickets now served are passed in a second write.
      const run = leftRun(result.record);
      if (run) await this.passLeft(key, run);
      return true;
    }
    // A retried release: already released by this token (nothing written again), passing the
    // left tickets it serves as the DynamoDB store does.
    if (result.current?.released !== h.token) return false;
    const run = leftRun(result.current);
    if (run) await this.passLeft(key, run);
    return true;
  }

  /** Reads one record; with no replicas here, an eventually consistent read is as current as a strong one. */
  async read(key: string, _consistency?: ReadConsistency): Promise<LockRecord | undefined> {
    await tick();
    const item = this.items.get(key);
    return item ? toRecord(item) : undefined;
  }

  /** The record as it is now, synchronously (for a check that must be atomic with what follows it). */
  peek(key: string): LockRecord | undefined {
    const item = this.items.get(key);
    return item ? toRecord(item) : undefined;
  }

  async *scanHeld(prefix: string): AsyncGenerator<LockRecord> {
    await tick();
    const held = [...this.items.values()].map(toRecord).filter((record) => isHeld(record) && record.key.startsWith(prefix));
    for (const record of held) yield record;
  }

  /**
   * One conditional write on an item, for the stores of other primitives that write mutex items
   * (readers): as {@link update}, after a microtask.
   */
  async apply(key: string, change: (item: StoredItem) => StoredItem | undefined): Promise<WriteResult> {
    await tick();
    return this.update(key, change);
  }

  /**
   * One conditional write: `change` gets a copy of the item (an empty one when it is missing) and
   * returns the new item, or `undefined` when the condition fails; then nothing changes, and the
   * answer carries the item as it was (none when it did not exist).
   */
  private update(key: string, change: (item: StoredItem) => StoredItem | undefined): WriteResult {
    const before = this.items.get(key);
    const next = change(structuredClone(before ?? { key }));
    if (!next) return { ok: false, current: before ? toRecord(before) : undefined };
    const stored = structuredClone(next);
    this.items.set(key, stored);
    return { ok: true, record: toRecord(stored) };
  }
}

/** The item with `write`'s holder in it (a new record version `rvn`, times `now`): what every acquire sets. */
function holderOf(item: StoredItem, write: AcquireWrite, now: number, rvn: string): StoredItem {
  const { owner, token, leaseMs, data, fire } = write;
  const holder = { ...item, owner, token, rvn, leaseMs, acquiredAt: now, updatedAt: now, data, live: undefined, releasedToken: undefined };
  return { ...holder, ttl: ttlOf(now, leaseMs), ...claimOf(fire, owner, now) };
}

/** A free acquire (`freeCondition()` in the DynamoDB store): ticket `tail` taken and served, the counter kept; `undefined` when held or waited for. */
function takeFree(item: StoredItem, holder: StoredItem, token: string, now: number): StoredItem | undefined {
  if (item.token !== undefined || (item.head !== undefined && item.head !== item.tail)) return undefined;
  const base = now * 1000;
  const tail = item.tail ?? base;
  return {
    ...holder,
    fence: item.fence ?? base,
    head: tail,
    tail: tail + 1,
    tailToken: token,
    claims: undefined,
    left: undefined,
    readers: undefined,
    upgrader: undefined,
    upgrading: undefined,
  };
}

/** The DynamoDB store's holding condition: the token is in the item, or none is and `head` serves the ticket. */
function holds(item: StoredItem, holding: Holding): boolean {
  if (item.token === holding.token) return true;
  // A ticket whose waiter left the line is never held.
  return (
    holding.ticket !== undefined && item.token === undefined && item.head === holding.ticket && !(item.left ?? []).includes(holding.ticket)
  );
}

/** Whether a write may claim `fire`: none asked, or no fire at or after it claimed (as `claimFire` conditions it). */
function claimable(item: StoredItem, fire: number | undefined): boolean {
  return fire === undefined || item.fire === undefined || item.fire < fire;
}

/** The attributes a write claiming `fire` sets (the DynamoDB store's `claimFire`). */
function claimOf(fire: number | undefined, owner: string, now: number): Partial<StoredItem> {
  if (fire === undefined) return {};
  return { fire, fireOwner: owner, fireStart: now, fireOutcome: 'running', fireEnd: undefined };
}

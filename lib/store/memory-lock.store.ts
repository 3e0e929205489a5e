import { randomToken } from '../utils/random-token';
import type { LockRecord } from './lock-record';
import type { LockStorePort } from './lock-store.interface';
import { type AcquireWrite, CLAIM_LEASE_MS, type QueueWrite, queuedData, type WriteResult } from './lock.store';

/** A waiter in an item's queue, as the DynamoDB store writes it (every attribute present). */
interface StoredWaiter {
  token: string;
  owner: string;
  leaseMs: number;
  data: string;
}

/** One lock item with the DynamoDB store's attributes; an absent attribute is `undefined`. */
interface StoredItem {
  key: string;
  owner?: string;
  token?: string;
  rvn?: string;
  leaseMs?: number;
  fence?: number;
  acquiredAt?: number;
  updatedAt?: number;
  data?: string;
  released?: string;
  lastHoldMs?: number;
  queue?: StoredWaiter[];
  /** The `queued` string set; DynamoDB has no empty sets, so never empty here either. */
  queued?: string[];
}

/** Thrown for a request DynamoDB would reject as malformed (e.g. a negative queue index). */
class MemoryStoreValidationError extends Error {
  override readonly name = 'ValidationException';
}

/**
 * A {@link LockStorePort} in process memory, for tests: the same records and the same
 * conditional writes as the DynamoDB store, each applied atomically, with no server.
 *
 * Every method mirrors one `UpdateItem`/`GetItem`/`Scan` of `LockStore` condition for condition,
 * including its quirks: a write that takes ownership without moving the queue is re-applicable by
 * the same token (`OR #token = :token`), a failed write reports the record as it was (what
 * `ReturnValuesOnConditionCheckFailure: ALL_OLD` returns), `enqueue` and `leave` keep the record
 * version, and a release keeps the fencing counter. Leases are not enforced by the store (they are
 * not in DynamoDB either): a holder that stops heartbeating is taken over by waiters that watched
 * its record version for a whole lease.
 *
 * Records are copied in and out, so callers never share state with the store. Each call answers
 * asynchronously (after a microtask), like a real store, and is applied at that moment.
 *
 * @example
 * ```ts
 * const store = new MemoryLockStore();
 * const a = new LockManager({ store, verifyTable: false });
 * const b = new LockManager({ store, verifyTable: false }); // a second "instance"
 * ```
 */
export class MemoryLockStore implements LockStorePort {
  private readonly items = new Map<string, StoredItem>();

  /** Number of records (free or held) the store keeps. */
  get size(): number {
    return this.items.size;
  }

  /** Forgets every record. */
  clear(): void {
    this.items.clear();
  }

  /** Nothing to check or create. */
  async prepare(_create: boolean): Promise<void> {
    await tick();
  }

  async acquire(write: AcquireWrite): Promise<WriteResult> {
    const w = structuredClone(write);
    const at = write.queuedAt === undefined ? undefined : indexOf(write.queuedAt);
    await tick();
    return this.update(w.key, (item) => {
      let pass: boolean;
      switch (w.condition.kind) {
        case 'free':
          pass = item.token === undefined && item.queue?.[0] === undefined;
          break;
        case 'head':
          pass = item.token === undefined;
          break;
        case 'takeover':
          pass = item.rvn === w.condition.rvn;
          break;
        case 'handover':
          pass = item.token === w.condition.fromToken;
          break;
      }
      // Dequeuing writes are not re-applicable, so only the others also match the writer's own token.
      pass = at === undefined ? pass || item.token === w.token : pass && item.queue?.[at]?.token === w.token;
      if (!pass) return undefined;
      const now = Date.now();
      const next: StoredItem = {
        ...item,
        owner: w.owner,
        token: w.token,
        rvn: randomToken(),
        leaseMs: w.leaseMs,
        acquiredAt: now,
        updatedAt: now,
        fence: (item.fence ?? now * 1000) + 1,
        data: w.data,
        released: undefined,
      };
      const dropped: string[] = [];
      if (w.condition.kind === 'handover') dropped.push(w.condition.fromToken);
      if (w.condition.kind === 'takeover' && w.condition.holder) dropped.push(w.condition.holder);
      if (at !== undefined) {
        next.queue = removeAt(item.queue, at);
        dropped.push(w.token);
      }
      for (const token of dropped) next.queued = without(next.queued, token);
      return next;
    });
  }

  async enqueue(waiter: QueueWrite): Promise<WriteResult> {
    const entry: StoredWaiter = {
      token: waiter.token,
      owner: waiter.owner,
      leaseMs: Math.min(waiter.leaseMs, CLAIM_LEASE_MS),
      data: queuedData(waiter.data),
    };
    await tick();
    return this.update(waiter.key, (item) => {
      const pass = (item.token !== undefined || item.queue?.[0] !== undefined) && !(item.queued ?? []).includes(entry.token);
      if (!pass) return undefined;
      // No new record version: waiters that watch the holder's version are not reset by a newcomer.
      return { ...item, queue: [...(item.queue ?? []), entry], queued: [...(item.queued ?? []), entry.token] };
    });
  }

  async leave(key: string, token: string, index: number): Promise<WriteResult> {
    const at = indexOf(index);
    await tick();
    const result = this.update(key, (item) =>
      item.queue?.[at]?.token === token ? { ...item, queue: removeAt(item.queue, at), queued: without(item.queued, token) } : undefined,
    );
    // Like the DynamoDB store, which asks for no attributes back: a success carries only the key.
    return result.ok ? { ok: true, record: toRecord({ key }) } : result;
  }

  async heartbeat(key: string, token: string, leaseMs: number | undefined, _ttlLeaseMs?: number, data?: string): Promise<WriteResult> {
    await tick();
    return this.update(key, (item) => {
      if (item.token !== token) return undefined;
      return { ...item, rvn: randomToken(), updatedAt: Date.now(), leaseMs: leaseMs ?? item.leaseMs, data: data ?? item.data };
    });
  }

  async release(key: string, token: string, _leaseMs: number, heldMs?: number): Promise<boolean> {
    await tick();
    const result = this.update(key, (item) => {
      if (item.token !== token) return undefined;
      return {
        ...item,
        rvn: randomToken(),
        released: token,
        updatedAt: Date.now(),
        lastHoldMs: heldMs === undefined ? item.lastHoldMs : Math.max(0, Math.round(heldMs)),
        token: undefined,
        owner: undefined,
        data: undefined,
        queued: without(item.queued, token),
      };
    });
    // A retried release: already released by this token (nothing written again).
    return result.ok || (!result.ok && result.current?.released === token && result.current.token === undefined);
  }

  async promote(key: string, token: string, _leaseMs: number, heldMs?: number): Promise<WriteResult> {
    await tick();
    return this.update(key, (item) => {
      const head = item.queue?.[0];
      if (item.token !== token || head === undefined) return undefined;
      // `#fence + :one` on a missing counter: DynamoDB rejects the request (no holder lacks one).
      if (item.fence === undefined) {
        throw new MemoryStoreValidationError('The provided expression refers to an attribute that does not exist in the item');
      }
      const now = Date.now();
      return {
        ...item,
        token: head.token,
        owner: head.owner,
        leaseMs: head.leaseMs,
        data: head.data,
        rvn: randomToken(),
        released: token,
        lastHoldMs: heldMs === undefined ? item.lastHoldMs : Math.max(0, Math.round(heldMs)),
        acquiredAt: now,
        updatedAt: now,
        fence: item.fence + 1,
        queue: removeAt(item.queue, 0),
        // As in DynamoDB: the set loses the releaser's token; the promoted one's goes at its release.
        queued: without(item.queued, token),
      };
    });
  }

  async read(key: string): Promise<LockRecord | undefined> {
    await tick();
    const item = this.items.get(key);
    return item ? toRecord(item) : undefined;
  }

  async *scanHeld(prefix: string): AsyncGenerator<LockRecord> {
    await tick();
    const held = [...this.items.values()].filter((item) => item.token !== undefined && item.key.startsWith(prefix)).map(toRecord);
    for (const record of held) yield record;
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

/** Lets the caller's code run on before the "server" answers. Not a timer, so fake timers do not stall it. */
function tick(): Promise<void> {
  return Promise.resolve();
}

/** The list index as the DynamoDB store writes it (`#queue[${Math.trunc(i)}]`); DynamoDB rejects anything else. */
function indexOf(index: number): number {
  const at = Math.trunc(index);
  if (!Number.isSafeInteger(at) || at < 0) {
    throw new MemoryStoreValidationError(`Invalid UpdateExpression: Syntax error; token: "${String(at)}" (queue index)`);
  }
  return at + 0; // -0 → 0
}

function removeAt(queue: StoredWaiter[] | undefined, at: number): StoredWaiter[] | undefined {
  return queue && queue.filter((_, i) => i !== at);
}

/** `DELETE #queued :tokenSet`: an emptied set disappears. */
function without(set: string[] | undefined, token: string): string[] | undefined {
  const rest = set?.filter((t) => t !== token);
  return rest && rest.length > 0 ? rest : undefined;
}

/** The item as `toLockRecord` presents a DynamoDB item: an empty data string reads as none. */
function toRecord(item: StoredItem): LockRecord {
  return {
    key: item.key,
    owner: item.owner,
    token: item.token,
    rvn: item.rvn,
    leaseMs: item.leaseMs,
    fencingToken: item.fence,
    acquiredAt: item.acquiredAt,
    updatedAt: item.updatedAt,
    data: item.data || undefined,
    released: item.released,
    lastHoldMs: item.lastHoldMs,
    queue: (item.queue ?? []).map((entry) => ({ token: entry.token, owner: entry.owner })),
  };
}

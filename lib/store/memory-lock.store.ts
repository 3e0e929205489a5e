import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { MAX_ITEM_BYTES } from '../utils/lock-key.validation';
import { randomToken } from '../utils/random-token';
import { ATTR, type LockRecord } from './lock-record';
import type { LockStorePort } from './lock-store.interface';
import { type AcquireWrite, CLAIM_LEASE_MS, type QueueWrite, queuedData, type WriteResult } from './lock-store.protocol';

/**
 * A waiter in an item's queue, as the DynamoDB store writes it (every attribute present). Here and
 * in {@link StoredItem}, field names are the item's attribute names ({@link ATTR}), checked below.
 */
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
  releasedToken?: string;
  lastHoldMs?: number;
  /** Epoch seconds, as the DynamoDB store writes it with the default `ttlDays` (2); counts toward the size. */
  ttl?: number;
  queue?: StoredWaiter[];
  /** The `queued` string set; DynamoDB has no empty sets, so never empty here either. */
  queued?: string[];
}

/** Compile-time check: every stored field is named as the DynamoDB store names the attribute. */
type NotAnAttribute = Exclude<keyof StoredItem | keyof StoredWaiter, (typeof ATTR)[keyof typeof ATTR]>;
const FIELDS_ARE_ATTRIBUTES: [NotAnAttribute] extends [never] ? true : never = true;
void FIELDS_ARE_ATTRIBUTES;

/** Days the DynamoDB store keeps an item after its last write by default (`ttlDays`). */
const DEFAULT_TTL_DAYS = 2;

/** DynamoDB's answer (also DynamoDB Local's) to an `UpdateItem` whose item would exceed 400 KB. */
const ITEM_TOO_LARGE = 'Item size to update has exceeded the maximum allowed size';

/**
 * Thrown for a request DynamoDB would reject as invalid (a negative queue index, an item over
 * 400 KB), shaped like the SDK's `ValidationException`: a client error, HTTP 400, never retried.
 */
class MemoryStoreValidationError extends Error {
  override readonly name = 'ValidationException';
  readonly $fault = 'client';
  readonly $metadata = { httpStatusCode: 400 };
}

/**
 * A {@link LockStorePort} in process memory, for tests: the same records and the same
 * conditional writes as the DynamoDB store, each applied atomically, with no server.
 *
 * Every method mirrors one `UpdateItem`/`GetItem`/`Scan` of `LockStore` condition for condition,
 * including its quirks: a write that takes ownership without moving the queue is re-applicable by
 * the same token (`OR #token = :token`), a failed write reports the record as it was (what
 * `ReturnValuesOnConditionCheckFailure: ALL_OLD` returns), `enqueue` and `leave` keep the record
 * version, and a release keeps the fencing counter. A write that would make an item larger than
 * DynamoDB's 400 KB (counted as DynamoDB counts it, over the attributes the DynamoDB store writes)
 * fails with DynamoDB's `ValidationException`, changing nothing. Leases are not enforced by the
 * store (they are not in DynamoDB either): a holder that stops heartbeating is taken over by waiters that watched
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

  /** Always up: nothing to contact. */
  async health(_signal: AbortSignal): Promise<{ store: 'memory' }> {
    await tick();
    return { store: 'memory' };
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
        releasedToken: undefined,
        ttl: ttlOf(now, w.leaseMs),
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
      const pass =
        (item.token !== undefined || item.queue?.[0] !== undefined) &&
        !(item.queued ?? []).includes(entry.token) &&
        item.token !== entry.token;
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

  async heartbeat(key: string, token: string, leaseMs: number | undefined, ttlLeaseMs = leaseMs ?? 0, data?: string): Promise<WriteResult> {
    await tick();
    return this.update(key, (item) => {
      if (item.token !== token) return undefined;
      const now = Date.now();
      return {
        ...item,
        rvn: randomToken(),
        updatedAt: now,
        leaseMs: leaseMs ?? item.leaseMs,
        data: data ?? item.data,
        ttl: ttlOf(now, ttlLeaseMs),
      };
    });
  }

  async release(key: string, token: string, leaseMs: number, heldMs?: number): Promise<boolean> {
    await tick();
    const result = this.update(key, (item) => {
      if (item.token !== token) return undefined;
      const now = Date.now();
      return {
        ...item,
        rvn: randomToken(),
        releasedToken: token,
        updatedAt: now,
        ttl: ttlOf(now, leaseMs),
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

  async promote(key: string, token: string, leaseMs: number, heldMs?: number): Promise<WriteResult> {
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
        releasedToken: token,
        lastHoldMs: heldMs === undefined ? item.lastHoldMs : Math.max(0, Math.round(heldMs)),
        acquiredAt: now,
        updatedAt: now,
        ttl: ttlOf(now, leaseMs),
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
   * answer carries the item as it was (none when it did not exist). A new item over 400 KB is
   * refused as DynamoDB refuses it, once the condition holds (DynamoDB Local refuses earlier only a
   * write whose own values exceed 400 KB, which the lock's data limit rules out).
   */
  private update(key: string, change: (item: StoredItem) => StoredItem | undefined): WriteResult {
    const before = this.items.get(key);
    const next = change(structuredClone(before ?? { key }));
    if (!next) return { ok: false, current: before ? toRecord(before) : undefined };
    if (itemBytes(toAttributes(next)) > MAX_ITEM_BYTES) throw new MemoryStoreValidationError(ITEM_TOO_LARGE);
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

/** The TTL attribute the DynamoDB store writes with the default `ttlDays`: epoch seconds. */
function ttlOf(now: number, leaseMs: number): number {
  return Math.ceil((now + Math.max(DEFAULT_TTL_DAYS * 86_400_000, 2 * leaseMs)) / 1000);
}

/** The item as the DynamoDB store writes it: the same attribute names and types. */
function toAttributes(item: StoredItem | StoredWaiter): Record<string, AttributeValue> {
  const attributes: Record<string, AttributeValue> = {};
  for (const [name, value] of Object.entries(item) as [string, StoredItem[keyof StoredItem]][]) {
    if (value === undefined) continue;
    if (typeof value === 'string') attributes[name] = { S: value };
    else if (typeof value === 'number') attributes[name] = { N: String(value) };
    else if (name === ATTR.queued) attributes[name] = { SS: value as string[] };
    else attributes[name] = { L: (value as StoredWaiter[]).map((waiter) => ({ M: toAttributes(waiter) })) };
  }
  return attributes;
}

/**
 * An item's size as DynamoDB counts it toward 400 KB: attribute names and strings in UTF-8 bytes,
 * numbers by their significant digits, 3 bytes per list or map and 1 per element, a set's strings.
 */
function itemBytes(attributes: Record<string, AttributeValue>): number {
  let total = 0;
  for (const [name, value] of Object.entries(attributes)) total += utf8Bytes(name) + valueBytes(value);
  return total;
}

function valueBytes(value: AttributeValue): number {
  if (value.S !== undefined) return utf8Bytes(value.S);
  if (value.N !== undefined) return numberBytes(value.N);
  if (value.SS !== undefined) return value.SS.reduce((sum, s) => sum + utf8Bytes(s), 0);
  if (value.L !== undefined) return 3 + value.L.reduce((sum, element) => sum + 1 + valueBytes(element), 0);
  if (value.M !== undefined) return 3 + Object.keys(value.M).length + itemBytes(value.M);
  return 1; // NULL, BOOL; the store writes neither
}

/**
 * DynamoDB stores a number as base-100 digits and an exponent byte: one byte per pair of
 * significant decimal digits (pairs aligned on the decimal point), one more, and one for a sign.
 */
function numberBytes(text: string): number {
  const negative = text.startsWith('-');
  const [whole, fraction = ''] = text.replace(/^[-+]/, '').split('.');
  const integer = whole.replace(/^0+/, '');
  const digits = (integer + fraction).replace(/^0+/, '');
  const significant = digits.replace(/0+$/, '');
  if (significant.length === 0) return 1;
  // The first significant digit's power of ten.
  const exponent = integer ? integer.length - 1 : digits.length - fraction.length - 1;
  const n = significant.length;
  return 1 + Math.ceil(n / 2) + (n % 2 === 0 && exponent % 2 === 0 ? 1 : 0) + (negative ? 1 : 0);
}

function utf8Bytes(text: string): number {
  return Buffer.byteLength(text, 'utf8');
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
    released: item.releasedToken,
    lastHoldMs: item.lastHoldMs,
    queue: (item.queue ?? []).map((entry) => ({ token: entry.token, owner: entry.owner })),
  };
}

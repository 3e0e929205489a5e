import { type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { LockTableKeys } from '../../interfaces/lock-table-keys.interface';
import { randomToken } from '../../utils/random-token';
import type { DynamoStoreOptions } from '../dynamo/dynamo-store.options';
import { SEM_ATTR, SEM_ATTRIBUTE_NAMES, SEM_HOLDER, type SemaphoreRecord, toSemaphoreRecord } from './semaphore.record';
import type { SemaphoreGrant, SemaphoreStorePort, SemaphoreWriteResult } from './semaphore-store.port';
import { readItem, scanItems, type UpdateParts, updateItem } from '../dynamo/item-requests';
import { DEFAULT_TABLE_KEYS, isForeignItem, isSharedTable, itemKeyOf } from '../dynamo/table-schema';
import { LockConfigurationError } from '../../errors/lock.errors';
import { FOREIGN_ITEM_AT_KEY } from '../../errors/lock.messages';

/** One UpdateItem on a semaphore item, before attribute names are picked. */
interface Update extends UpdateParts {
  key: string;
  condition: string;
  /** Placeholders of holder tokens used as map keys (`#tok` → the token). */
  tokens?: Record<string, string>;
}

/**
 * Every DynamoDB request on semaphore items, and every condition expression, in one place: one
 * conditional `UpdateItem` per write, a strongly consistent `GetItem` per read, each within the
 * request limit. Every write states the semaphore's `limit` and is refused by an item with another.
 * Writes return the item as written (`ALL_NEW`) and, when refused, the item as it was (`ALL_OLD`).
 */
export class DynamoSemaphoreStore implements SemaphoreStorePort {
  private readonly keys: LockTableKeys;

  constructor(
    private readonly client: DynamoDBClient,
    private readonly options: DynamoStoreOptions,
  ) {
    this.keys = options.keys ?? DEFAULT_TABLE_KEYS;
  }

  /**
   * Grants a slot while one is free: adds the holder's entry and counts it, and raises the fencing
   * counter, whose new value is the holder's token (`#fences.#tok = #fence + :one` reads the
   * counter as it was before this write, on DynamoDB as on DynamoDB Local and dynalite). Free: only
   * while nobody waits. In line: when the line stands at the writer's ticket, or every ticket
   * before it was given up; the line moves past it. A created item starts its counter from the
   * clock in microseconds, so it still exceeds every token of an item TTL deleted earlier.
   */
  grant(write: SemaphoreGrant): Promise<SemaphoreWriteResult> {
    const now = Date.now();
    const holder: AttributeValue = {
      M: {
        [SEM_HOLDER.owner]: { S: write.owner },
        [SEM_HOLDER.version]: { S: randomToken() },
        [SEM_HOLDER.lease]: { N: String(write.leaseMs) },
        [SEM_HOLDER.acquiredAt]: { N: String(now) },
        [SEM_HOLDER.updatedAt]: { N: String(now) },
      },
    };
    const values: Record<string, AttributeValue> = { ':limit': { N: String(write.limit) }, ':now': { N: String(now) }, ':one': { N: '1' } };
    if (write.create) {
      const base = { N: String(now * 1000) };
      Object.assign(values, { ':holders': { M: { [write.token]: holder } }, ':fences': { M: { [write.token]: base } }, ':base': base });
      return this.update(
        {
          key: write.key,
          set: [
            '#limit = :limit',
            '#count = :one',
            '#fence = :base',
            '#holders = :holders',
            '#fences = :fences',
            '#head = :base',
            '#tail = :base',
            '#updatedAt = :now',
          ],
          condition: 'attribute_not_exists(#key)',
          values,
        },
        write.leaseMs,
        now,
      );
    }
    values[':holder'] = holder;
    const set = [
      '#count = #count + :one',
      '#fence = #fence + :one',
      '#fences.#tok = #fence + :one',
      '#holders.#tok = :holder',
      '#updatedAt = :now',
    ];
    const conditions = ['#limit = :limit', '#count < :limit', 'attribute_not_exists(#holders.#tok)'];
    const del: string[] = [];
    if (!write.line) conditions.push('#head = #tail');
    else {
      const { ticket, seenHead } = write.line;
      Object.assign(values, { ':seenHead': { N: String(seenHead) }, ':next': { N: String(ticket + 1) }, ':ticket': { N: String(ticket) } });
      set.push('#head = :next');
      conditions.push('#head = :seenHead', '#tail > :ticket');
      // Every ticket before the writer's was given up: the same write drops them from the set.
      const skipped = Array.from({ length: ticket - seenHead }, (_, i) => seenHead + i);
      skipped.forEach((t, i) => {
        values[`:g${i}`] = { N: String(t) };
        conditions.push(`contains(#gone, :g${i})`);
      });
      if (skipped.length) {
        values[':skipped'] = { NS: skipped.map(String) };
        del.push('#gone :skipped');
      }
    }
    return this.update(
      { key: write.key, set, del, condition: conditions.join(' AND '), values, tokens: { '#tok': write.token } },
      write.leaseMs,
      now,
    );
  }

  /** Takes the next ticket; a retry after a lost answer fails (its token took the last one) instead of taking another. */
  enqueue(key: string, limit: number, token: string): Promise<SemaphoreWriteResult> {
    return this.update(
      {
        key,
        set: ['#tail = #tail + :one', '#tailToken = :token'],
        condition: '#limit = :limit AND (attribute_not_exists(#tailToken) OR #tailToken <> :token)',
        values: { ':limit': { N: String(limit) }, ':token': { S: token }, ':one': { N: '1' } },
      },
      undefined,
    );
  }

  /** Adds `ticket` to the tickets given up, while the line has not passed it. */
  abandon(key: string, ticket: number): Promise<SemaphoreWriteResult> {
    return this.update(
      {
        key,
        set: [],
        add: ['#gone :ticket'],
        condition: '#head <= :t AND #tail > :t',
        values: { ':ticket': { NS: [String(ticket)] }, ':t': { N: String(ticket) } },
      },
      undefined,
    );
  }

  /** Moves the line past a silent head ticket, while a slot is free and the line still stands there. */
  passHead(key: string, seenHead: number): Promise<SemaphoreWriteResult> {
    return this.update(
      {
        key,
        set: ['#head = :next'],
        del: ['#gone :seen'],
        condition: '#head = :seenHead AND #count < #limit AND #tail > :seenHead',
        values: { ':seenHead': { N: String(seenHead) }, ':next': { N: String(seenHead + 1) }, ':seen': { NS: [String(seenHead)] } },
      },
      undefined,
    );
  }

  /** A new version of the holder's own entry (its lease too, when given); nothing else changes. */
  heartbeat(key: string, token: string, leaseMs: number | undefined): Promise<SemaphoreWriteResult> {
    const now = Date.now();
    const values: Record<string, AttributeValue> = { ':v': { S: randomToken() }, ':now': { N: String(now) } };
    const set = ['#holders.#tok.#hf_version = :v', '#holders.#tok.#hf_updatedAt = :now', '#updatedAt = :now'];
    if (leaseMs !== undefined) {
      set.push('#holders.#tok.#hf_lease = :lease');
      values[':lease'] = { N: String(leaseMs) };
    }
    return this.update({ key, set, condition: 'attribute_exists(#holders.#tok)', values, tokens: { '#tok': token } }, leaseMs, now);
  }

  /**
   * Frees the slot of `token`. Records the released token, so a retry of a release whose answer
   * was lost still reports success without writing again.
   */
  async release(key: string, token: string, leaseMs: number, heldMs?: number): Promise<boolean> {
    const now = Date.now();
    const values: Record<string, AttributeValue> = { ':one': { N: '1' }, ':token': { S: token }, ':now': { N: String(now) } };
    const set = ['#count = #count - :one', '#released = :token', '#updatedAt = :now'];
    if (heldMs !== undefined) {
      set.push('#lastHold = :held');
      values[':held'] = { N: String(Math.max(0, Math.round(heldMs))) };
    }
    const result = await this.update(
      {
        key,
        set,
        remove: ['#holders.#tok', '#fences.#tok'],
        condition: 'attribute_exists(#holders.#tok)',
        values,
        tokens: { '#tok': token },
      },
      leaseMs,
      now,
    );
    if (result.ok) return true;
    const current = result.current ?? (await this.read(key));
    return current?.released === token;
  }

  /** Frees the slot of a silent holder, while its entry is still at the version watched. */
  pass(key: string, token: string, seenVersion: string): Promise<SemaphoreWriteResult> {
    const now = Date.now();
    return this.update(
      {
        key,
        set: ['#count = #count - :one', '#updatedAt = :now'],
        remove: ['#holders.#tok', '#fences.#tok'],
        condition: '#holders.#tok.#hf_version = :seen',
        values: { ':one': { N: '1' }, ':seen': { S: seenVersion }, ':now': { N: String(now) } },
        tokens: { '#tok': token },
      },
      undefined,
    );
  }

  /** Strongly consistent read of one semaphore item. */
  async read(key: string): Promise<SemaphoreRecord | undefined> {
    const item = await readItem(this.client, this.options, key);
    return item ? this.recordOf(key, item) : undefined;
  }

  /**
   * Every semaphore item with at least one holder whose stored key starts with `prefix` (a
   * paginated Scan; for tools, not hot paths). Mutex items have no holder count, so none matches;
   * in a table shared with the app's items, only items with a semaphore's shape do.
   */
  async *scanHeld(prefix: string): AsyncGenerator<SemaphoreRecord> {
    const filter = isSharedTable(this.keys) ? `#count > :zero AND ${SEMAPHORE_SHAPE}` : '#count > :zero';
    const items = scanItems(this.client, this.options, filter, SEM_ATTRIBUTE_NAMES, prefix, { ':zero': { N: '0' } });
    for await (const item of items) yield toSemaphoreRecord(item, this.keys);
  }

  /** Sends one conditional UpdateItem (the TTL refreshed for a write with a lease), answered with the item as written. */
  private async update(update: Update, ttlLeaseMs: number | undefined, now = Date.now()): Promise<SemaphoreWriteResult> {
    const { tokens, ...rest } = update;
    const result = await updateItem(
      this.client,
      this.options,
      { ...rest, names: SEM_ATTRIBUTE_NAMES, exactNames: tokens, returnNew: true },
      ttlLeaseMs,
      now,
    );
    if (result.ok) return { ok: true, record: toSemaphoreRecord(result.item ?? itemKeyOf(this.keys, update.key), this.keys) };
    return { ok: false, current: result.item ? this.recordOf(update.key, result.item) : undefined };
  }

  /**
   * The record of an item read at `key`.
   * @throws LockConfigurationError when it is one of the app's items (a shared table, and the same key).
   */
  private recordOf(key: string, item: Record<string, AttributeValue>): SemaphoreRecord {
    if (isForeignItem(item, this.keys, SEMAPHORE_SHAPE_ATTRIBUTES)) {
      throw new LockConfigurationError(FOREIGN_ITEM_AT_KEY(this.options.tableName, key, this.keys));
    }
    return toSemaphoreRecord(item, this.keys);
  }
}

/** What every semaphore item has from its first grant: told apart from the app's items in a shared table. */
const SEMAPHORE_SHAPE_ATTRIBUTES = [SEM_ATTR.limit, SEM_ATTR.holders, SEM_ATTR.fence] as const;
const SEMAPHORE_SHAPE = 'attribute_exists(#limit) AND attribute_exists(#holders) AND attribute_exists(#fence)';

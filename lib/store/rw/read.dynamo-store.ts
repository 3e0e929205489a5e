import type { AttributeValue, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { LockTableKeys } from '../../interfaces/lock-table-keys.interface';
import { randomToken } from '../../utils/random-token';
import type { DynamoStoreOptions } from '../dynamo/dynamo-store.options';
import { type ConditionalUpdate, updateItem } from '../dynamo/item-requests';
import { DEFAULT_TABLE_KEYS, itemKeyOf } from '../dynamo/table-schema';
import type { DynamoMutexStore } from '../mutex/mutex.dynamo-store';
import { LockUnavailableError } from '../../errors/lock.errors';
import { READ_LEAVE_CONTENDED } from '../../errors/lock.messages';
import { freeCondition, heldValue, lastHold, noHold, onlyLockItem } from '../mutex/mutex.expressions';
import { ATTRIBUTE_NAMES, LEFT_MAX, type LockRecord, leftRun, toLockRecord } from '../mutex/mutex.record';
import type { WriteResult } from '../mutex/mutex-store.protocol';
import { formatEntry, MAX_READERS, ticketsBetween, READ_GROUP_OWNER, READ_GROUP_TOKEN, type ReaderEntry, readerOf } from './read.record';
import type { JoinWrite, ReaderWrite, ReadStorePort, UpgradeHolder } from './read-store.port';

/** Most tries of a reader's leave while other readers keep changing the group (see `leave()`). */
const LEAVE_ATTEMPTS = 64;

/** One reader write, before its lease clause: the entry's id is the exact name `#rid`. */
interface ReaderUpdate extends Omit<ConditionalUpdate, 'names' | 'returnNew' | 'key'> {
  id: string;
}

/**
 * Every DynamoDB request of readers on mutex items: one conditional `UpdateItem` each, on the
 * item the mutex writes. A write that sets a reader's lease keeps the group's lease when it is at
 * least as long (`#lease >= :lease`) or raises it (`#lease < :lease`): DynamoDB has no `max()`, so
 * the write tries the first and, refused for that alone, sends the second.
 */
export class DynamoReadStore implements ReadStorePort {
  private readonly keys: LockTableKeys;

  constructor(
    private readonly client: DynamoDBClient,
    private readonly options: DynamoStoreOptions,
    private readonly mutex: DynamoMutexStore,
  ) {
    this.keys = options.keys ?? DEFAULT_TABLE_KEYS;
  }

  start({ key, entry, upgradeable }: ReaderWrite): Promise<WriteResult> {
    const now = Date.now();

    return this.update(key, entry.leaseMs, now, {
      id: entry.id,
      set: [
        '#token = :group',
        '#owner = :groupOwner',
        '#lease = :lease',
        '#readers = :readers',
        '#rvn = :rvn',
        '#acquiredAt = :now',
        '#updatedAt = :now',
        '#fence = if_not_exists(#fence, :base)',
        '#head = if_not_exists(#tail, :base)',
        '#tail = if_not_exists(#tail, :base) + :one',
        '#tailToken = :tailToken',
        ...(upgradeable ? ['#upgrader = :rid'] : []),
      ],
      remove: ['#live', '#released', '#claims', '#left', '#data', '#upgrading', ...(upgradeable ? [] : ['#upgrader'])],
      condition: freeCondition(onlyLockItem(this.keys)),
      values: {
        ...groupValues(entry, now),
        ':readers': { M: { [entry.id]: { S: formatEntry(entry) } } },
        // As a free acquire: a counter created anew starts from the time in microseconds.
        ':base': { N: String(now * 1000) },
        ':one': { N: '1' },
        ':tailToken': { S: `${READ_GROUP_TOKEN}${entry.id}` },
      },
    });
  }

  async join({ key, entry, head, tail, upgradeable }: JoinWrite): Promise<WriteResult> {
    // More tickets than the left set can hold: somebody waits.
    if (tail - head - 1 > LEFT_MAX) return { ok: false, current: await this.mutex.read(key) };
    const values: Record<string, AttributeValue> = {
      ':head': { N: String(head) },
      ':tail': { N: String(tail) },
      ':max': { N: String(MAX_READERS) },
    };
    // Every ticket between them left the line.
    const left = ticketsBetween(head, tail).map((ticket, index) => {
      values[`:b${index}`] = { N: String(ticket) };
      return ` AND contains(#left, :b${index})`;
    });
    return this.withLease(key, entry, (now) => ({
      id: entry.id,
      set: ['#readers.#rid = :entry', '#rvn = :rvn', '#updatedAt = :now', ...(upgradeable ? ['#upgrader = :rid'] : [])],
      remove: ['#live'],
      // No reader joins a group whose upgradeable reader upgrades; an upgradeable one, none that has one.
      condition:
        '#token = :group AND #head = :head AND #tail = :tail AND attribute_not_exists(#readers.#rid) AND size(#readers) < :max' +
        ' AND attribute_not_exists(#upgrading)' +
        (upgradeable ? ' AND attribute_not_exists(#upgrader)' : '') +
        left.join(''),
      values: { ...groupValues(entry, now), ...values },
    }));
  }

  heartbeat({ key, entry }: ReaderWrite): Promise<WriteResult> {
    return this.withLease(key, entry, (now) => ({
      id: entry.id,
      set: ['#readers.#rid = :entry', '#rvn = :rvn', '#updatedAt = :now'],
      remove: ['#live'],
      condition: '#token = :group AND attribute_exists(#readers.#rid)',
      values: groupValues(entry, now),
    }));
  }

  async release(key: string, id: string, leaseMs: number, heldMs?: number): Promise<boolean> {
    const result = await this.leave(key, id, undefined, leaseMs, heldMs);
    if (result.ok) return true;
    // A retry after a lost answer finds its own release recorded.
    const current = result.current ?? (await this.mutex.read(key));
    return current?.released === id;
  }

  pass(key: string, seen: ReaderEntry): Promise<WriteResult> {
    return this.leave(key, seen.id, seen, seen.leaseMs);
  }

  claimUpgrade(key: string, id: string): Promise<WriteResult> {
    return this.update(key, undefined, Date.now(), {
      id,
      set: ['#upgrading = :rid'],
      condition: '#token = :group AND #upgrader = :rid AND attribute_exists(#readers.#rid)',
      values: { ':group': { S: READ_GROUP_TOKEN }, ':rid': { S: id } },
    });
  }

  convert(key: string, id: string, holder: UpgradeHolder): Promise<WriteResult> {
    const now = Date.now();
    return this.update(key, holder.leaseMs, now, {
      id,
      set: [
        '#token = :token',
        '#owner = :owner',
        '#lease = :lease',
        '#fence = #fence + :one',
        '#rvn = :rvn',
        '#acquiredAt = :now',
        '#updatedAt = :now',
      ],
      remove: ['#readers', '#upgrader', '#upgrading', '#live', '#data'],
      condition: '#token = :group AND #upgrading = :rid AND size(#readers) = :one AND attribute_exists(#readers.#rid)',
      values: {
        ':group': { S: READ_GROUP_TOKEN },
        ':rid': { S: id },
        ':token': { S: holder.token },
        ':owner': { S: holder.owner },
        ':lease': { N: String(holder.leaseMs) },
        ':one': { N: '1' },
        ':rvn': { S: randomToken() },
        ':now': { N: String(now) },
      },
    });
  }

  abandonUpgrade(key: string, id: string): Promise<WriteResult> {
    return this.update(key, undefined, Date.now(), {
      id,
      set: [],
      remove: ['#upgrading'],
      condition: '#upgrading = :rid',
      values: { ':rid': { S: id } },
    });
  }

  /**
   * Removes an entry: while others hold, the entry alone; the last one ends the group as a mutex
   * release ends a hold (next ticket served, counter raised, then the left tickets it serves
   * passed). Which of the two it is, the item tells: the write tries the one the last answer
   * suggests, and a refusal's item the other.
   */
  private async leave(key: string, id: string, seen: ReaderEntry | undefined, leaseMs: number, heldMs?: number): Promise<WriteResult> {
    let last = false;
    // Whether the entry holds the group's upgrader slot (then it goes with it): a refusal tells.
    let upgrader = false;
    // Each refusal that still shows the entry means another reader joined or left in between:
    // the group changed, so the next try has news. Bounded all the same.
    for (let attempt = 0; attempt < LEAVE_ATTEMPTS; attempt++) {
      const result = await this.update(key, last ? leaseMs : undefined, Date.now(), leaveUpdate(id, seen, last, heldMs, upgrader));
      if (result.ok) {
        if (last) await this.passLeftAfter(result.record);
        return result;
      }
      const current = result.current ?? (await this.mutex.read(key));
      const entry = readerOf(current, id);
      if (!entry || (seen && entry.version !== seen.version)) return { ok: false, current };
      last = Object.keys(current?.readers ?? {}).length === 1;
      upgrader = current?.upgrader === id;
    }
    throw new LockUnavailableError(READ_LEAVE_CONTENDED(key, LEAVE_ATTEMPTS), key, 0, 0);
  }

  /** Sends a write that sets the reader's lease: kept when the group's is as long, else raised (see the class). */
  private async withLease(key: string, entry: ReaderEntry, parts: (now: number) => ReaderUpdate): Promise<WriteResult> {
    const now = Date.now();
    const base = parts(now);
    const keep = await this.update(key, entry.leaseMs, now, { ...base, condition: `${base.condition} AND #lease >= :lease` });
    if (keep.ok) return keep;
    const current = keep.current ?? (await this.mutex.read(key));
    if (current?.leaseMs === undefined || current.leaseMs >= entry.leaseMs) return { ok: false, current };
    return this.update(key, entry.leaseMs, now, {
      ...base,
      set: [...base.set, '#lease = :lease'],
      // `<=`: a resend of an applied raise is applied again (the lease equals it then), not refused.
      condition: `${base.condition} AND #lease <= :lease`,
    });
  }

  private async passLeftAfter(record: LockRecord): Promise<void> {
    const run = leftRun(record);
    if (run) await this.mutex.passLeft(record.key, run).catch(() => undefined);
  }

  private async update(key: string, ttlLeaseMs: number | undefined, now: number, parts: ReaderUpdate): Promise<WriteResult> {
    const { id, values, ...update } = parts;
    const text = [...update.set, ...(update.remove ?? []), update.condition].join(' ');
    // Every write takes the values it uses from a common set: DynamoDB refuses unused ones.
    const used = Object.fromEntries(Object.entries(values).filter(([name]) => new RegExp(`${name}\\b`).test(text)));
    const result = await updateItem(
      this.client,
      this.options,
      {
        ...update,
        values: used,
        key,
        names: ATTRIBUTE_NAMES,
        exactNames: /#rid\b/.test(text) ? { '#rid': id } : undefined,
        returnNew: true,
      },
      ttlLeaseMs,
      now,
    );
    if (result.ok) return { ok: true, record: toLockRecord(result.item ?? itemKeyOf(this.keys, key), this.keys) };
    return { ok: false, current: result.item ? this.mutex.recordOf(key, result.item) : undefined };
  }
}

/** The values every reader write that sets its entry uses. */
function groupValues(entry: ReaderEntry, now: number): Record<string, AttributeValue> {
  return {
    ':group': { S: READ_GROUP_TOKEN },
    ':groupOwner': { S: READ_GROUP_OWNER },
    ':entry': { S: formatEntry(entry) },
    ':rid': { S: entry.id },
    ':lease': { N: String(entry.leaseMs) },
    ':rvn': { S: randomToken() },
    ':now': { N: String(now) },
  };
}

/** The write removing entry `id` (`seen`: only at that version, a pass), not the last one or the last. */
function leaveUpdate(
  id: string,
  seen: ReaderEntry | undefined,
  last: boolean,
  heldMs: number | undefined,
  upgrader: boolean,
): ReaderUpdate {
  const now = Date.now();
  const values: Record<string, AttributeValue> = {
    ':group': { S: READ_GROUP_TOKEN },
    ':one': { N: '1' },
    ':now': { N: String(now) },
    ':rid': { S: id },
  };
  let condition = `#token = :group AND size(#readers) ${last ? '=' : '>'} :one AND `;
  if (seen) {
    values[':seen'] = { S: formatEntry(seen) };
    condition += '#readers.#rid = :seen';
  } else condition += 'attribute_exists(#readers.#rid)';
  // A release records itself, so a retry after a lost answer knows it was done.
  const released = seen ? [] : ['#released = :rid'];
  if (!last) {
    // The upgrader slot goes with its reader; another reader's leave leaves it (and says so).
    const slot = upgrader ? ' AND #upgrader = :rid' : ' AND (attribute_not_exists(#upgrader) OR #upgrader <> :rid)';
    const remove = ['#readers.#rid', ...(upgrader ? ['#upgrader', '#upgrading'] : [])];
    return { id, set: ['#updatedAt = :now', ...released], remove, condition: condition + slot, values };
  }
  return {
    id,
    set: ['#head = #head + :one', '#fence = #fence + :one', '#rvn = :rvn', '#updatedAt = :now', ...released, ...lastHold(heldMs)],
    remove: ['#token', '#owner', '#data', '#lease', '#acquiredAt', '#live', '#readers', '#upgrader', '#upgrading', ...noHold(heldMs)],
    condition,
    values: { ...values, ':rvn': { S: randomToken() }, ...heldValue(heldMs) },
  };
}

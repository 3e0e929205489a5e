import { type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { LockTableKeys } from '../../interfaces/lock-table-keys.interface';
import { randomToken } from '../../utils/random-token';
import { ATTRIBUTE_NAMES, LEFT_MAX, type LeftRun, type LockRecord, leftRun, toLockRecord } from './mutex.record';
import type { ReadConsistency } from '../store.protocol';
import type { DynamoStoreOptions } from '../dynamo/dynamo-store.options';
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
  acquireParts,
  atVersion,
  claimFire,
  freeCondition,
  HELD,
  heldValue,
  holdingCondition,
  lastHold,
  LOCK_SHAPE,
  LOCK_SHAPE_ATTRIBUTES,
  noHold,
  onlyLockItem,
} from './mutex.expressions';
import { sendAcquireAll } from './mutex.acquire-all';
import { readItem, scanItems, type UpdateParts, updateItem } from '../dynamo/item-requests';
import { DEFAULT_TABLE_KEYS, isForeignItem, isSharedTable, itemKeyOf } from '../dynamo/table-schema';
import { LockConfigurationError } from '../../errors/lock.errors';
import { FOREIGN_ITEM_AT_KEY } from '../../errors/lock.messages';

/** One UpdateItem, before attribute names are picked and values completed. */
interface Update extends UpdateParts {
  key: string;
  condition: string;
  returnNew?: boolean;
}

/**
 * Every DynamoDB request on mutex items, and every condition expression, in one place.
 *
 * Writes are single conditional `UpdateItem`s. A write that takes or keeps ownership also
 * matches the writer's own token (`OR #token = :token`) where re-applying it is harmless, so a
 * write the SDK retries after a lost response succeeds again instead of failing against its own
 * earlier success. Writes that also move the queue are not re-applied; a retry of one fails its
 * condition, and the caller recognises its own token in the item instead.
 */
export class DynamoMutexStore implements MutexStorePort {
  private readonly keys: LockTableKeys;
  /** `false` once the server answered that it has no transactions (dynalite): asked once per store. */
  private transactions = true;

  constructor(
    private readonly client: DynamoDBClient,
    private readonly options: DynamoStoreOptions,
  ) {
    this.keys = options.keys ?? DEFAULT_TABLE_KEYS;
  }

  /**
   * Takes the lock in one conditional write (what it writes: `acquireParts()`). Free: nobody holds
   * or waits. Hand-over: the holder gives it to another caller of its process.
   */
  acquire(write: AcquireWrite): Promise<WriteResult> {
    const now = Date.now();
    const { set, remove, values, claim } = acquireParts(write, now, randomToken());
    // Free: not re-applicable (it takes a ticket): a retry fails, and the caller finds its token in
    // the item. Hand-over: re-applicable by the new holder (the head does not move), unless it
    // claims a fire: then the retry fails on its own claim, and the caller finds its token.
    const condition =
      write.condition.kind === 'free'
        ? freeCondition(`${claim}${onlyLockItem(this.keys)}`)
        : `#token = :token${claim} OR ${holdingCondition(write.condition.from, values, ':from', claim)}`;
    return this.update({ key: write.key, set, remove, condition, values, returnNew: true }, write.leaseMs, now);
  }

  /** Takes several free keys in one `TransactWriteItems`, all or none; `unsupported` without transactions (remembered). */
  async acquireAll(write: AcquireAllWrite): Promise<AcquireAllResult> {
    if (!this.transactions) return { kind: 'unsupported' };
    const result = await sendAcquireAll(this.client, this.options, write, onlyLockItem(this.keys));
    if (result.kind === 'unsupported') this.transactions = false;
    return result;
  }

  /**
   * Takes the next ticket (`tail`) for a waiter: its place in line, served once `head` reaches it.
   * The item keeps no list of waiters, so this write and every other stays small whoever waits.
   * A retry of this write after a lost answer fails (its token is the last ticket's) instead of
   * taking a second ticket, unless another waiter took one in between. The answer is the item as
   * written: the waiter's ticket is `tail - 1`; when that is `head` the lock was free and it is
   * the waiter's already. Keeps the record version: waiters watching the holder are not reset.
   */
  enqueue(write: TicketWrite): Promise<WriteResult> {
    const now = Date.now();
    return this.update(
      {
        key: write.key,
        set: [
          '#tail = if_not_exists(#tail, :base) + :one',
          '#head = if_not_exists(#head, :base)',
          '#fence = if_not_exists(#fence, :base)',
          '#tailToken = :token',
          // A new item gets a version, so that waiters can watch (and pass) a first holder that dies.
          '#rvn = if_not_exists(#rvn, :rvn)',
          '#updatedAt = if_not_exists(#updatedAt, :now)',
        ],
        add: ['#claims :claim'],
        condition: `(attribute_not_exists(#tailToken) OR #tailToken <> :token) AND (attribute_exists(#head) OR attribute_not_exists(#token))${onlyLockItem(this.keys)}`,
        values: {
          ':token': { S: write.token },
          ':base': { N: String(now * 1000) },
          ':one': { N: '1' },
          ':rvn': { S: randomToken() },
          ':now': { N: String(now) },
          ':claim': { NS: [String(Math.round(write.claimMs))] },
        },
        returnNew: true,
      },
      0,
      now,
    );
  }

  /**
   * Passes a holder (or a promoted waiter) whose record version `write.rvn` stayed unchanged for
   * its whole lease: `head` moves to `write.target`, the fencing counter rises, and the writer holds
   * when the target is its own ticket. Fails when the version changed (the holder is alive) or the
   * roll call changed since it was read.
   */
  skip(write: SkipWrite): Promise<WriteResult> {
    const now = Date.now();
    const values: Record<string, AttributeValue> = {
      ':seenRvn': { S: write.rvn },
      ':rvn': { S: randomToken() },
      ':target': { N: String(write.target) },
      ':now': { N: String(now) },
      ':one': { N: '1' },
    };
    const set = ['#head = :target', '#fence = #fence + :one', '#rvn = :rvn', '#updatedAt = :now'];
    // A read group passed goes with its readers.
    const remove = ['#live', '#readers', '#upgrader', '#upgrading'];
    // Tickets passed that had left: out of the set with them (it holds only tickets still in line).
    const del: string[] = [];
    if (write.leftPassed?.length) {
      del.push('#left :leftPassed');
      values[':leftPassed'] = { NS: write.leftPassed.map(String) };
    }
    const { holder } = write;
    let claim = '';
    // A writer that claims a fire replaces the record of the one passed: `fireLost` is moot then.
    if (write.fireLost && holder?.fire === undefined) {
      set.push('#fireOutcome = :lost', '#fireEnd = :now');
      values[':lost'] = { S: 'lost' };
    }
    if (holder) {
      set.push('#token = :token', '#owner = :owner', '#lease = :lease', '#acquiredAt = :now');
      Object.assign(values, { ':token': { S: holder.token }, ':owner': { S: holder.owner }, ':lease': { N: String(holder.leaseMs) } });
      claim = claimFire(holder.fire, holder.owner, set, remove, values);
      if (holder.data === undefined) remove.push('#data');
      else {
        set.push('#data = :data');
        values[':data'] = { S: holder.data };
      }
    } else remove.push('#token', '#owner', '#data', '#lease', '#acquiredAt');
    let live = 'attribute_not_exists(#live)';
    if (write.live !== undefined) {
      live = '#live = :seenLive';
      values[':seenLive'] = { N: String(write.live) };
    }
    return this.update(
      {
        key: write.key,
        set,
        remove,
        del,
        // A holder's ticket was taken (below `tail`); without one, `head` may reach `tail` (free).
        condition: `#rvn = :seenRvn AND ${live} AND #head < :target AND #tail ${holder ? '>' : '>='} :target${claim}`,
        values,
        returnNew: true,
      },
      holder?.leaseMs,
      now,
    );
  }

  /**
   * Answers the roll call of a stalled head: records `ticket` as alive when it is the smallest
   * so far, so that the write passing the head goes straight to it. Keeps the record version.
   */
  markAlive(key: string, rvn: string, ticket: number): Promise<WriteResult> {
    return this.update(
      {
        key,
        set: ['#live = :ticket'],
        condition: '#rvn = :seenRvn AND (attribute_not_exists(#live) OR #live > :ticket) AND #tail > :ticket',
        values: { ':seenRvn': { S: rvn }, ':ticket': { N: String(ticket) } },
      },
      undefined,
    );
  }

  /**
   * Keeps a held lock alive: a new record version (which waiters watch), a fresh TTL, a new lease
   * duration (`undefined` keeps the stored one), and the holder's data when given. A promoted
   * waiter's first heartbeat also writes its token and owner name. Ends any roll call.
   * Returns the item, so the holder learns how many wait.
   */
  heartbeat(write: HeartbeatWrite): Promise<WriteResult> {
    const now = Date.now();
    const values: Record<string, AttributeValue> = {
      ':rvn': { S: randomToken() },
      ':now': { N: String(now) },
      ':owner': { S: write.owner },
      ':acquiredAt': { N: String(write.acquiredAt ?? now) },
    };
    const condition = holdingCondition(write.holding, values, ':', atVersion(write.rvn, values));
    const set = [
      '#rvn = :rvn',
      '#updatedAt = :now',
      '#token = :token',
      '#owner = if_not_exists(#owner, :owner)',
      '#acquiredAt = if_not_exists(#acquiredAt, :acquiredAt)',
    ];
    if (write.leaseMs !== undefined) {
      set.push('#lease = :lease');
      values[':lease'] = { N: String(write.leaseMs) };
    }
    if (write.data !== undefined) {
      set.push('#data = :data');
      values[':data'] = { S: write.data };
    }
    return this.update({ key: write.key, set, remove: ['#live'], condition, values, returnNew: true }, write.ttlLeaseMs, now);
  }

  /**
   * Releases a held lock in one write that also serves the next ticket: `head` moves on by one
   * (the lock is free when it reaches `tail`), the fencing counter rises for the next holder, the
   * holder's attributes go. Records the released token, so a retry of a release whose answer was
   * lost still reports success (without writing again).
   * @returns `false` when the holding no longer held the lock (nothing was changed).
   */
  async release(key: string, holding: Holding, leaseMs: number, heldMs?: number, fire?: ReleaseFire): Promise<boolean> {
    const now = Date.now();
    const values: Record<string, AttributeValue> = {
      ':rvn': { S: randomToken() },
      ':now': { N: String(now) },
      ':one': { N: '1' },
      ...heldValue(heldMs),
    };
    const condition = holdingCondition(holding, values);
    // The fire this holder claimed (the write that took the lock did): its end stays in the item.
    const ended = fire === undefined ? [] : ['#fireOutcome = :outcome', '#fireEnd = :now'];
    if (fire !== undefined) values[':outcome'] = { S: fire };
    const result = await this.update(
      {
        key,
        set: [
          '#head = #head + :one',
          '#fence = #fence + :one',
          '#rvn = :rvn',
          '#released = :token',
          '#updatedAt = :now',
          ...lastHold(heldMs),
          ...ended,
        ],
        remove: ['#token', '#owner', '#data', '#lease', '#acquiredAt', '#live', ...noHold(heldMs)],
        condition,
        values,
        returnNew: true,
      },
      leaseMs,
      now,
    );
    if (result.ok) {
      await this.passLeftAfter(result.record);
      return true;
    }
    // A retry after a lost answer finds its own released token (no write: waiters watch the record
    // version); the pass of left tickets its first answer would have led to is sent now.
    const current = result.current ?? (await this.read(key));
    if (current?.released !== holding.token) return false;
    await this.passLeftAfter(current);
    return true;
  }

  /**
   * Leaves the line: records `ticket` in the item's `left` set (passed at once by whoever sees it
   * served, {@link passLeft}), while it still waits and the set has room ({@link LEFT_MAX}). Keeps
   * the record version. A failure's answer shows why: served already, passed, or the set full.
   */
  leave(key: string, ticket: number): Promise<WriteResult> {
    return this.update(
      {
        key,
        set: [],
        add: ['#left :ticketSet'],
        condition: '#head < :ticket AND #tail > :ticket AND (attribute_not_exists(#left) OR size(#left) < :max)',
        values: { ':ticket': { N: String(ticket) }, ':ticketSet': { NS: [String(ticket)] }, ':max': { N: String(LEFT_MAX) } },
      },
      undefined,
    );
  }

  /**
   * Passes a run of left tickets at the head of the line: `head` moves to `run.target` (the lock is
   * free when that is `tail`), with a new record version, and the passed tickets leave the set. The
   * fencing counter stays: nobody held a left ticket. Fails when the head moved, a token holds the
   * item, or a ticket passed is not in the set.
   */
  passLeft(key: string, run: LeftRun): Promise<WriteResult> {
    const now = Date.now();
    const values: Record<string, AttributeValue> = {
      ':head': { N: String(run.head) },
      ':target': { N: String(run.target) },
      ':passed': { NS: [...run.passed, ...(run.stale ?? [])].map(String) },
      ':rvn': { S: randomToken() },
      ':now': { N: String(now) },
    };
    const each = run.passed.map((ticket, index) => {
      values[`:p${index}`] = { N: String(ticket) };
      return `contains(#left, :p${index})`;
    });
    return this.update(
      {
        key,
        set: ['#head = :target', '#rvn = :rvn', '#updatedAt = :now'],
        remove: ['#live'],
        del: ['#left :passed'],
        condition: ['#head = :head', 'attribute_not_exists(#token)', '#tail >= :target', ...each].join(' AND '),
        values,
        returnNew: true,
      },
      undefined,
      now,
    );
  }

  /** After a write that moved `head`: passes the left tickets it serves (a failure is harmless: any waiter that sees them does it). */
  private async passLeftAfter(record: LockRecord): Promise<void> {
    const run = leftRun(record);
    if (run) await this.passLeft(record.key, run).catch(() => undefined);
  }

  /** One read of a lock item: strongly consistent unless `'eventual'` (timing reads). */
  async read(key: string, consistency: ReadConsistency = 'strong'): Promise<LockRecord | undefined> {
    const item = await readItem(this.client, this.options, key, consistency);
    return item ? this.recordOf(key, item) : undefined;
  }

  /**
   * Every held lock whose stored key starts with `prefix` (a paginated Scan; for tools, not hot
   * paths). In a table shared with the app's items, only items with a lock's shape.
   */
  async *scanHeld(prefix: string): AsyncGenerator<LockRecord> {
    const filter = isSharedTable(this.keys) ? `(${HELD}) AND ${LOCK_SHAPE}` : HELD;
    for await (const item of scanItems(this.client, this.options, filter, ATTRIBUTE_NAMES, prefix)) yield toLockRecord(item, this.keys);
  }

  /**
   * Sends one conditional UpdateItem. With a lease, refreshes the TTL attribute: the later of
   * `ttlDays` and two leases from now, in epoch seconds (`ttlDays: 0` removes it).
   */
  private async update(update: Update, ttlLeaseMs: number | undefined, now = Date.now()): Promise<WriteResult> {
    const result = await updateItem(
      this.client,
      this.options,
      { ...update, names: ATTRIBUTE_NAMES, returnNew: update.returnNew ?? false },
      ttlLeaseMs,
      now,
    );
    if (result.ok) return { ok: true, record: toLockRecord(result.item ?? itemKeyOf(this.keys, update.key), this.keys) };
    return { ok: false, current: result.item ? this.recordOf(update.key, result.item) : undefined };
  }

  /**
   * The record of an item read at `key`.
   * @throws LockConfigurationError when it is one of the app's items (a shared table, and the same key).
   */
  recordOf(key: string, item: Record<string, AttributeValue>): LockRecord {
    if (isForeignItem(item, this.keys, LOCK_SHAPE_ATTRIBUTES)) {
      throw new LockConfigurationError(FOREIGN_ITEM_AT_KEY(this.options.tableName, key, this.keys));
    }
    return toLockRecord(item, this.keys);
  }
}

import {
  type AttributeValue,
  type DynamoDBClient,
  GetItemCommand,
  type GetItemCommandOutput,
  ScanCommand,
  type ScanCommandOutput,
  UpdateItemCommand,
  type UpdateItemCommandOutput,
} from '@aws-sdk/client-dynamodb';
import { randomToken } from '../utils/random-token';
import type { LockLogger } from '../interfaces/lock-logger.interface';
import { LockTableError } from '../errors/lock.errors';
import { REQUEST_TIMED_OUT, TABLE_MISSING } from '../errors/lock.messages';
import { ATTR, ATTRIBUTE_NAMES, type LockRecord, toLockRecord } from './lock-record';
import type { LockStorePort } from './lock-store.interface';
import { type AcquireWrite, CLAIM_LEASE_MS, type QueueWrite, queuedData, type TableHealth, type WriteResult } from './lock-store.protocol';
import { ensureLockTable, tableHealth } from './lock-table';
import { sendWithinLimit } from './timed-request';
import { isConditionFailure } from './transient-error';

/** How the store computes the TTL attribute. */
export interface LockStoreOptions {
  tableName: string;
  /** Days after the last write before DynamoDB TTL may delete the item; 0 writes no TTL attribute. */
  ttlDays: number;
  /** Where table creation is reported. */
  logger?: LockLogger;
  /** Time limit of each request in ms (SDK retries included); none when absent. */
  requestTimeoutMs?: number;
}

/** One UpdateItem, before attribute names are picked and values completed. */
interface Update {
  key: string;
  set: string[];
  remove?: string[];
  add?: string[];
  delete?: string[];
  condition: string;
  values: Record<string, AttributeValue>;
  returnNew?: boolean;
}

/**
 * Every DynamoDB request the lock makes, and every condition expression, in one place.
 *
 * Writes are single conditional `UpdateItem`s. A write that takes or keeps ownership also
 * matches the writer's own token (`OR #token = :token`) where re-applying it is harmless, so a
 * write the SDK retries after a lost response succeeds again instead of failing against its own
 * earlier success. Writes that also move the queue are not re-applied; a retry of one fails its
 * condition, and the caller recognises its own token in the item instead.
 */
export class LockStore implements LockStorePort {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly options: LockStoreOptions,
  ) {}

  /** The table this store writes to. */
  get tableName(): string {
    return this.options.tableName;
  }

  /** Checks that the table exists with the right key schema, creating it when `create` is set. */
  prepare(create: boolean): Promise<void> {
    return ensureLockTable(this.client, this.options.tableName, { create, logger: this.options.logger });
  }

  /** The table's status, from one `DescribeTable` that stops waiting when `signal` aborts. */
  health(signal: AbortSignal): Promise<TableHealth> {
    return tableHealth(this.client, this.options.tableName, signal);
  }

  /**
   * Takes the lock in one conditional write: sets the owner token and a new record version,
   * and raises the fencing counter in the same write. A counter created anew starts from the
   * current time in microseconds, so it still exceeds every token of an item TTL deleted earlier.
   */
  acquire(write: AcquireWrite): Promise<WriteResult> {
    const now = Date.now();
    const values: Record<string, AttributeValue> = {
      ':token': { S: write.token },
      ':owner': { S: write.owner },
      ':rvn': { S: randomToken() },
      ':lease': { N: String(write.leaseMs) },
      ':now': { N: String(now) },
      ':one': { N: '1' },
      ':fenceBase': { N: String(now * 1000) },
    };
    const set = [
      '#owner = :owner',
      '#token = :token',
      '#rvn = :rvn',
      '#lease = :lease',
      '#acquiredAt = :now',
      '#updatedAt = :now',
      '#fence = if_not_exists(#fence, :fenceBase) + :one',
    ];
    const remove = ['#released'];
    if (write.data === undefined) remove.push('#data');
    else {
      set.push('#data = :data');
      values[':data'] = { S: write.data };
    }
    const dropped: string[] = [];
    let condition: string;
    switch (write.condition.kind) {
      case 'free':
        condition = 'attribute_not_exists(#token) AND attribute_not_exists(#queue[0])';
        break;
      case 'head':
        condition = 'attribute_not_exists(#token)';
        break;
      case 'takeover':
        condition = '#rvn = :seenRvn';
        values[':seenRvn'] = { S: write.condition.rvn };
        if (write.condition.holder) dropped.push(write.condition.holder);
        break;
      case 'handover':
        condition = '#token = :fromToken';
        values[':fromToken'] = { S: write.condition.fromToken };
        dropped.push(write.condition.fromToken);
        break;
    }
    if (write.queuedAt === undefined) {
      condition = `(${condition}) OR #token = :token`;
    } else {
      // Dequeue in the same write; not re-applicable, so no "OR #token = :token" here.
      const at = Math.trunc(write.queuedAt);
      condition = `(${condition}) AND #queue[${at}].#token = :token`;
      remove.push(`#queue[${at}]`);
      dropped.push(write.token);
    }
    // Tokens that no longer wait leave the queued set, which would otherwise grow on busy keys.
    const deletes = dropped.length ? ['#queued :dropped'] : [];
    if (dropped.length) values[':dropped'] = { SS: [...new Set(dropped)] };
    return this.update({ key: write.key, set, remove, delete: deletes, condition, values, returnNew: true }, write.leaseMs, now);
  }

  /**
   * Records a waiter at the end of the item's queue while the lock is held (or others are
   * queued). A retried enqueue
   * fails its condition (the token is already in the queued set) instead of adding it twice.
   */
  enqueue(waiter: QueueWrite): Promise<WriteResult> {
    const entry: Record<string, AttributeValue> = {
      [ATTR.token]: { S: waiter.token },
      [ATTR.owner]: { S: waiter.owner },
      [ATTR.lease]: { N: String(Math.min(waiter.leaseMs, CLAIM_LEASE_MS)) },
      // Always present (empty reads as none): a promotion copies it, and copying a missing path is an error.
      [ATTR.data]: { S: queuedData(waiter.data) },
    };
    return this.update(
      {
        key: waiter.key,
        set: ['#queue = list_append(if_not_exists(#queue, :empty), :entry)'],
        add: ['#queued :tokenSet'],
        // Never behind itself: a waiter whose own token holds the item (a hand-over answered with an
        // error) is told so by the failed condition, and confirms the lock instead.
        condition:
          '(attribute_exists(#token) OR attribute_exists(#queue[0])) AND NOT contains(#queued, :token) AND (attribute_not_exists(#token) OR #token <> :token)',
        values: {
          ':empty': { L: [] },
          ':entry': { L: [{ M: entry }] },
          ':tokenSet': { SS: [waiter.token] },
          ':token': { S: waiter.token },
        },
        returnNew: true,
      },
      undefined,
    );
  }

  /** Takes a waiter out of the queue (it gave up). Fails when `index` no longer holds its token. */
  leave(key: string, token: string, index: number): Promise<WriteResult> {
    const at = Math.trunc(index);
    return this.update(
      {
        key,
        set: [],
        remove: [`#queue[${at}]`],
        delete: ['#queued :tokenSet'],
        condition: `#queue[${at}].#token = :token`,
        values: { ':token': { S: token }, ':tokenSet': { SS: [token] } },
      },
      undefined,
    );
  }

  /**
   * Keeps a held lock alive: a new record version (which waiters watch), a fresh TTL and,
   * a new lease duration (`undefined` keeps the stored one), and the holder's data when given
   * (a promoted waiter's). Only the owner token's holder can do it.
   * Returns the item, so the holder learns who is queued.
   */
  heartbeat(key: string, token: string, leaseMs: number | undefined, ttlLeaseMs = leaseMs ?? 0, data?: string): Promise<WriteResult> {
    const now = Date.now();
    const values: Record<string, AttributeValue> = { ':token': { S: token }, ':rvn': { S: randomToken() }, ':now': { N: String(now) } };
    const set = ['#rvn = :rvn', '#updatedAt = :now'];
    if (leaseMs !== undefined) {
      set.push('#lease = :lease');
      values[':lease'] = { N: String(leaseMs) };
    }
    if (data !== undefined) {
      set.push('#data = :data');
      values[':data'] = { S: data };
    }
    return this.update({ key, set, condition: '#token = :token', values, returnNew: true }, ttlLeaseMs, now);
  }

  /**
   * Releases a held lock: clears the owner token but keeps the item and its fencing counter, so
   * the next holder's token is larger. Records the released token, so a retry of a release whose
   * response was lost still reports success (without writing again).
   * @returns `false` when the token no longer held the lock (nothing was changed).
   */
  async release(key: string, token: string, leaseMs: number, heldMs?: number): Promise<boolean> {
    const now = Date.now();
    const result = await this.update(
      {
        key,
        set: ['#rvn = :rvn', '#released = :token', '#updatedAt = :now', ...lastHold(heldMs)],
        remove: ['#token', '#owner', '#data'],
        delete: ['#queued :tokenSet'],
        condition: '#token = :token',
        values: {
          ':token': { S: token },
          ':rvn': { S: randomToken() },
          ':now': { N: String(now) },
          ':tokenSet': { SS: [token] },
          ...heldValue(heldMs),
        },
      },
      leaseMs,
      now,
    );
    if (result.ok) return true;
    // A retry after a lost response finds its own released token (no write: waiters watch the
    // record version); a token that promoted the lock away finds another holder.
    const current = result.current ?? (await this.read(key));
    return current?.released === token && current.token === undefined;
  }

  /**
   * Releases a held lock straight to the head of the item's queue, in one write: the head's
   * token, owner, lease and data become the lock's, the fencing counter rises, the head leaves
   * the queue. Fails (changing nothing) when the token does not hold the lock or nobody is queued.
   */
  promote(key: string, token: string, leaseMs: number, heldMs?: number): Promise<WriteResult> {
    const now = Date.now();
    const from = (name: string) => `#${name} = #queue[0].#${name}`;
    return this.update(
      {
        key,
        set: [
          from('token'),
          from('owner'),
          '#lease = #queue[0].#lease',
          from('data'),
          '#rvn = :rvn',
          '#released = :token',
          '#acquiredAt = :now',
          '#updatedAt = :now',
          '#fence = #fence + :one',
          ...lastHold(heldMs),
        ],
        remove: ['#queue[0]'],
        delete: ['#queued :tokenSet'],
        condition: '#token = :token AND attribute_exists(#queue[0])',
        values: {
          ':token': { S: token },
          ':rvn': { S: randomToken() },
          ':now': { N: String(now) },
          ':one': { N: '1' },
          ':tokenSet': { SS: [token] },
          ...heldValue(heldMs),
        },
        returnNew: true,
      },
      leaseMs,
      now,
    );
  }

  /** Strongly consistent read of one lock item. */
  async read(key: string): Promise<LockRecord | undefined> {
    const output = await this.send(
      'GetItem',
      new GetItemCommand({ TableName: this.options.tableName, Key: { [ATTR.key]: { S: key } }, ConsistentRead: true }),
    );
    return output.Item ? toLockRecord(output.Item) : undefined;
  }

  /** Every held lock whose stored key starts with `prefix` (a paginated Scan; for tools, not hot paths). */
  async *scanHeld(prefix: string): AsyncGenerator<LockRecord> {
    let startKey: Record<string, AttributeValue> | undefined;
    do {
      const output = await this.send(
        'Scan',
        new ScanCommand({
          TableName: this.options.tableName,
          ConsistentRead: true,
          ExclusiveStartKey: startKey,
          FilterExpression: prefix ? 'attribute_exists(#token) AND begins_with(#key, :prefix)' : 'attribute_exists(#token)',
          ExpressionAttributeNames: prefix ? { '#token': ATTR.token, '#key': ATTR.key } : { '#token': ATTR.token },
          ExpressionAttributeValues: prefix ? { ':prefix': { S: prefix } } : undefined,
        }),
      );
      for (const item of output.Items ?? []) yield toLockRecord(item);
      startKey = output.LastEvaluatedKey;
    } while (startKey);
  }

  /**
   * Sends one conditional UpdateItem. With a lease, refreshes the TTL attribute: the later of
   * `ttlDays` and two leases from now, in epoch seconds (`ttlDays: 0` removes it).
   */
  private async update(update: Update, ttlLeaseMs: number | undefined, now = Date.now()): Promise<WriteResult> {
    const set = [...update.set];
    const remove = [...(update.remove ?? [])];
    const values = { ...update.values };
    if (ttlLeaseMs !== undefined) {
      if (this.options.ttlDays <= 0) remove.push('#ttl');
      else {
        const keepMs = Math.max(this.options.ttlDays * 86_400_000, 2 * ttlLeaseMs);
        values[':ttl'] = { N: String(Math.ceil((now + keepMs) / 1000)) };
        set.push('#ttl = :ttl');
      }
    }
    const clauses = [
      set.length ? `SET ${set.join(', ')}` : '',
      remove.length ? `REMOVE ${remove.join(', ')}` : '',
      update.add?.length ? `ADD ${update.add.join(', ')}` : '',
      update.delete?.length ? `DELETE ${update.delete.join(', ')}` : '',
    ].filter(Boolean);
    const expression = clauses.join(' ');
    try {
      const output = await this.send(
        'UpdateItem',
        new UpdateItemCommand({
          TableName: this.options.tableName,
          Key: { [ATTR.key]: { S: update.key } },
          UpdateExpression: expression,
          ConditionExpression: update.condition,
          ExpressionAttributeNames: pick(ATTRIBUTE_NAMES, `${expression} ${update.condition}`),
          ExpressionAttributeValues: values,
          ReturnValues: update.returnNew ? 'ALL_NEW' : undefined,
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { ok: true, record: toLockRecord(output.Attributes ?? { [ATTR.key]: { S: update.key } }) };
    } catch (error) {
      if (isConditionFailure(error)) return { ok: false, current: error.Item ? toLockRecord(error.Item) : undefined };
      throw error;
    }
  }

  /**
   * Sends one request within `requestTimeoutMs`. The SDK gets an abort signal, and the timer also
   * settles the call itself, since the SDK may not look at the signal between its own retries: a
   * hung server yields a `TimeoutError` (transient, so retried or reported as an outage, never as
   * a busy lock). A table deleted under a running app becomes a `LockTableError`.
   */
  private send(operation: 'UpdateItem', command: UpdateItemCommand): Promise<UpdateItemCommandOutput>;
  private send(operation: 'GetItem', command: GetItemCommand): Promise<GetItemCommandOutput>;
  private send(operation: 'Scan', command: ScanCommand): Promise<ScanCommandOutput>;
  private async send(
    operation: string,
    command: UpdateItemCommand | GetItemCommand | ScanCommand,
  ): Promise<UpdateItemCommandOutput | GetItemCommandOutput | ScanCommandOutput> {
    const { tableName, requestTimeoutMs } = this.options;
    try {
      return await sendWithinLimit(this.client, command, requestTimeoutMs, (lastAttempt) =>
        REQUEST_TIMED_OUT(operation, tableName, requestTimeoutMs ?? 0, lastAttempt),
      );
    } catch (error) {
      if (error instanceof Error && error.name === 'ResourceNotFoundException') {
        throw new LockTableError(TABLE_MISSING(tableName), tableName, 'missing');
      }
      throw error;
    }
  }
}

/** `SET` clause recording the hold time, when known. */
function lastHold(heldMs: number | undefined): string[] {
  return heldMs === undefined ? [] : ['#lastHold = :held'];
}

function heldValue(heldMs: number | undefined): Record<string, AttributeValue> {
  return heldMs === undefined ? {} : { ':held': { N: String(Math.max(0, Math.round(heldMs))) } };
}

/** The attribute-name placeholders an expression uses (DynamoDB rejects unused ones). */
function pick(names: Record<string, string>, expression: string): Record<string, string> {
  return Object.fromEntries(Object.entries(names).filter(([alias]) => new RegExp(`${alias}\\b`).test(expression)));
}

import {
  type AttributeValue,
  type DynamoDBClient,
  GetItemCommand,
  ScanCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { randomToken } from '../utils/random-token';
import { ATTR, ATTRIBUTE_NAMES, type LockRecord, toLockRecord } from './lock-record';
import { isConditionFailure } from './transient-error';

/** Which state of the item an acquisition write may replace. */
export type AcquireCondition =
  /** The item is missing or released. */
  | { kind: 'free' }
  /** The item still carries the record version a waiter watched for a whole lease. */
  | { kind: 'takeover'; rvn: string }
  /** The item is held by a local holder who hands it straight to the next local waiter. */
  | { kind: 'handover'; fromToken: string };

/** What an acquisition write needs. */
export interface AcquireWrite {
  key: string;
  token: string;
  owner: string;
  leaseMs: number;
  data?: string;
  condition: AcquireCondition;
}

/** Result of an acquisition write. `current` is the item that blocked it, when the server returned it. */
export type AcquireResult =
  | { acquired: true; record: LockRecord }
  | { acquired: false; current: LockRecord | undefined };

/** Result of a heartbeat write. */
export type HeartbeatResult = { ok: true; rvn: string } | { ok: false; current: LockRecord | undefined };

/** How the store computes the TTL attribute. */
export interface LockStoreOptions {
  tableName: string;
  /** Days after the last write before DynamoDB TTL may delete the item; 0 writes no TTL attribute. */
  ttlDays: number;
}

/**
 * Every DynamoDB request the lock makes, and every condition expression, in one place.
 *
 * Writes are single conditional `UpdateItem`s. Each one that takes or keeps ownership also
 * matches the writer's own token (`OR #token = :token`), so a write the SDK retries after a
 * lost response succeeds again instead of failing against its own earlier success.
 */
export class LockStore {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly options: LockStoreOptions,
  ) {}

  /** The table this store writes to. */
  get tableName(): string {
    return this.options.tableName;
  }

  /**
   * Takes the lock in one conditional write: sets the owner token and a new record version,
   * and raises the fencing counter in the same write. A counter created anew starts from the
   * current time in microseconds, so it still exceeds every token of an item TTL deleted earlier.
   */
  async acquire(write: AcquireWrite): Promise<AcquireResult> {
    const now = Date.now();
    const rvn = randomToken();
    const values: Record<string, AttributeValue> = {
      ':token': { S: write.token },
      ':owner': { S: write.owner },
      ':rvn': { S: rvn },
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
    this.applyTtl(write.leaseMs, now, values, set, remove);
    if (write.data === undefined) remove.push('#data');
    else {
      set.push('#data = :data');
      values[':data'] = { S: write.data };
    }
    let condition: string;
    switch (write.condition.kind) {
      case 'free':
        condition = 'attribute_not_exists(#token) OR #token = :token';
        break;
      case 'takeover':
        condition = '#rvn = :seenRvn OR #token = :token';
        values[':seenRvn'] = { S: write.condition.rvn };
        break;
      case 'handover':
        condition = '#token = :fromToken OR #token = :token';
        values[':fromToken'] = { S: write.condition.fromToken };
        break;
    }
    try {
      const output = await this.client.send(
        new UpdateItemCommand({
          TableName: this.options.tableName,
          Key: { [ATTR.key]: { S: write.key } },
          UpdateExpression: `SET ${set.join(', ')} REMOVE ${remove.join(', ')}`,
          ConditionExpression: condition,
          ExpressionAttributeNames: pick(ATTRIBUTE_NAMES, `${set.join()} ${remove.join()} ${condition}`),
          ExpressionAttributeValues: values,
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { acquired: true, record: toLockRecord(output.Attributes ?? {}) };
    } catch (error) {
      if (isConditionFailure(error)) return { acquired: false, current: error.Item ? toLockRecord(error.Item) : undefined };
      throw error;
    }
  }

  /**
   * Keeps a held lock alive: a new record version (which waiters watch), a fresh TTL and,
   * for `extend()`, a new lease duration. Only the owner token's holder can do it.
   */
  async heartbeat(key: string, token: string, leaseMs: number): Promise<HeartbeatResult> {
    const now = Date.now();
    const rvn = randomToken();
    const values: Record<string, AttributeValue> = {
      ':token': { S: token },
      ':rvn': { S: rvn },
      ':lease': { N: String(leaseMs) },
      ':now': { N: String(now) },
    };
    const set = ['#rvn = :rvn', '#lease = :lease', '#updatedAt = :now'];
    const remove: string[] = [];
    this.applyTtl(leaseMs, now, values, set, remove);
    const condition = '#token = :token';
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.options.tableName,
          Key: { [ATTR.key]: { S: key } },
          UpdateExpression: `SET ${set.join(', ')}${remove.length ? ` REMOVE ${remove.join(', ')}` : ''}`,
          ConditionExpression: condition,
          ExpressionAttributeNames: pick(ATTRIBUTE_NAMES, `${set.join()} ${remove.join()} ${condition}`),
          ExpressionAttributeValues: values,
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { ok: true, rvn };
    } catch (error) {
      if (isConditionFailure(error)) return { ok: false, current: error.Item ? toLockRecord(error.Item) : undefined };
      throw error;
    }
  }

  /**
   * Releases a held lock: clears the owner token but keeps the item and its fencing counter,
   * so the next holder's token is larger. Records the released token, so a retry of a release
   * whose response was lost still reports success.
   * @returns `false` when the token no longer held the lock (nothing was changed).
   */
  async release(key: string, token: string, leaseMs: number): Promise<boolean> {
    const now = Date.now();
    const values: Record<string, AttributeValue> = {
      ':token': { S: token },
      ':rvn': { S: randomToken() },
      ':now': { N: String(now) },
    };
    const set = ['#rvn = :rvn', '#released = :token', '#updatedAt = :now'];
    const remove = ['#token', '#owner', '#data'];
    this.applyTtl(leaseMs, now, values, set, remove);
    const condition = '#token = :token OR #released = :token';
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.options.tableName,
          Key: { [ATTR.key]: { S: key } },
          UpdateExpression: `SET ${set.join(', ')} REMOVE ${remove.join(', ')}`,
          ConditionExpression: condition,
          ExpressionAttributeNames: pick(ATTRIBUTE_NAMES, `${set.join()} ${remove.join()} ${condition}`),
          ExpressionAttributeValues: values,
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailure(error)) return false;
      throw error;
    }
  }

  /** Strongly consistent read of one lock item. */
  async read(key: string): Promise<LockRecord | undefined> {
    const output = await this.client.send(
      new GetItemCommand({ TableName: this.options.tableName, Key: { [ATTR.key]: { S: key } }, ConsistentRead: true }),
    );
    return output.Item ? toLockRecord(output.Item) : undefined;
  }

  /** Every held lock whose stored key starts with `prefix` (a paginated Scan; for tools, not hot paths). */
  async *scanHeld(prefix: string): AsyncGenerator<LockRecord> {
    let startKey: Record<string, AttributeValue> | undefined;
    do {
      const output = await this.client.send(
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

  /** Adds the TTL attribute: the later of `ttlDays` and two leases from now, in epoch seconds. */
  private applyTtl(leaseMs: number, now: number, values: Record<string, AttributeValue>, set: string[], remove: string[]) {
    if (this.options.ttlDays <= 0) {
      remove.push('#ttl');
      return;
    }
    const keepMs = Math.max(this.options.ttlDays * 86_400_000, 2 * leaseMs);
    values[':ttl'] = { N: String(Math.ceil((now + keepMs) / 1000)) };
    set.push('#ttl = :ttl');
  }
}

/** The attribute-name placeholders an expression uses (DynamoDB rejects unused ones). */
function pick(names: Record<string, string>, expression: string): Record<string, string> {
  return Object.fromEntries(Object.entries(names).filter(([alias]) => new RegExp(`${alias}\\b`).test(expression)));
}

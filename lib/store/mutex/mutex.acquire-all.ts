import {
  type AttributeValue,
  type CancellationReason,
  type DynamoDBClient,
  type TransactWriteItem,
  TransactWriteItemsCommand,
} from '@aws-sdk/client-dynamodb';
import type { DynamoStoreOptions } from '../dynamo/dynamo-store.options';
import { pickNames, updateExpression, withTtl } from '../dynamo/item-requests';
import { DEFAULT_TABLE_KEYS, itemKeyOf, keyAttributeNames } from '../dynamo/table-schema';
import { sendToTable } from '../dynamo/timed-request';
import { acquireParts, freeCondition } from './mutex.expressions';
import { ATTRIBUTE_NAMES, type LockRecord, toLockRecord } from './mutex.record';
import { type AcquireAllPart, type AcquireAllResult, type AcquireAllWrite, grantedRecord } from './mutex-store.protocol';

/**
 * Several free acquires in one `TransactWriteItems` (one round trip; DynamoDB bills 2 WCU per
 * item of up to 1 KB): one `Update` per key with the SET and REMOVE clauses, the TTL and the
 * condition of `DynamoMutexStore.acquire()` for a free lock, so the items are those single free
 * acquires make. Its condition also pins the fencing counter (a transaction returns no item: the
 * counter pinned is the holder's token). Sent with the write's `ClientRequestToken`, so a resend
 * after a lost answer is applied at most once. A server without transactions (dynalite) answers
 * `UnknownOperationException`, a table that takes none (multi-Region strongly consistent) a
 * `ValidationException` saying so: `unsupported`. `TransactionInProgressException` (a resend
 * while the first send still runs) is thrown on: the outcome is not known yet.
 * @param onlyLockItem the shared table's guard against the app's items (`''` in the library's own table).
 */
export async function sendAcquireAll(
  client: DynamoDBClient,
  options: DynamoStoreOptions,
  write: AcquireAllWrite,
  onlyLockItem: string,
): Promise<AcquireAllResult> {
  const keys = options.keys ?? DEFAULT_TABLE_KEYS;
  const command = new TransactWriteItemsCommand({
    TransactItems: write.parts.map((part) => updateOf(options, write, part, onlyLockItem)),
    ClientRequestToken: write.requestToken,
  });
  try {
    await sendToTable(client, 'TransactWriteItems', command, options);
    return { kind: 'granted', records: write.parts.map((part) => grantedRecord(write, part)) };
  } catch (error) {
    const name = error instanceof Error ? error.name : '';
    if (name === 'UnknownOperationException' || transactionsRefused(error)) return { kind: 'unsupported' };
    if (name !== 'TransactionCanceledException') throw error;
    const reasons: CancellationReason[] = (error as { CancellationReasons?: CancellationReason[] }).CancellationReasons ?? [];
    const failed = write.parts.map((_, i) => reasons[i]?.Code === 'ConditionalCheckFailed');
    const current = write.parts.map((_, i): LockRecord | undefined => {
      const item = reasons[i]?.Item;
      return item && toLockRecord(item, keys);
    });
    return { kind: 'refused', failed, current, conflict: reasons.some((reason) => reason.Code === 'TransactionConflict') };
  }
}

/** The `Update` of one key: a free acquire, its counter pinned. */
function updateOf(options: DynamoStoreOptions, write: AcquireAllWrite, part: AcquireAllPart, onlyLockItem: string): TransactWriteItem {
  const keys = options.keys ?? DEFAULT_TABLE_KEYS;
  const acquire = acquireParts(
    { key: part.key, token: part.token, owner: write.owner, leaseMs: write.leaseMs, condition: { kind: 'free' } },
    write.now,
    part.rvn,
  );
  const parts = withTtl(acquire, options.ttlDays, write.leaseMs, write.now);
  const values: Record<string, AttributeValue> = { ...parts.values };
  let fence = 'attribute_not_exists(#fence)';
  if (part.fence !== undefined) {
    fence = '#fence = :seenFence';
    values[':seenFence'] = { N: String(part.fence) };
  }
  const condition = freeCondition(`${acquire.claim}${onlyLockItem} AND ${fence}`);
  const expression = updateExpression(parts);
  return {
    Update: {
      TableName: options.tableName,
      Key: itemKeyOf(keys, part.key),
      UpdateExpression: expression,
      ConditionExpression: condition,
      ExpressionAttributeNames: pickNames(`${expression} ${condition}`, ATTRIBUTE_NAMES, keyAttributeNames(keys)),
      ExpressionAttributeValues: values,
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    },
  };
}

/**
 * A `ValidationException` saying that the table takes no transactions (a multi-Region strongly
 * consistent table): recognised narrowly, by a message that speaks of transactions not supported,
 * so that a malformed request is never taken for it.
 */
export function transactionsRefused(error: unknown): boolean {
  if (!(error instanceof Error) || error.name !== 'ValidationException') return false;
  return /transact/i.test(error.message) && /(not supported|unsupported|not available|not allowed)/i.test(error.message);
}

import {
  type AttributeValue,
  type CancellationReason,
  DeleteItemCommand,
  type DeleteItemCommandOutput,
  DescribeTableCommand,
  type DescribeTableCommandOutput,
  type DynamoDBClient,
  GetItemCommand,
  type GetItemCommandOutput,
  PutItemCommand,
  type PutItemCommandOutput,
  TransactWriteItemsCommand,
  type TransactWriteItemsCommandOutput,
  type TransactWriteItem,
  UpdateItemCommand,
  type UpdateItemCommandOutput,
} from '@aws-sdk/client-dynamodb';
import { LockConfigurationError } from '../../errors/lock.errors';
import { REQUEST_TIMED_OUT, TRANSACT_UNSUPPORTED } from '../../errors/lock.messages';
import type { DynamoStoreOptions } from '../dynamo/dynamo-store.options';
import { pickNames } from '../dynamo/item-requests';
import { sendWithinLimit, type TimedCommand, type TimedOutput } from '../dynamo/timed-request';
import { isConditionFailure } from '../dynamo/transient-error';
import { holdingCondition } from '../mutex/mutex.expressions';
import { ATTRIBUTE_NAMES, toLockRecord } from '../mutex/mutex.record';
import { DEFAULT_TABLE_KEYS, itemKeyOf, keyAttributeNames } from '../dynamo/table-schema';
import { fencedOperation, type FencedOperation, fenceOfItem, operationOf } from './fenced-request';
import type { FencedWriteOutcome, FencedWriteRequest, FencingStorePort, TransactOutcome, TransactRequest } from './fencing-store.port';

/**
 * Fenced writes on DynamoDB, with the lock table's client and request time limit: a
 * `TransactWriteItems` of the caller's items and a `ConditionCheck` of the lock item, and single
 * writes stamped with the fencing token. Every request and condition of fenced writes is here.
 */
export class DynamoFencingStore implements FencingStorePort {
  /** Key attribute names per table, from `DescribeTable`: only a refused Put on a server without `ALL_OLD` needs them. */
  private readonly keySchemas = new Map<string, string[]>();

  constructor(
    private readonly client: DynamoDBClient,
    private readonly options: DynamoStoreOptions,
  ) {}

  /**
   * The caller's items, then a `ConditionCheck` that the holding still holds the lock item (its
   * token there, or its ticket served), in one transaction: all land, or none.
   * @throws LockConfigurationError when the server has no transactions (dynalite).
   */
  async transact(request: TransactRequest): Promise<TransactOutcome> {
    const values: Record<string, AttributeValue> = {};
    const condition = holdingCondition(request.holding, values);
    const keys = this.options.keys ?? DEFAULT_TABLE_KEYS;
    const lockCheck: TransactWriteItem = {
      ConditionCheck: {
        TableName: this.options.tableName,
        Key: itemKeyOf(keys, request.lockKey),
        ConditionExpression: condition,
        ExpressionAttributeNames: pickNames(condition, ATTRIBUTE_NAMES, keyAttributeNames(keys)),
        ExpressionAttributeValues: values,
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    };
    const command = new TransactWriteItemsCommand({
      TransactItems: [...request.items, lockCheck],
      ReturnConsumedCapacity: request.returnConsumedCapacity,
      ClientRequestToken: request.clientRequestToken,
    });
    try {
      const output = await this.send<TransactWriteItemsCommandOutput>(command, 'TransactWriteItems', this.options.tableName);
      return { ok: true, consumedCapacity: output.ConsumedCapacity };
    } catch (error) {
      const name = error instanceof Error ? error.name : '';
      if (name === 'UnknownOperationException') throw new LockConfigurationError(TRANSACT_UNSUPPORTED(name), { cause: error });
      if (name !== 'TransactionCanceledException') throw error;
      const reasons: CancellationReason[] = (error as { CancellationReasons?: CancellationReason[] }).CancellationReasons ?? [];
      const lock = reasons[request.items.length];
      if (lock?.Code === 'ConditionalCheckFailed')
        return { ok: false, lockHeld: false, current: lock.Item && toLockRecord(lock.Item, keys) };
      const reasonAt = (index: number) => {
        const reason = reasons[index];
        return { index, code: reason?.Code ?? 'None', message: reason?.Message, item: reason?.Item };
      };
      const cancelled = request.items.map((_, index) => reasonAt(index));
      // The lock's check cancelled for another cause (a conflict with a write of the lock item in
      // flight): the last reason names it, so the error says why.
      if (lock?.Code && lock.Code !== 'None') cancelled.push(reasonAt(request.items.length));
      return { ok: false, lockHeld: true, reasons: cancelled };
    }
  }

  /**
   * One Put, Update or Delete stamped with the token and conditioned on no newer token. A refusal
   * by the fence is told from the caller's own condition by the item as it was (returned with
   * `ALL_OLD`; servers that do not return it, like dynalite, cost one strongly consistent read).
   * @throws the server's `ConditionalCheckFailedException` as it is when the caller's own condition failed.
   */
  async fencedWrite(request: FencedWriteRequest): Promise<FencedWriteOutcome> {
    const operation = fencedOperation(operationOf(request.item), request.token, request.attribute);
    const table = operation.body.TableName ?? '';
    try {
      const output = await this.send<PutItemCommandOutput | UpdateItemCommandOutput | DeleteItemCommandOutput>(
        this.commandOf(operation, request),
        `${operation.kind}Item`,
        table,
      );
      return { ok: true, attributes: output.Attributes, consumedCapacity: output.ConsumedCapacity };
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      // Without the old item (a missing item, or a server that ignores ALL_OLD) one read tells;
      // if that read fails, the write's own error is the answer.
      const item = error.Item ?? (await this.readBack(operation).catch(() => undefined));
      const newer = fenceOfItem(item, request.attribute);
      if (newer !== undefined && newer > request.token) return { ok: false, newerToken: newer, tableName: table };
      throw error;
    }
  }

  private commandOf(operation: FencedOperation, request: FencedWriteRequest): PutItemCommand | UpdateItemCommand | DeleteItemCommand {
    const answer = {
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
      ReturnConsumedCapacity: request.returnConsumedCapacity,
      ReturnValues: request.returnValues,
    };
    switch (operation.kind) {
      case 'Put':
        return new PutItemCommand({ ...operation.body, ...answer });
      case 'Update':
        return new UpdateItemCommand({ ...operation.body, UpdateExpression: operation.body.UpdateExpression, ...answer });
      case 'Delete':
        return new DeleteItemCommand({ ...operation.body, ...answer });
    }
  }

  /** The refused write's item, read strongly consistent (for servers that do not return it). */
  private async readBack(operation: FencedOperation): Promise<Record<string, AttributeValue> | undefined> {
    const table = operation.body.TableName ?? '';
    const key = operation.kind === 'Put' ? await this.keyOfPut(table, operation.body.Item ?? {}) : operation.body.Key;
    const output = await this.send<GetItemCommandOutput>(
      new GetItemCommand({ TableName: table, Key: key, ConsistentRead: true }),
      'GetItem',
      table,
    );
    return output.Item;
  }

  private async keyOfPut(table: string, item: Record<string, AttributeValue>): Promise<Record<string, AttributeValue>> {
    let names = this.keySchemas.get(table);
    if (!names) {
      const output = await this.send<DescribeTableCommandOutput>(new DescribeTableCommand({ TableName: table }), 'DescribeTable', table);
      names = (output.Table?.KeySchema ?? []).map((element) => element.AttributeName ?? '');
      this.keySchemas.set(table, names);
    }
    return Object.fromEntries(names.map((name) => [name, item[name]]));
  }

  /** Sends one request within the lock table's request limit (`O`: its answer). */
  private send<O extends TimedOutput>(command: TimedCommand, operation: string, table: string): Promise<O> {
    const limitMs = this.options.requestTimeoutMs;
    return sendWithinLimit<O>(this.client, command, limitMs, (lastAttempt) =>
      REQUEST_TIMED_OUT(operation, table, limitMs ?? 0, lastAttempt),
    );
  }
}

/**
 * How a fenced write is built from the caller's item: the fencing token stamped on the item, the
 * fence condition joined to the caller's own, placeholders that cannot clash. One place, used by
 * the DynamoDB store (which sends it) and the memory store (which hands it to its hook).
 */
import type { AttributeValue, Delete, Put, TransactWriteItem, Update } from '@aws-sdk/client-dynamodb';
import { LockValidationError } from '../../errors/lock.errors';
import { FENCE_ATTRIBUTE_IN_ITEM, FENCE_PLACEHOLDER_CLASH, FENCED_WRITE_ITEM_INVALID } from '../../errors/lock.messages';
import type { FencedWriteItem } from '../../interfaces/fenced-write.interface';

/** The placeholders of the fence: long and prefixed, so no caller's names or values clash with them. */
export const FENCE_NAME = '#dynamoLockFence';
export const FENCE_VALUE = ':dynamoLockFence';

/** The fence condition: no token on the item yet, or none newer than this writer's. */
export const FENCE_CONDITION = `attribute_not_exists(${FENCE_NAME}) OR ${FENCE_NAME} <= ${FENCE_VALUE}`;

/** The operation of a write and its body. */
export type FencedOperation = { kind: 'Put'; body: Put } | { kind: 'Update'; body: Update } | { kind: 'Delete'; body: Delete };

/** The operation of one fenced write, checked to be a Put, Update or Delete with a table. */
export function operationOf(item: FencedWriteItem): FencedOperation {
  const valid = typeof item === 'object' && item !== null && Object.keys(item).length === 1;
  const shaped = item as Partial<{ Put: Put; Update: Update; Delete: Delete }>;
  const operation: FencedOperation | undefined = !valid
    ? undefined
    : shaped.Put
      ? { kind: 'Put', body: shaped.Put }
      : shaped.Update
        ? { kind: 'Update', body: shaped.Update }
        : shaped.Delete
          ? { kind: 'Delete', body: shaped.Delete }
          : undefined;
  if (!operation || typeof operation.body.TableName !== 'string') {
    throw new LockValidationError(FENCED_WRITE_ITEM_INVALID('lock.fencedWrite()', item));
  }
  return operation;
}

/** Checks the shape of the items of a transaction (one operation each, with a table). */
export function checkTransactItems(items: readonly TransactWriteItem[]): void {
  for (const item of items) {
    const all: [string, unknown][] = typeof item === 'object' && item !== null ? Object.entries(item) : [];
    const entries = all.filter(([, body]) => body !== undefined);
    const [kind, body] = entries[0] ?? [];
    const known = kind === 'Put' || kind === 'Update' || kind === 'Delete' || kind === 'ConditionCheck';
    if (entries.length !== 1 || !known || typeof (body as { TableName?: unknown }).TableName !== 'string') {
      throw new LockValidationError(FENCED_WRITE_ITEM_INVALID('lock.transact()', item));
    }
  }
}

/**
 * The caller's write with the fence added: the token in `attribute` (Put: in the item; Update: in
 * its one `SET` clause), the condition `(caller's) AND (fence)`, the fence's name and value added.
 * @throws LockValidationError when the caller's write already uses a fence placeholder or sets the attribute in a Put.
 */
export function fencedOperation(operation: FencedOperation, token: number, attribute: string): FencedOperation {
  const body = operation.body;
  checkNoClash(body);
  const names = { ...body.ExpressionAttributeNames, [FENCE_NAME]: attribute };
  const values: Record<string, AttributeValue> = { ...body.ExpressionAttributeValues, [FENCE_VALUE]: { N: String(token) } };
  const condition = body.ConditionExpression ? `(${body.ConditionExpression}) AND (${FENCE_CONDITION})` : FENCE_CONDITION;
  const fenced = { ...body, ConditionExpression: condition, ExpressionAttributeNames: names, ExpressionAttributeValues: values };
  switch (operation.kind) {
    case 'Put': {
      const item = operation.body.Item ?? {};
      if (attribute in item) throw new LockValidationError(FENCE_ATTRIBUTE_IN_ITEM(attribute));
      return { kind: 'Put', body: { ...fenced, Item: { ...item, [attribute]: { N: String(token) } } } };
    }
    case 'Update':
      return { kind: 'Update', body: { ...fenced, UpdateExpression: withFenceSet(operation.body.UpdateExpression ?? '') } as Update };
    case 'Delete':
      // The item goes, and its token with it: the condition alone fences the delete.
      return { kind: 'Delete', body: fenced as Delete };
  }
}

/**
 * The update expression with `#dynamoLockFence = :dynamoLockFence` in its `SET` clause: the first
 * action of the existing clause, or a new clause in front (clauses may come in any order).
 */
export function withFenceSet(expression: string): string {
  const assignment = `${FENCE_NAME} = ${FENCE_VALUE}`;
  // `SET` as a clause keyword: not part of a placeholder (`#set`, `:set`), a name or a path.
  const clause = /(^|[^#:\w.])(SET)(?=[\s#])(\s*)/i.exec(expression);
  if (!clause) return expression.trim() ? `SET ${assignment} ${expression.trim()}` : `SET ${assignment}`;
  const at = clause.index + clause[1].length + clause[2].length + clause[3].length;
  return `${expression.slice(0, at)}${assignment}, ${expression.slice(at)}`;
}

function checkNoClash(body: Put | Update | Delete): void {
  if (body.ExpressionAttributeNames && FENCE_NAME in body.ExpressionAttributeNames)
    throw new LockValidationError(FENCE_PLACEHOLDER_CLASH(FENCE_NAME));
  if (body.ExpressionAttributeValues && FENCE_VALUE in body.ExpressionAttributeValues)
    throw new LockValidationError(FENCE_PLACEHOLDER_CLASH(FENCE_VALUE));
  const expressions = [body.ConditionExpression, (body as Update).UpdateExpression].filter(Boolean).join(' ');
  if (expressions.includes(FENCE_NAME)) throw new LockValidationError(FENCE_PLACEHOLDER_CLASH(FENCE_NAME));
  if (expressions.includes(FENCE_VALUE)) throw new LockValidationError(FENCE_PLACEHOLDER_CLASH(FENCE_VALUE));
}

/** The fencing token an item carries in `attribute`, if any. */
export function fenceOfItem(item: Record<string, AttributeValue> | undefined, attribute: string): number | undefined {
  const value = item?.[attribute]?.N;
  return value === undefined ? undefined : Number(value);
}

/** Most items of one `lock.transact()`: DynamoDB's 100 per transaction, minus the lock's own check. */
export const MAX_TRANSACT_ITEMS = 99;

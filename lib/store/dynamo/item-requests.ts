/**
 * The requests both item stores (locks and semaphores) send, built one way: conditional updates
 * with the TTL refreshed, reads, expression parts and attribute names.
 */
import { type AttributeValue, type DynamoDBClient, GetItemCommand, ScanCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import type { ReadConsistency } from '../store.protocol';
import { DEFAULT_TABLE_KEYS, itemKeyOf, keyAttributeNames, SORT_KEY_NAME, SORT_KEY_VALUE } from './table-schema';
import { sendToTable, type TableTarget } from './timed-request';
import { isConditionFailure } from './transient-error';

/** The clauses and values of one `UpdateItem`, before its TTL and attribute names are filled in. */
export interface UpdateParts {
  set: string[];
  remove?: string[];
  add?: string[];
  del?: string[];
  values: Record<string, AttributeValue>;
}

/**
 * The parts with the TTL attribute refreshed for a write that carries a lease: the later of
 * `ttlDays` and two leases from `now`, in epoch seconds; `ttlDays` of 0 removes it. Without a
 * lease (`undefined`) the parts are returned as they are.
 */
export function withTtl(parts: UpdateParts, ttlDays: number, ttlLeaseMs: number | undefined, now: number): UpdateParts {
  if (ttlLeaseMs === undefined) return parts;
  if (ttlDays <= 0) return { ...parts, remove: [...(parts.remove ?? []), '#ttl'] };
  const keepMs = Math.max(ttlDays * 86_400_000, 2 * ttlLeaseMs);
  return {
    ...parts,
    set: [...parts.set, '#ttl = :ttl'],
    values: { ...parts.values, ':ttl': { N: String(Math.ceil((now + keepMs) / 1000)) } },
  };
}

/** The `UpdateExpression` of the parts: `SET ... REMOVE ... ADD ... DELETE ...`, empty clauses left out. */
export function updateExpression(parts: UpdateParts): string {
  const { set, remove = [], add = [], del = [] } = parts;
  return [
    set.length ? `SET ${set.join(', ')}` : '',
    remove.length ? `REMOVE ${remove.join(', ')}` : '',
    add.length ? `ADD ${add.join(', ')}` : '',
    del.length ? `DELETE ${del.join(', ')}` : '',
  ]
    .filter(Boolean)
    .join(' ');
}

/** An attribute-name placeholder in an expression: `#` and word characters. */
const PLACEHOLDER = /#\w+/g;
/** The placeholders of the expressions seen lately: a store sends a few dozen shapes, over and over. */
const placeholders = new Map<string, readonly string[]>();
/** Expressions remembered at most (the map starts over when full: values vary the shape, rarely). */
const PLACEHOLDERS_KEPT = 512;

/**
 * The attribute-name placeholders an expression uses (DynamoDB rejects unused ones), with their
 * names from `sources` (a later source wins, as in a spread). This runs for every write: the
 * expression's placeholders are found once per shape, not once per write and name.
 */
export function pickNames(expression: string, ...sources: Record<string, string>[]): Record<string, string> {
  let aliases = placeholders.get(expression);
  if (aliases === undefined) {
    aliases = [...new Set(Array.from(expression.matchAll(PLACEHOLDER), ([alias]) => alias))];
    if (placeholders.size >= PLACEHOLDERS_KEPT) placeholders.clear();
    placeholders.set(expression, aliases);
  }
  const picked: Record<string, string> = {};
  for (const alias of aliases) {
    for (let i = sources.length - 1; i >= 0; i--) {
      if (Object.hasOwn(sources[i], alias)) {
        picked[alias] = sources[i][alias];
        break;
      }
    }
  }
  return picked;
}

/** One conditional `UpdateItem` on the item of stored key `key`. */
export interface ConditionalUpdate extends UpdateParts {
  key: string;
  condition: string;
  /** `ExpressionAttributeNames` to pick the used ones from (`#key` is the table's partition key, whatever a record maps it to). */
  names: Record<string, string>;
  /** Placeholders that are always used (map keys: `#tok` → an owner token). */
  exactNames?: Record<string, string>;
  /** Ask for the item as written (`ALL_NEW`). */
  returnNew: boolean;
}

/** A conditional write's answer: the item as written (when asked for), or the item that refused it (when the server returns it). */
export type ItemWriteResult =
  { ok: true; item: Record<string, AttributeValue> | undefined } | { ok: false; item: Record<string, AttributeValue> | undefined };

/** Where items are written: the table, its request limit and key attributes, and the TTL policy. */
export interface ItemTable extends TableTarget {
  ttlDays: number;
}

/**
 * Sends one conditional `UpdateItem` (TTL refreshed for a write with a lease, see {@link withTtl}),
 * asking for the refusing item on a failed condition (`ALL_OLD`).
 */
export async function updateItem(
  client: DynamoDBClient,
  table: ItemTable,
  update: ConditionalUpdate,
  ttlLeaseMs: number | undefined,
  now = Date.now(),
): Promise<ItemWriteResult> {
  const parts = withTtl(update, table.ttlDays, ttlLeaseMs, now);
  const expression = updateExpression(parts);
  const keys = table.keys ?? DEFAULT_TABLE_KEYS;
  try {
    const output = await sendToTable(
      client,
      'UpdateItem',
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: itemKeyOf(keys, update.key),
        UpdateExpression: expression,
        ConditionExpression: update.condition,
        ExpressionAttributeNames: {
          ...pickNames(`${expression} ${update.condition}`, update.names, keyAttributeNames(keys)),
          ...update.exactNames,
        },
        ExpressionAttributeValues: parts.values,
        ReturnValues: update.returnNew ? 'ALL_NEW' : undefined,
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
      table,
    );
    return { ok: true, item: output.Attributes };
  } catch (error) {
    if (isConditionFailure(error)) return { ok: false, item: error.Item };
    throw error;
  }
}

/** `GetItem` of the item of stored key `key`: strongly consistent unless `'eventual'`. */
export async function readItem(
  client: DynamoDBClient,
  table: TableTarget,
  key: string,
  consistency: ReadConsistency = 'strong',
): Promise<Record<string, AttributeValue> | undefined> {
  const Key = itemKeyOf(table.keys ?? DEFAULT_TABLE_KEYS, key);
  const output = await sendToTable(
    client,
    'GetItem',
    new GetItemCommand({ TableName: table.tableName, Key, ConsistentRead: consistency === 'strong' }),
    table,
  );
  return output.Item;
}

/**
 * Every item matching `filter` whose partition key starts with `prefix` (any key when empty) and,
 * in a table with a sort key, whose sort key has lock items' value: a paginated, strongly
 * consistent `Scan`, each page within the request limit. For tools, not hot paths: DynamoDB bills
 * every item read, matched or not (in a shared table, the app's items too).
 */
export async function* scanItems(
  client: DynamoDBClient,
  table: TableTarget,
  filter: string,
  names: Record<string, string>,
  prefix: string,
  values: Record<string, AttributeValue> = {},
): AsyncGenerator<Record<string, AttributeValue>> {
  const keys = table.keys ?? DEFAULT_TABLE_KEYS;
  const clauses: string[] = [];
  const allValues = { ...values };
  if (keys.sortKey) {
    clauses.push(`${SORT_KEY_NAME} = ${SORT_KEY_VALUE}`);
    allValues[SORT_KEY_VALUE] = { S: keys.sortKey.value };
  }
  if (prefix) {
    clauses.push('begins_with(#key, :prefix)');
    allValues[':prefix'] = { S: prefix };
  }
  const expression = clauses.length ? `(${filter}) AND ${clauses.join(' AND ')}` : filter;
  let startKey: Record<string, AttributeValue> | undefined;
  do {
    const output = await sendToTable(
      client,
      'Scan',
      new ScanCommand({
        TableName: table.tableName,
        ConsistentRead: true,
        ExclusiveStartKey: startKey,
        FilterExpression: expression,
        ExpressionAttributeNames: pickNames(expression, names, keyAttributeNames(keys)),
        ExpressionAttributeValues: Object.keys(allValues).length ? allValues : undefined,
      }),
      table,
    );
    yield* output.Items ?? [];
    startKey = output.LastEvaluatedKey;
  } while (startKey);
}

// @ts-check
/**
 * The harness's own view of the lock table, past the fault proxy: a direct client of the server,
 * the table's creation and deletion, and lock items read as the chaos suite needs them.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import {
  CreateTableCommand,
  DeleteTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  GetItemCommand,
  ScanCommand,
} from '@aws-sdk/client-dynamodb';
import { ATTR } from '../../dist/store/mutex/mutex.record.js';
import { LOCAL_REGION, localCredentials } from '../../tools/dynamodb-servers.mjs';

/**
 * A lock item as the checks read it; `attemptId` is the chaos attempt in its `data`.
 * @typedef {{ key?: string, token?: string, owner?: string, rvn?: string, fence?: number, attemptId?: string, head?: number, tail?: number, live?: number }} LockItem
 */

/**
 * A direct client of `endpoint` (no faults).
 * @param {string} endpoint
 * @param {import('@aws-sdk/client-dynamodb').DynamoDBClientConfig} [config]
 */
export function directClient(endpoint, config = {}) {
  return new DynamoDBClient({ endpoint, region: LOCAL_REGION, credentials: localCredentials(), maxAttempts: 5, ...config });
}

/**
 * Creates an on-demand lock table (partition key `key`) and waits until it is ACTIVE.
 * @param {DynamoDBClient} client
 * @param {string} tableName
 */
export async function createTable(client, tableName) {
  await client.send(
    new CreateTableCommand({
      TableName: tableName,
      AttributeDefinitions: [{ AttributeName: 'key', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'key', KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
  for (let i = 0; i < 200; i++) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    if (Table?.TableStatus === 'ACTIVE') return;
    await sleep(50);
  }
  throw new Error(`table ${tableName} did not become ACTIVE`);
}

/**
 * @param {DynamoDBClient} client
 * @param {string} tableName
 */
export async function deleteTable(client, tableName) {
  await client.send(new DeleteTableCommand({ TableName: tableName })).catch(() => undefined);
}

/**
 * The lock item of `key`, read consistently.
 * @param {DynamoDBClient} client
 * @param {string} tableName
 * @param {string} key
 */
export async function readItem(client, tableName, key) {
  const output = await client.send(new GetItemCommand({ TableName: tableName, Key: { [ATTR.key]: { S: key } }, ConsistentRead: true }));
  return parseItem(output.Item);
}

/**
 * Every item of the table, raw, read consistently.
 * @param {DynamoDBClient} client
 * @param {string} tableName
 */
export async function scanItems(client, tableName) {
  const output = await client.send(new ScanCommand({ TableName: tableName, ConsistentRead: true }));
  return output.Items ?? [];
}

/**
 * @param {Record<string, import('@aws-sdk/client-dynamodb').AttributeValue> | undefined} item
 * @returns {LockItem | undefined}
 */
export function parseItem(item) {
  if (!item) return undefined;
  const data = item[ATTR.data]?.S;
  let attemptId;
  if (data) {
    try {
      attemptId = JSON.parse(data)?.chaos;
    } catch {
      // not ours
    }
  }
  const number = (/** @type {string} */ name) => (item[name]?.N === undefined ? undefined : Number(item[name]?.N));
  return {
    key: item[ATTR.key]?.S,
    token: item[ATTR.token]?.S,
    owner: item[ATTR.owner]?.S,
    rvn: item[ATTR.rvn]?.S,
    fence: number(ATTR.fence),
    attemptId,
    head: number(ATTR.head),
    tail: number(ATTR.tail),
    live: number(ATTR.live),
  };
}

/** A data table next to the lock table, for the fenced-write specs: partition key `id` (String). */
import {
  type AttributeValue,
  CreateTableCommand,
  type DynamoDBClient,
  GetItemCommand,
  DescribeTableCommand,
  type Put,
  PutItemCommand,
} from '@aws-sdk/client-dynamodb';
import { setTimeout as sleep } from 'node:timers/promises';
import { uniqueTableName } from '../support/servers';

/** Creates a table keyed by `id` and returns its name. */
export async function createDataTable(client: DynamoDBClient, prefix = 'data'): Promise<string> {
  const tableName = uniqueTableName(prefix);
  await client.send(
    new CreateTableCommand({
      TableName: tableName,
      AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
  // Polled every 100 ms: the SDK's waiter sleeps 20 s when the first look finds the table still CREATING.
  for (let tries = 0; tries < 300; tries++) {
    const output = await client.send(new DescribeTableCommand({ TableName: tableName }));
    if (output.Table?.TableStatus === 'ACTIVE') break;
    await sleep(100);
  }
  return tableName;
}

/** The item `id` of a table (strongly consistent), or `undefined`. */
export async function readData(client: DynamoDBClient, tableName: string, id: string): Promise<Record<string, AttributeValue> | undefined> {
  const output = await client.send(new GetItemCommand({ TableName: tableName, Key: { id: { S: id } }, ConsistentRead: true }));
  return output.Item;
}

/** Writes an item without any fence (the plain write a user would make). */
export async function putData(client: DynamoDBClient, tableName: string, item: Record<string, AttributeValue>): Promise<void> {
  await client.send(new PutItemCommand({ TableName: tableName, Item: item }));
}

let counter = 0;
/** A fresh key for a test. */
export function newKey(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${counter++}`;
}

/** A Put of `{ id, value }` to `table`, as a fenced write or a transaction item. */
export function put(table: string, id: string, value: string): { Put: Put } {
  return { Put: { TableName: table, Item: { id: { S: id }, value: { S: value } } } };
}

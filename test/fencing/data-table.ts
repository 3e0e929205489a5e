/** A data table next to the lock table, for the fenced-write specs: partition key `id` (String). */
import {
  type AttributeValue,
  CreateTableCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  waitUntilTableExists,
} from '@aws-sdk/client-dynamodb';
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
  await waitUntilTableExists({ client, maxWaitTime: 30 }, { TableName: tableName });
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

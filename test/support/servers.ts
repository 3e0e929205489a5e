import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  CreateTableCommand,
  DeleteTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  type DynamoDBClientConfig,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { describe } from '@jest/globals';
import { localCredentials, LOCAL_REGION } from '../../tools/dynamodb-servers.mjs';
import { SERVERS_JSON_ENV, type TestServer, decodeServers } from './server-list';

export type { TestServer, TestServerName } from './server-list';

/** The servers this run tests against, as published by the Jest global setup. */
export function testServers(): readonly TestServer[] {
  const json = process.env[SERVERS_JSON_ENV];
  if (!json) {
    throw new Error(
      `${SERVERS_JSON_ENV} is not set: run the tests through Jest with jest.config.mjs ` +
        '(npm test), whose global setup starts the servers.',
    );
  }
  return decodeServers(json);
}

/** `DYNAMO_LOCK_TEST_LONG=1` (`npm run test:long`): every suite on every server under test. */
export const LONG_RUN_ENV = 'DYNAMO_LOCK_TEST_LONG';

/** Whether this is the long run ({@link LONG_RUN_ENV}), which runs every suite on every server. */
export function isLongRun(): boolean {
  return ['1', 'true', 'yes'].includes((process.env[LONG_RUN_ENV] ?? '').toLowerCase());
}

/** Options of {@link describeEachServer}. */
export interface EachServerOptions {
  /**
   * In the usual run (`npm test`, CI), run this suite on this one server only, when it is under
   * test; the long run ({@link LONG_RUN_ENV}) runs it on every server. For suites whose property
   * is the library's (processes, cron fires, chaos), not the store's: what differs between the
   * servers is covered on both by the store contracts and the suites left on both. The long
   * suites are spread over the two servers, so each server still sees some of them every run.
   */
  readonly shortRunOn?: TestServer['name'];
}

/**
 * Declares `describe(`${name} [server]`, ...)` once per server under test; with `options`, perhaps
 * on one server only in the usual run (see {@link EachServerOptions}).
 */
export function describeEachServer(name: string, fn: (server: TestServer) => void): void;
export function describeEachServer(name: string, options: EachServerOptions, fn: (server: TestServer) => void): void;
export function describeEachServer(
  name: string,
  ...args: [(server: TestServer) => void] | [EachServerOptions, (server: TestServer) => void]
): void {
  const [options, fn] = args.length === 1 ? [{} as EachServerOptions, args[0]] : args;
  const all = testServers();
  const only = !isLongRun() && options.shortRunOn !== undefined ? all.filter((server) => server.name === options.shortRunOn) : [];
  for (const server of only.length > 0 ? only : all) {
    describe(`${name} [${server.name}]`, () => fn(server));
  }
}

/**
 * A client for `server`. Local servers get region us-east-1 and dummy static
 * credentials; the external server uses the SDK's usual env/profile chain.
 * `config` overrides anything. Call `client.destroy()` when done.
 */
export function createTestClient(server: TestServer, config: DynamoDBClientConfig = {}): DynamoDBClient {
  return new DynamoDBClient({ ...testClientConfig(server), ...config });
}

/** The client configuration for a test server (endpoint, region, and local credentials unless external). */
export function testClientConfig(server: TestServer): DynamoDBClientConfig {
  return server.name === 'external'
    ? { endpoint: server.endpoint, region: process.env.AWS_REGION ?? LOCAL_REGION }
    : { endpoint: server.endpoint, region: LOCAL_REGION, credentials: localCredentials() };
}

/** A fresh, valid DynamoDB table name: `prefix-<time>-<random>`. */
export function uniqueTableName(prefix = 'locks'): string {
  if (!/^[A-Za-z0-9_.-]{1,200}$/.test(prefix)) {
    throw new Error(`uniqueTableName: prefix ${JSON.stringify(prefix)} must match [A-Za-z0-9_.-]{1,200}`);
  }
  return `${prefix}-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
}

/** Options for {@link createLockTable}. */
export interface LockTableOptions {
  /** Name of the string partition key (default `key`). */
  readonly partitionKey?: string;
  /** Name of a string sort key (default: none). */
  readonly sortKey?: string;
  /** Give up waiting for ACTIVE after this long (default 10 s). */
  readonly timeoutMs?: number;
}

/**
 * Creates an on-demand table with a string HASH key (default `key`) and, when given, a string
 * RANGE key, and polls DescribeTable every 50 ms until it is ACTIVE.
 */
export async function createLockTable(
  client: DynamoDBClient,
  tableName: string,
  { partitionKey = 'key', sortKey, timeoutMs = 10_000 }: LockTableOptions = {},
): Promise<void> {
  const names = sortKey === undefined ? [partitionKey] : [partitionKey, sortKey];
  await client.send(
    new CreateTableCommand({
      TableName: tableName,
      AttributeDefinitions: names.map((name) => ({ AttributeName: name, AttributeType: 'S' as const })),
      KeySchema: names.map((name, i) => ({ AttributeName: name, KeyType: i === 0 ? ('HASH' as const) : ('RANGE' as const) })),
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    if (Table?.TableStatus === 'ACTIVE') return;
    if (Date.now() > deadline) {
      throw new Error(`Table ${tableName} still ${Table?.TableStatus ?? 'unknown'} after ${timeoutMs} ms`);
    }
    await sleep(50);
  }
}

/** Deletes a table; a table that does not exist is fine. */
export async function deleteTable(client: DynamoDBClient, tableName: string): Promise<void> {
  try {
    await client.send(new DeleteTableCommand({ TableName: tableName }));
  } catch (error) {
    if (!(error instanceof Error && error.name === 'ResourceNotFoundException')) throw error;
  }
}

/** Deletes a table and waits until DescribeTable says it does not exist (at most 5 s). */
export async function deleteTableAndWait(client: DynamoDBClient, tableName: string): Promise<void> {
  await deleteTable(client, tableName);
  for (let i = 0; i < 100; i++) {
    try {
      await client.send(new DescribeTableCommand({ TableName: tableName }));
    } catch (error) {
      if ((error as Error).name === 'ResourceNotFoundException') return;
      throw error;
    }
    await sleep(50);
  }
  throw new Error(`table ${tableName} still exists`);
}

/**
 * Overwrites the holder of a lock item behind its holder's back, as another owner that took it
 * over would: the holder's next heartbeat finds a foreign token.
 */
export async function stealLock(client: DynamoDBClient, tableName: string, key: string): Promise<void> {
  await client.send(
    new UpdateItemCommand({
      TableName: tableName,
      Key: { key: { S: key } },
      UpdateExpression: 'SET #t = :t, #o = :o',
      ExpressionAttributeNames: { '#t': 'token', '#o': 'owner' },
      ExpressionAttributeValues: { ':t': { S: 'someone-else' }, ':o': { S: 'thief' } },
    }),
  );
}

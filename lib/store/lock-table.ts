import {
  CreateTableCommand,
  DescribeTableCommand,
  type DynamoDBClient,
  ResourceInUseException,
  ResourceNotFoundException,
  type TableDescription,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import type { LockLogger } from '../interfaces/lock-logger.interface';
import { LockConfigurationError, LockTableError } from '../errors/lock.errors';
import {
  TABLE_CHECK_BAD_ENDPOINT,
  TABLE_CHECK_FAILED,
  TABLE_CHECK_NO_CREDENTIALS,
  TABLE_CHECK_NO_REGION,
  TABLE_CHECK_UNREACHABLE,
  TABLE_CREATED,
  TABLE_MISSING,
  TABLE_NOT_ACTIVE,
  TABLE_WRONG_SCHEMA,
  TABLE_CREATED_WITHOUT_TTL,
} from '../errors/lock.messages';
import { sleep } from '../utils/clock';
import { describeEndpoint, type EndpointInfo, isHttpUrl } from './dynamo-endpoint';
import { ATTR } from './lock-record';
import { connectionProblem, isTransientError } from './transient-error';

/** How long start-up waits for a table that is being created. */
const ACTIVE_TIMEOUT_MS = 120_000;

/** Options of {@link ensureLockTable}. */
export interface EnsureTableOptions {
  /** Create the table (on-demand, TTL enabled) when it does not exist. */
  create: boolean;
  logger?: Pick<LockLogger, 'log' | 'warn'>;
}

/**
 * Makes sure the lock table exists, is ACTIVE and has the expected key schema
 * (one String partition key named `key`), creating it when asked.
 * @throws LockTableError when the table is missing (and `create` is off) or has another schema.
 * @throws LockConfigurationError naming the table, the endpoint and where it was set, with the
 *   SDK error as `cause`, when DynamoDB cannot be reached or refuses the check (no connection,
 *   unknown host, endpoint without `http://`, no region, no credentials, access denied).
 *   Throttling and 5xx answers are thrown as they are.
 */
export async function ensureLockTable(client: DynamoDBClient, tableName: string, options: EnsureTableOptions): Promise<void> {
  const endpoint = await describeEndpoint(client);
  // Without its scheme the SDK sends somewhere else (`localhost:` reads as the scheme) or fails obscurely.
  if (endpoint.url !== undefined && endpoint.source !== 'default' && !isHttpUrl(endpoint.url)) {
    throw new LockConfigurationError(TABLE_CHECK_BAD_ENDPOINT(tableName, endpoint));
  }
  try {
    await checkTable(client, tableName, options);
  } catch (error) {
    throw tableCheckError(error, tableName, endpoint);
  }
}

async function checkTable(client: DynamoDBClient, tableName: string, options: EnsureTableOptions): Promise<void> {
  let table = await describe(client, tableName);
  if (!table) {
    if (!options.create) throw new LockTableError(TABLE_MISSING(tableName), tableName, 'missing');
    table = await createLockTable(client, tableName, options.logger);
  }
  assertSchema(tableName, table, options.create);
  if (table.TableStatus !== 'ACTIVE') await waitUntilActive(client, tableName);
}

/**
 * Creates the lock table (PAY_PER_REQUEST, partition key `key`) and enables TTL on `ttl`.
 * A concurrent creation by another instance counts as success.
 */
export async function createLockTable(
  client: DynamoDBClient,
  tableName: string,
  logger?: Pick<LockLogger, 'log' | 'warn'>,
): Promise<TableDescription> {
  let created = false;
  try {
    await client.send(
      new CreateTableCommand({
        TableName: tableName,
        AttributeDefinitions: [{ AttributeName: ATTR.key, AttributeType: 'S' }],
        KeySchema: [{ AttributeName: ATTR.key, KeyType: 'HASH' }],
        BillingMode: 'PAY_PER_REQUEST',
      }),
    );
    created = true;
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
  }
  const table = await waitUntilActive(client, tableName);
  try {
    await client.send(
      new UpdateTimeToLiveCommand({ TableName: tableName, TimeToLiveSpecification: { AttributeName: ATTR.ttl, Enabled: true } }),
    );
    if (created) logger?.log(TABLE_CREATED(tableName));
  } catch (error) {
    // dynalite has no TTL API; a table whose TTL was enabled by a concurrent creator answers with a
    // validation error. One line says what was created and what was not.
    if (created) logger?.warn(TABLE_CREATED_WITHOUT_TTL(tableName, error));
  }
  return table;
}

/** The error the table check throws for `error`: a {@link LockConfigurationError} unless it is one, or a server's transient answer. */
function tableCheckError(error: unknown, tableName: string, endpoint: EndpointInfo): unknown {
  if (error instanceof LockConfigurationError) return error;
  const problem = connectionProblem(error);
  if (!problem && isTransientError(error)) return error;
  const message =
    problem?.kind === 'unreachable'
      ? TABLE_CHECK_UNREACHABLE(tableName, endpoint, problem.error)
      : problem?.kind === 'bad-endpoint'
        ? TABLE_CHECK_BAD_ENDPOINT(tableName, endpoint)
        : problem?.kind === 'no-region'
          ? TABLE_CHECK_NO_REGION(tableName, endpoint)
          : problem?.kind === 'no-credentials'
            ? TABLE_CHECK_NO_CREDENTIALS(tableName, endpoint, problem.error)
            : TABLE_CHECK_FAILED(tableName, endpoint, error);
  return new LockConfigurationError(message, { cause: error });
}

/** Describes the lock table, or `undefined` when it does not exist. */
async function describe(client: DynamoDBClient, tableName: string): Promise<TableDescription | undefined> {
  try {
    return (await client.send(new DescribeTableCommand({ TableName: tableName }))).Table;
  } catch (error) {
    if (error instanceof ResourceNotFoundException) return undefined;
    throw error;
  }
}

function assertSchema(tableName: string, table: TableDescription, createTable: boolean): void {
  const keys = table.KeySchema ?? [];
  const types = new Map((table.AttributeDefinitions ?? []).map((d) => [d.AttributeName, d.AttributeType]));
  const ok = keys.length === 1 && keys[0].AttributeName === ATTR.key && keys[0].KeyType === 'HASH' && types.get(ATTR.key) === 'S';
  if (!ok) {
    const actual = keys.map((k) => `${k.KeyType} "${k.AttributeName}" (${types.get(k.AttributeName) ?? '?'})`).join(', ') || 'none';
    throw new LockTableError(TABLE_WRONG_SCHEMA(tableName, actual, createTable), tableName, 'wrong-schema');
  }
}

async function waitUntilActive(client: DynamoDBClient, tableName: string): Promise<TableDescription> {
  const started = Date.now();
  for (let delay = 50; ; delay = Math.min(delay * 2, 2000)) {
    const table = await describe(client, tableName);
    if (table?.TableStatus === 'ACTIVE') return table;
    const waited = Date.now() - started;
    if (waited > ACTIVE_TIMEOUT_MS)
      throw new LockTableError(TABLE_NOT_ACTIVE(tableName, table?.TableStatus ?? 'missing', waited), tableName, 'not-active');
    await sleep(delay);
  }
}

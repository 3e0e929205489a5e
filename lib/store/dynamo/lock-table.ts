/**
 * Every request about the lock table itself, in one place: `DescribeTable` (start-up check, health),
 * `CreateTable`, `UpdateTimeToLive` and `DescribeTimeToLive`; and DynamoDB's rule for table names.
 * Requests on items are each primitive's store's (`store/mutex`, `store/semaphore`).
 */
import {
  CreateTableCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  type DynamoDBClient,
  ResourceInUseException,
  ResourceNotFoundException,
  type TableDescription,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import type { LockLogger } from '../../interfaces/lock-logger.interface';
import type { LockTableKeys } from '../../interfaces/lock-table-keys.interface';
import type { LockEntryPoint } from '../../errors/entry-point';
import { LockConfigurationError, LockTableError } from '../../errors/lock.errors';
import {
  TABLE_CHECK_BAD_ENDPOINT,
  TABLE_CHECK_FAILED,
  TABLE_CHECK_NO_CREDENTIALS,
  TABLE_CHECK_NO_REGION,
  TABLE_CHECK_UNREACHABLE,
  TABLE_CREATED,
  TABLE_GONE,
  TABLE_MISSING,
  TABLE_NOT_ACTIVE,
  TABLE_WRONG_SCHEMA,
  TABLE_CREATED_WITHOUT_TTL,
} from '../../errors/lock.messages';
import { RETRY_MIN_MS, nextRetryMs } from '../../utils/backoff';
import { monotonicNow, sleep, untilAborted } from '../../utils/clock';
import { describeEndpoint, type EndpointInfo, isHttpUrl } from './dynamo-endpoint';
import { DEFAULT_TABLE_KEYS, isSharedTable, TABLE_ATTR } from './table-schema';
import type { TableHealth } from '../store.protocol';
import { type ConnectionProblem, connectionProblem, isTransientError } from './transient-error';

/** How long start-up waits for a table that is being created. */
const ACTIVE_TIMEOUT_MS = 120_000;

/** DynamoDB's rule for table names. */
const TABLE_NAME = /^[a-zA-Z0-9_.-]{3,255}$/;

/** Whether `name` is a valid DynamoDB table name: 3 to 255 of `a-z A-Z 0-9 _ . -`. */
export function isTableName(name: unknown): name is string {
  return typeof name === 'string' && TABLE_NAME.test(name);
}

/** Options of {@link ensureLockTable}. */
export interface EnsureTableOptions {
  /** Create the table (on-demand, TTL enabled) when it does not exist. */
  create: boolean;
  logger?: Pick<LockLogger, 'log' | 'warn'>;
  /**
   * The table's key attributes, as the locks are configured (`partitionKey`, `sortKey`): the table
   * must have exactly these, String, and is created with them. Default: partition key `key`, no sort key.
   */
  keys?: LockTableKeys;
}

/** One key attribute of a table, as `DescribeTable` tells it: its name and type (`S`, `N`, `B`). */
export interface KeyAttribute {
  name: string;
  type: string;
}

/** A table's key schema, as `DescribeTable` tells it. */
export interface TableKeySchema {
  partitionKey?: KeyAttribute;
  sortKey?: KeyAttribute;
}

/**
 * Makes sure the lock table exists, is ACTIVE and has the expected key schema (by default one
 * String partition key named `key` and no sort key; else `options.keys`, all String), creating it
 * when asked.
 * @throws LockTableError when the table is missing (and `create` is off) or has another key schema
 *   (the message names the table's and the configured ones).
 * @throws LockConfigurationError naming the table, the endpoint and where it was set, with the
 *   SDK error as `cause`, when DynamoDB cannot be reached or refuses the check (no connection,
 *   unknown host, endpoint without `http://`, no region, no credentials, access denied).
 *   Throttling and 5xx answers are thrown as they are.
 */
export function ensureLockTable(client: DynamoDBClient, tableName: string, options: EnsureTableOptions): Promise<void> {
  return checkLockTable(client, tableName, options, 'ensureLockTable');
}

/** {@link ensureLockTable} for the lock options of `entry`, which its errors name. */
export async function checkLockTable(
  client: DynamoDBClient,
  tableName: string,
  options: EnsureTableOptions,
  entry: LockEntryPoint,
): Promise<void> {
  const endpoint = await describeEndpoint(client);
  // Without its scheme the SDK sends somewhere else (`localhost:` reads as the scheme) or fails obscurely.
  if (endpoint.url !== undefined && endpoint.source !== 'default' && !isHttpUrl(endpoint.url)) {
    throw new LockConfigurationError(TABLE_CHECK_BAD_ENDPOINT(tableName, endpoint));
  }
  try {
    await checkTable(client, tableName, options, endpoint, entry);
  } catch (error) {
    throw tableCheckError(error, tableName, endpoint);
  }
}

async function checkTable(
  client: DynamoDBClient,
  tableName: string,
  options: EnsureTableOptions,
  endpoint: EndpointInfo,
  entry: LockEntryPoint,
): Promise<void> {
  const keys = options.keys ?? DEFAULT_TABLE_KEYS;
  let table = await describe(client, tableName);
  if (!table) {
    if (!options.create) throw tableMissingError(tableName, endpoint, entry, 'missing', keys);
    table = await createLockTable(client, tableName, options.logger, keys);
  }
  const schema = keySchemaOf(table);
  if (!matchesKeys(schema, keys)) {
    throw new LockTableError(TABLE_WRONG_SCHEMA(tableName, schema, keys, options.create), tableName, 'wrong-schema');
  }
  if (table.TableStatus !== 'ACTIVE') await waitUntilActive(client, tableName);
}

/**
 * Creates the lock table (PAY_PER_REQUEST; partition key `key`, or the String key attributes of
 * `keys`) and enables TTL on `ttl`, and says so in one line: created with TTL on, or created
 * without TTL and why (dynalite has no TTL). A concurrent creation by another instance counts as
 * success (and logs nothing).
 * @param logger where the line goes (none: nothing is said).
 * @param keys the table's key attributes, as the locks are configured (`partitionKey`, `sortKey`).
 */
export async function createLockTable(
  client: DynamoDBClient,
  tableName: string,
  logger?: Pick<LockLogger, 'log' | 'warn'>,
  keys: LockTableKeys = DEFAULT_TABLE_KEYS,
): Promise<TableDescription> {
  const outcome = await createTableWithTtl(client, tableName, keys);
  if (outcome.created && outcome.ttlError === undefined) logger?.log(TABLE_CREATED(tableName, keys));
  else if (outcome.created) logger?.warn(TABLE_CREATED_WITHOUT_TTL(tableName, outcome.ttlError));
  return outcome.table;
}

/** The key schema of a described table: its partition key and sort key, with their types (`?` when not defined). */
export function keySchemaOf(table: TableDescription): TableKeySchema {
  const types = new Map((table.AttributeDefinitions ?? []).map((d) => [d.AttributeName, d.AttributeType]));
  const attribute = (kind: 'HASH' | 'RANGE'): KeyAttribute | undefined => {
    const name = table.KeySchema?.find((k) => k.KeyType === kind)?.AttributeName;
    return name === undefined ? undefined : { name, type: types.get(name) ?? '?' };
  };
  return { partitionKey: attribute('HASH'), sortKey: attribute('RANGE') };
}

/** Whether a table's key schema is the one the locks are configured with: the same names, every key a String. */
export function matchesKeys(schema: TableKeySchema, keys: LockTableKeys): boolean {
  const { partitionKey, sortKey } = schema;
  if (partitionKey?.name !== keys.partitionKey || partitionKey.type !== 'S') return false;
  if (!keys.sortKey) return sortKey === undefined;
  return sortKey?.name === keys.sortKey.name && sortKey.type === 'S';
}

/** The key schema of table `tableName`, or `undefined` when it does not exist. */
export async function readKeySchema(client: DynamoDBClient, tableName: string): Promise<TableKeySchema | undefined> {
  const table = await describe(client, tableName);
  return table && keySchemaOf(table);
}

/** What {@link createTableWithTtl} did. */
export interface TableCreation {
  /** The table, ACTIVE. */
  table: TableDescription;
  /** This call created it (`false`: it existed, or a concurrent creator was first). */
  created: boolean;
  /** Why TTL could not be enabled (dynalite has no TTL API), when it could not. */
  ttlError?: unknown;
  /** TTL was left as it was: the table existed and is shared with the app's items, whose TTL is theirs to choose. */
  ttlLeftAlone?: boolean;
}

/** {@link createLockTable} without the log line: for callers (the CLI) that say it their own way. */
export async function createTableWithTtl(
  client: DynamoDBClient,
  tableName: string,
  keys: LockTableKeys = DEFAULT_TABLE_KEYS,
): Promise<TableCreation> {
  let created = false;
  const names = keys.sortKey ? [keys.partitionKey, keys.sortKey.name] : [keys.partitionKey];
  try {
    await client.send(
      new CreateTableCommand({
        TableName: tableName,
        AttributeDefinitions: names.map((name) => ({ AttributeName: name, AttributeType: 'S' })),
        KeySchema: names.map((name, i) => ({ AttributeName: name, KeyType: i === 0 ? 'HASH' : 'RANGE' })),
        BillingMode: 'PAY_PER_REQUEST',
      }),
    );
    created = true;
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
  }
  const table = await waitUntilActive(client, tableName);
  // A table of the app's own (another layout than the library's) that existed already: its TTL is
  // the app's choice (a table has one TTL attribute, which its items may use).
  if (!created && isSharedTable(keys)) return { table, created, ttlLeftAlone: true };
  try {
    await client.send(
      new UpdateTimeToLiveCommand({ TableName: tableName, TimeToLiveSpecification: { AttributeName: TABLE_ATTR.ttl, Enabled: true } }),
    );
    return { table, created };
  } catch (error) {
    // dynalite has no TTL API; a table whose TTL was enabled by a concurrent creator answers with a
    // validation error.
    return { table, created, ttlError: error };
  }
}

/**
 * The error of a request to a table that does not exist: where the client looked (region and
 * endpoint), and what to do; `gone` when the options create a missing table at start-up (so it
 * was deleted since).
 */
export async function missingTableError(
  client: DynamoDBClient,
  tableName: string,
  entry: LockEntryPoint,
  kind: 'missing' | 'gone',
  keys?: LockTableKeys,
): Promise<LockTableError> {
  return tableMissingError(tableName, await describeEndpoint(client), entry, kind, keys);
}

function tableMissingError(
  tableName: string,
  endpoint: EndpointInfo,
  entry: LockEntryPoint,
  kind: 'missing' | 'gone',
  keys: LockTableKeys | undefined,
): LockTableError {
  const message = kind === 'gone' ? TABLE_GONE(tableName, endpoint, entry) : TABLE_MISSING(tableName, endpoint, entry, keys);
  return new LockTableError(message, tableName, 'missing', { region: endpoint.region, endpoint: endpoint.url });
}

/** The error the table check throws for `error`: a {@link LockConfigurationError} unless it is one, or a server's transient answer. */
function tableCheckError(error: unknown, tableName: string, endpoint: EndpointInfo): unknown {
  if (error instanceof LockConfigurationError) return error;
  const problem = connectionProblem(error);
  if (!problem && isTransientError(error)) return error;
  return new LockConfigurationError(tableCheckMessage(problem, error, tableName, endpoint), { cause: error });
}

/** What the table check says for `error`, by what kept the request from DynamoDB (`problem`), if anything did. */
function tableCheckMessage(problem: ConnectionProblem | undefined, error: unknown, tableName: string, endpoint: EndpointInfo): string {
  switch (problem?.kind) {
    case 'unreachable':
      return TABLE_CHECK_UNREACHABLE(tableName, endpoint, problem.error);
    case 'bad-endpoint':
      return TABLE_CHECK_BAD_ENDPOINT(tableName, endpoint);
    case 'no-region':
      return TABLE_CHECK_NO_REGION(tableName, endpoint);
    case 'no-credentials':
      return TABLE_CHECK_NO_CREDENTIALS(tableName, endpoint, problem.error);
    default:
      return TABLE_CHECK_FAILED(tableName, endpoint, error);
  }
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

async function waitUntilActive(client: DynamoDBClient, tableName: string): Promise<TableDescription> {
  const started = Date.now();
  for (let delay = RETRY_MIN_MS; ; delay = nextRetryMs(delay)) {
    const table = await describe(client, tableName);
    if (table?.TableStatus === 'ACTIVE') return table;
    const waited = Date.now() - started;
    if (waited > ACTIVE_TIMEOUT_MS)
      throw new LockTableError(TABLE_NOT_ACTIVE(tableName, table?.TableStatus ?? 'missing', waited), tableName, 'not-active');
    await sleep(delay);
  }
}

/**
 * The lock table's health, from one `DescribeTable`: its status and the latency, or why it could
 * not be read. Gives up as soon as `signal` aborts, even while the SDK waits between retries.
 * Never rejects.
 */
export async function tableHealth(client: DynamoDBClient, tableName: string, signal: AbortSignal): Promise<TableHealth> {
  const started = monotonicNow();
  const latency = () => Math.round(monotonicNow() - started);
  try {
    const answer = await untilAborted(signal, client.send(new DescribeTableCommand({ TableName: tableName }), { abortSignal: signal }));
    return { store: 'dynamodb', table: tableName, tableStatus: answer.Table?.TableStatus ?? 'UNKNOWN', latencyMs: latency() };
  } catch (error) {
    const failure = healthFailure(error, signal);
    const endpoint = failure.failure === 'missing' ? { endpoint: await describeEndpoint(client) } : {};
    return { store: 'dynamodb', table: tableName, latencyMs: latency(), ...failure, ...endpoint };
  }
}

/** Why a health check failed with `error`. */
function healthFailure(error: unknown, signal: AbortSignal): Pick<TableHealth, 'failure' | 'error'> {
  if (signal.aborted) return { failure: 'aborted' };
  if (error instanceof Error && error.name === 'ResourceNotFoundException') return { failure: 'missing' };
  return { failure: 'failed', error };
}

/** A table's TTL, as `DescribeTimeToLive` tells it. */
export interface TtlState {
  /** `ENABLED`, `ENABLING`, `DISABLED`, `DISABLING`. */
  status: string;
  /** The attribute TTL reads, when it has one. */
  attribute?: string;
}

/**
 * The table's TTL status (`ENABLED`, `DISABLED`, ...) and attribute, or `undefined` when the
 * server has no TTL API (dynalite has one that answers `DISABLED`, and cannot enable it). Other
 * errors (missing table, network) are thrown.
 */
export async function describeTtl(client: DynamoDBClient, tableName: string): Promise<TtlState | undefined> {
  try {
    const output = await client.send(new DescribeTimeToLiveCommand({ TableName: tableName }));
    const description = output.TimeToLiveDescription;
    return { status: description?.TimeToLiveStatus ?? 'DISABLED', attribute: description?.AttributeName };
  } catch (error) {
    if (error instanceof Error && /UnknownOperation|not supported|UnrecognizedClient/i.test(`${error.name} ${error.message}`))
      return undefined;
    throw error;
  }
}

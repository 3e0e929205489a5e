/** Messages for the lock table, its endpoint and connection: checks, creation, timeouts, health. */

import type { EndpointInfo, EndpointSource } from '../endpoint-info';
import type { LockEntryPoint } from '../entry-point';
import { errorText } from './message.format';
import { optionsScope } from './options.messages';

/** The key attributes locks are configured with, as `LockTableKeys` has them (the errors layer names no interface of the layers above). */
interface ConfiguredKeys {
  partitionKey: string;
  sortKey?: { name: string; value: string };
}

/**
 * A request found the lock table missing although `createTable` is on: it was created (or found)
 * at start-up, so it was deleted since (or, for a standalone manager, `init()` never ran). The
 * option cannot help until the check runs again.
 */
export const TABLE_GONE = (tableName: string, endpoint: EndpointInfo, entry: LockEntryPoint) =>
  `DynamoDB table "${tableName}" for locks does not exist ${TABLE_PLACE(endpoint)}. createTable is on, but it creates a missing table only at start-up: ${
    entry === 'LockManager'
      ? 'this one was deleted after init() ran, or init() was never called. Call init() again (or restart) to create it.'
      : 'this one was deleted while the app ran. Restart the app to create it again.'
  }`;

/** A table's key schema, as `DescribeTable` tells it. */
interface DescribedKeys {
  partitionKey?: { name: string; type: string };
  sortKey?: { name: string; type: string };
}

/** Whether the keys are the library's own table's: partition key `key`, no sort key. */
const isDefaultKeys = (keys: ConfiguredKeys) => keys.partitionKey === 'key' && !keys.sortKey;

/** The AWS CLI's key arguments of `create-table` for `keys`. */
const createTableKeyArgs = (keys: ConfiguredKeys) => {
  const names = keys.sortKey ? [keys.partitionKey, keys.sortKey.name] : [keys.partitionKey];
  const definitions = names.map((name) => `AttributeName=${name},AttributeType=S`).join(' ');
  const schema = names.map((name, i) => `AttributeName=${name},KeyType=${i === 0 ? 'HASH' : 'RANGE'}`).join(' ');
  return `--attribute-definitions ${definitions} --key-schema ${schema}`;
};

/** The `dynamo-lock` options that name `keys`, when they are not the default ones. */
export const CLI_KEY_OPTIONS = (keys: ConfiguredKeys | undefined) =>
  !keys || isDefaultKeys(keys)
    ? ''
    : ` --partition-key ${keys.partitionKey}${keys.sortKey ? ` --sort-key ${keys.sortKey.name}=${keys.sortKey.value}` : ''}`;

/** `keys` in words: `partition key "PK" and sort key "SK" (lock items: "LOCK")`. */
export const CONFIGURED_KEYS_TEXT = (keys: ConfiguredKeys) =>
  keys.sortKey
    ? `partition key "${keys.partitionKey}" and sort key "${keys.sortKey.name}" (lock items: "${keys.sortKey.value}")`
    : `partition key "${keys.partitionKey}" and no sort key`;

/** A described key schema in words: `HASH "pk" (S), RANGE "sk" (N)`, or `none`. */
export const DESCRIBED_KEYS_TEXT = (schema: DescribedKeys) =>
  [
    schema.partitionKey && `HASH "${schema.partitionKey.name}" (${schema.partitionKey.type})`,
    schema.sortKey && `RANGE "${schema.sortKey.name}" (${schema.sortKey.type})`,
  ]
    .filter(Boolean)
    .join(', ') || 'none';

/**
 * The options that would fit the locks to a table's keys, when they are Strings, in the form
 * `option(name, value)` writes each, and `noSortKey` for a table without one:
 * `partitionKey: 'pk' and sortKey: { name: 'sk', value: 'LOCK' }`.
 */
export const FITTING_KEYS_TEXT = (
  schema: DescribedKeys,
  option: (name: 'partitionKey' | 'sortKey', value: string) => string,
  noSortKey: string,
) => {
  const { partitionKey, sortKey } = schema;
  if (partitionKey?.type !== 'S' || (sortKey && sortKey.type !== 'S')) return undefined;
  const sort = sortKey ? `${option('sortKey', sortKey.name)} (any value none of your items has in "${sortKey.name}")` : noSortKey;
  return `${option('partitionKey', partitionKey.name)} and ${sort}`;
};

/**
 * A lock table that does not exist where the client looked (`endpoint`: its region and endpoint),
 * with `createTable` off: where it looked, that a table in another region is not this one, and how
 * to create it there with the configured keys, in the words of the entry point the options were given to.
 */
export const TABLE_MISSING = (tableName: string, endpoint: EndpointInfo, entry: LockEntryPoint, keys?: ConfiguredKeys) => {
  const shared = keys !== undefined && !isDefaultKeys(keys);
  const configured = shared ? ` (configured with ${CONFIGURED_KEYS_TEXT(keys)})` : '';
  const keyArgs = createTableKeyArgs(keys ?? { partitionKey: 'key' });
  const holder = shared ? '; or point tableName at the table that holds your items.' : '';
  return `DynamoDB table "${tableName}" for locks does not exist ${TABLE_PLACE(endpoint)}${configured}. ${ELSEWHERE(endpoint, entry)} Create it ${CREATE_OPTION(entry)}with \`npx dynamo-lock table-create --table ${tableName}${CLI_KEY_OPTIONS(keys)}${cliTarget(endpoint)}\`, or with: aws dynamodb create-table --table-name ${tableName} ${keyArgs} --billing-mode PAY_PER_REQUEST${awsCliTarget(endpoint)}${holder}`;
};

/** What the table's keys should be, said as the configuration gives them. */
const EXPECTED_KEYS = (keys: ConfiguredKeys) =>
  isDefaultKeys(keys)
    ? 'Expected exactly one partition key named "key" of type String (S) and no sort key.'
    : keys.sortKey
      ? `Expected a partition key named "${keys.partitionKey}" and a sort key named "${keys.sortKey.name}", both of type String (S), as options partitionKey and sortKey say.`
      : `Expected exactly one partition key named "${keys.partitionKey}" of type String (S) and no sort key, as option partitionKey says.`;

/**
 * The table's keys differ from those the locks are configured with: both named, and how to fit
 * the options to the table when its keys are Strings. `createTable` is whether the option is on
 * already: it creates missing tables only, and cannot fix this one.
 */
export const TABLE_WRONG_SCHEMA = (tableName: string, actual: DescribedKeys, keys: ConfiguredKeys, createTable: boolean) => {
  const lockValue = keys.sortKey?.value ?? 'LOCK';
  const fit = FITTING_KEYS_TEXT(
    actual,
    (name, value) => (name === 'sortKey' ? `sortKey: { name: '${value}', value: '${lockValue}' }` : `${name}: '${value}'`),
    'leave sortKey out',
  );
  const elsewhere = createTable
    ? 'createTable only creates a missing table and never changes an existing one: point tableName at a name no table uses (it is then created), or at a table with that schema.'
    : 'Point tableName at another table, or at a name no table uses and set `createTable: true` to have it created.';
  const advice = fit
    ? `To keep locks in this table with your items, set ${fit}. Otherwise: ${elsewhere.charAt(0).toLowerCase()}${elsewhere.slice(1)}`
    : elsewhere;
  return `DynamoDB table "${tableName}" has the wrong key schema for locks: ${DESCRIBED_KEYS_TEXT(actual)}. ${EXPECTED_KEYS(keys)} ${advice}`;
};

/** A lock's key is the key of one of the app's items, in a table shared with them: nothing was written to it. */
export const FOREIGN_ITEM_AT_KEY = (tableName: string, storedKey: string, keys: ConfiguredKeys) =>
  `DynamoDB table "${tableName}" has an item at ${keys.partitionKey} = "${storedKey}"${
    keys.sortKey ? `, ${keys.sortKey.name} = "${keys.sortKey.value}"` : ''
  } that is not a lock item: one of your items has the key this lock needs. The lock library never writes to it. Give lock keys a prefix none of your items has in "${keys.partitionKey}" (option keyPrefix, such as 'LOCK#')${
    keys.sortKey ? `, or choose a sortKey value none of your items has in "${keys.sortKey.name}"` : ''
  }.`;

export const TABLE_NOT_ACTIVE = (tableName: string, status: string, waitedMs: number) =>
  `DynamoDB table "${tableName}" is still ${status} after ${waitedMs} ms.`;

/** Where a DynamoDB endpoint was set, as a phrase: "set by ...". */
const ENDPOINT_SETTING: Record<EndpointSource, string> = {
  option: 'the clientConfig.endpoint option',
  DYNAMODB_ENDPOINT: 'the DYNAMODB_ENDPOINT environment variable',
  client: 'the DynamoDB client passed as the client option',
  AWS_ENDPOINT_URL_DYNAMODB: 'the AWS_ENDPOINT_URL_DYNAMODB environment variable',
  AWS_ENDPOINT_URL: 'the AWS_ENDPOINT_URL environment variable',
  'aws-config': 'endpoint_url in the AWS config file',
  default: 'AWS_REGION or clientConfig.region',
};

/** The endpoint and where it came from, e.g. `http://localhost:8000 (from the DYNAMODB_ENDPOINT environment variable)`. */
export const ENDPOINT_DESCRIPTION = (endpoint: EndpointInfo) =>
  endpoint.source === 'default'
    ? endpoint.region
      ? `"${endpoint.url}" (AWS's endpoint for region ${endpoint.region}; no endpoint option or variable is set)`
      : `AWS's endpoint for the region (no region is set, and no endpoint option or variable)`
    : `${endpoint.url === undefined ? 'the endpoint' : `"${endpoint.url}"`} (from ${ENDPOINT_SETTING[endpoint.source]})`;

const TABLE_CHECK = (tableName: string, endpoint: EndpointInfo) =>
  `Cannot check DynamoDB lock table "${tableName}" at ${ENDPOINT_DESCRIPTION(endpoint)}`;

export const TABLE_CHECK_UNREACHABLE = (tableName: string, endpoint: EndpointInfo, error: unknown) =>
  `${TABLE_CHECK(tableName, endpoint)}: DynamoDB cannot be reached (${errorText(error)}). ${
    endpoint.source === 'default'
      ? 'Check the network and the region; for DynamoDB Local, set AWS_ENDPOINT_URL_DYNAMODB (or DYNAMODB_ENDPOINT, or clientConfig.endpoint), e.g. http://localhost:8000.'
      : `Start DynamoDB there, or fix ${ENDPOINT_SETTING[endpoint.source]} (e.g. http://localhost:8000).`
  }`;

export const TABLE_CHECK_BAD_ENDPOINT = (tableName: string, endpoint: EndpointInfo) =>
  `${TABLE_CHECK(tableName, endpoint)}: the endpoint is not an http:// or https:// URL. Write it with its scheme, e.g. http://localhost:8000, in ${ENDPOINT_SETTING[endpoint.source]}.`;

export const TABLE_CHECK_NO_REGION = (tableName: string, endpoint: EndpointInfo) =>
  `${TABLE_CHECK(tableName, endpoint)}: no AWS region is set. Set AWS_REGION or clientConfig.region (DynamoDB Local accepts any region, e.g. us-east-1).`;

export const TABLE_CHECK_NO_CREDENTIALS = (tableName: string, endpoint: EndpointInfo, error: unknown) =>
  `${TABLE_CHECK(tableName, endpoint)}: no AWS credentials (${errorText(error)}). Set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or clientConfig.credentials (DynamoDB Local accepts any values).`;

export const TABLE_CHECK_FAILED = (tableName: string, endpoint: EndpointInfo, error: unknown) =>
  `${TABLE_CHECK(tableName, endpoint)}: ${errorText(error)}. Check the credentials and that they allow dynamodb:DescribeTable on the table.`;

/** `lastAttempt`: the error of the SDK's last failed attempt, when it was retrying. */
export const REQUEST_TIMED_OUT = (operation: string, tableName: string, ms: number, lastAttempt?: unknown) =>
  lastAttempt === undefined
    ? `DynamoDB ${operation} on table "${tableName}" got no answer within ${ms} ms (option requestTimeout); the request was aborted.`
    : `DynamoDB ${operation} on table "${tableName}" did not succeed within ${ms} ms (option requestTimeout): the SDK was still retrying after ${errorText(lastAttempt)}; the request was aborted.`;

export const TABLE_CREATED = (tableName: string, keys?: ConfiguredKeys) =>
  !keys || isDefaultKeys(keys)
    ? `Created DynamoDB lock table "${tableName}" (on-demand, TTL on attribute "ttl").`
    : `Created DynamoDB lock table "${tableName}" (on-demand, ${CONFIGURED_KEYS_TEXT(keys)}, TTL on attribute "ttl").`;

export const TABLE_CREATED_WITHOUT_TTL = (tableName: string, error: unknown) =>
  `Created DynamoDB lock table "${tableName}" (on-demand), but TTL could not be enabled on it (${errorText(error)}): released lock items will not be cleaned up automatically on this server (dynalite has no TTL; DynamoDB and DynamoDB Local do).`;

export const HEALTH_NOT_ACTIVE = (table: string, status: string) =>
  `DynamoDB lock table "${table}" is ${status}, not ACTIVE: locks cannot be taken until it is ACTIVE again.`;
/** `createTable`: whether the option is on (the table was created or found at start-up, so it was deleted since). */
export const HEALTH_TABLE_MISSING = (table: string, endpoint: EndpointInfo | undefined, createTable: boolean) =>
  `DynamoDB lock table "${table}" does not exist${endpoint === undefined ? '' : ` ${TABLE_PLACE(endpoint)}`}: ${
    createTable
      ? 'it was deleted while the app ran, and createTable creates a missing table only at start-up: restart the app to create it again (or create it with `dynamo-lock table-create`).'
      : 'create it (DynamoLockModule option `createTable: true`, or `dynamo-lock table-create`), or fix tableName or the region.'
  }`;
export const HEALTH_TIMEOUT = (table: string, ms: number) =>
  `DynamoDB did not answer DescribeTable for lock table "${table}" within ${ms} ms: the endpoint is unreachable or too slow.`;
export const HEALTH_UNREACHABLE = (table: string, error: unknown) =>
  `DynamoDB lock table "${table}" could not be checked: ${errorText(error)}.`;

// ---- Where a missing table was looked for, and how to create it there ----

/** Where a lock table was looked for: `in region eu-west-1 at "http://localhost:8000" (from ...)`. */
const TABLE_PLACE = (endpoint: EndpointInfo) =>
  endpoint.source === 'default'
    ? `in region ${endpoint.region ?? '(none set)'}${endpoint.url === undefined ? '' : ` ("${endpoint.url}": AWS's endpoint, as no endpoint option or variable is set)`}`
    : `${endpoint.region === undefined ? '' : `in region ${endpoint.region} `}at ${ENDPOINT_DESCRIPTION(endpoint)}`;

/** Why the table may exist all the same: in another region, or (DynamoDB Local without -sharedDb) under other credentials. */
const ELSEWHERE = (endpoint: EndpointInfo, entry: LockEntryPoint) => {
  const region = entry === 'cli' ? '--region or AWS_REGION' : 'AWS_REGION, or clientConfig.region';
  return endpoint.source === 'default'
    ? `If you made it in another region, set that region (${region}) rather than creating a second table.`
    : `If you made it in another region, or with other credentials on a DynamoDB Local started without -sharedDb (it keeps a database per access key and region), use those (${region}) rather than creating a second table.`;
};

/** How the entry point creates a missing table, as the first of the ways to (none for the CLI, whose command follows). */
const CREATE_OPTION = (entry: LockEntryPoint) => {
  switch (entry) {
    case 'cli':
      return '';
    case 'ensureLockTable':
      return 'with `create: true` in ensureLockTable(), ';
    case 'LockManager':
      return 'with `createTable: true` in the LockManager options, ';
    default:
      return `with \`createTable: true\` in ${optionsScope(entry)}, `;
  }
};

/** The `dynamo-lock` flags that aim at the region and endpoint where the table was looked for. */
const cliTarget = (endpoint: EndpointInfo) =>
  `${endpoint.region === undefined ? '' : ` --region ${endpoint.region}`}${endpoint.source === 'default' || endpoint.url === undefined ? '' : ` --endpoint ${endpoint.url}`}`;

/** The AWS CLI's options that aim at the region and endpoint where the table was looked for. */
const awsCliTarget = (endpoint: EndpointInfo) =>
  `${endpoint.region === undefined ? '' : ` --region ${endpoint.region}`}${endpoint.source === 'default' || endpoint.url === undefined ? '' : ` --endpoint-url ${endpoint.url}`}`;

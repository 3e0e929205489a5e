/** Messages for the lock table, its endpoint and connection: checks, creation, timeouts, health. */

import type { EndpointInfo, EndpointSource } from '../endpoint-info';
import { errorText } from './message.format';

export const TABLE_MISSING = (tableName: string) =>
  `DynamoDB table "${tableName}" for locks does not exist. Create it with \`createTable: true\` in DynamoLockModule.forRoot(), with \`npx dynamo-lock table-create --table ${tableName}\`, or with: aws dynamodb create-table --table-name ${tableName} --attribute-definitions AttributeName=key,AttributeType=S --key-schema AttributeName=key,KeyType=HASH --billing-mode PAY_PER_REQUEST`;

/** `createTable` is whether the option is on already: it creates missing tables only, and cannot fix this one. */
export const TABLE_WRONG_SCHEMA = (tableName: string, actual: string, createTable: boolean) =>
  `DynamoDB table "${tableName}" has the wrong key schema for locks: ${actual}. Expected exactly one partition key named "key" of type String (S) and no sort key. ${
    createTable
      ? 'createTable only creates a missing table and never changes an existing one: point tableName at a name no table uses (it is then created), or at a table with that schema.'
      : 'Point tableName at another table, or at a name no table uses and set `createTable: true` to have it created.'
  }`;

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

export const TABLE_CREATED = (tableName: string) => `Created DynamoDB lock table "${tableName}" (on-demand, TTL on attribute "ttl").`;

export const TABLE_CREATED_WITHOUT_TTL = (tableName: string, error: unknown) =>
  `Created DynamoDB lock table "${tableName}" (on-demand), but TTL could not be enabled on it (${errorText(error)}): released lock items will not be cleaned up automatically on this server (dynalite has no TTL; DynamoDB and DynamoDB Local do).`;

export const HEALTH_NOT_ACTIVE = (table: string, status: string) =>
  `DynamoDB lock table "${table}" is ${status}, not ACTIVE: locks cannot be taken until it is ACTIVE again.`;
export const HEALTH_TABLE_MISSING = (table: string) =>
  `DynamoDB lock table "${table}" does not exist: create it (DynamoLockModule option \`createTable: true\`, or \`dynamo-lock table-create\`) or fix tableName.`;
export const HEALTH_TIMEOUT = (table: string, ms: number) =>
  `DynamoDB did not answer DescribeTable for lock table "${table}" within ${ms} ms: the endpoint is unreachable or too slow.`;
export const HEALTH_UNREACHABLE = (table: string, error: unknown) =>
  `DynamoDB lock table "${table}" could not be checked: ${errorText(error)}.`;

/** Messages for configuration and option validation: module options, call options, durations. */

import type { LockEntryPoint } from '../entry-point';
import { describe } from './message.format';

/** What an error about the lock options calls the place they were written. */
const OPTIONS_SCOPE: Record<LockEntryPoint, string> = {
  forRoot: 'DynamoLockModule.forRoot()',
  forRootAsync: 'DynamoLockModule.forRootAsync()',
  forTesting: 'DynamoLockModule.forTesting()',
  module: 'DynamoLockModule',
  LockManager: 'LockManager',
  cli: 'dynamo-lock',
  ensureLockTable: 'ensureLockTable()',
};

/** The command line's flag (and variable) for each lock option it sets. */
const CLI_SETTING: Readonly<Record<string, string>> = {
  tableName: '--table (or DYNAMO_LOCK_TABLE)',
  ownerName: '--owner (or DYNAMO_LOCK_OWNER)',
  keyPrefix: '--key-prefix (or DYNAMO_LOCK_KEY_PREFIX)',
  partitionKey: '--partition-key (or DYNAMO_LOCK_PARTITION_KEY)',
  sortKey: '--sort-key (or DYNAMO_LOCK_SORT_KEY)',
  'sortKey.name': 'the NAME of --sort-key NAME=VALUE (or DYNAMO_LOCK_SORT_KEY)',
  'sortKey.value': 'the VALUE of --sort-key NAME=VALUE (or DYNAMO_LOCK_SORT_KEY)',
};

/** The entry point the options were written for, as errors name it: `DynamoLockModule.forRoot()`, `LockManager`... */
export const optionsScope = (entry: LockEntryPoint) => OPTIONS_SCOPE[entry];

/** One option as the user wrote it: `LockManager option "keyPrefix"`, or on the command line `--key-prefix (or DYNAMO_LOCK_KEY_PREFIX)`. */
const option = (entry: LockEntryPoint, name: string) =>
  (entry === 'cli' ? CLI_SETTING[name] : undefined) ?? `${OPTIONS_SCOPE[entry]} option "${name}"`;

const DURATION_FORMS = `milliseconds as a number (30000) or a string such as '500ms', '30s', '15 minutes', '1m30s', '1h30m', '2 hours', '1d'`;

export const INVALID_DURATION = (name: string, value: unknown, reason?: string) =>
  `${name} must be a positive duration; got ${describe(value)}${reason ? ` (${reason})` : ''}. Accepted forms: ${DURATION_FORMS}.`;

export const HEARTBEAT_NOT_BELOW_LEASE = (heartbeatMs: number, leaseMs: number) =>
  `heartbeatInterval (${heartbeatMs} ms) must be shorter than leaseDuration (${leaseMs} ms); a third of the lease is a good choice and is the default.`;

export const UNKNOWN_OPTION = (scope: string, name: string, suggestion: string | undefined, known: readonly string[]) =>
  `${scope} has no option "${name}"${suggestion ? `; did you mean "${suggestion}"?` : '.'} Its options: ${known.join(', ')}.`;

export const OPTIONS_NOT_OBJECT = (value: unknown, entry: LockEntryPoint) =>
  `${OPTIONS_SCOPE[entry]} options must be an object, such as { tableName: 'locks' }; got ${describe(value)}.${
    entry === 'forRootAsync' || entry === 'module'
      ? ' With forRootAsync(), make useFactory (or createDynamoLockOptions() of useClass) return the options object (a missing return gives undefined).'
      : ''
  }`;

export const KEY_PREFIX_INVALID = (prefix: string, reason: string, entry: LockEntryPoint) =>
  `${option(entry, 'keyPrefix')} ${reason}; got ${describe(prefix)}. Use a short prefix such as 'billing:'.`;

export const LEASE_TOO_SHORT = (name: string, ms: number, minMs: number) =>
  `${name} must be at least ${minMs} ms; got ${ms} ms. A lease shorter than a few DynamoDB round trips is lost before it can be used; leases of seconds are typical.`;

export const LEASE_ID_INVALID = (value: unknown) =>
  `leaseId must be the non-empty lease id that acquire printed or Lock.leaseId gave; got ${describe(value)}.`;

export const INVALID_OPTION = (name: string, expected: string, value: unknown, entry: LockEntryPoint) =>
  `${option(entry, name)} must be ${expected}; got ${describe(value)}.`;

/** The table name came from the `DYNAMO_LOCK_TABLE` variable, as the option was not set. */
export const TABLE_NAME_ENV_INVALID = (value: string, entry: LockEntryPoint) =>
  `The DYNAMO_LOCK_TABLE environment variable (the table name, as ${entry === 'cli' ? '--table is not given' : `${OPTIONS_SCOPE[entry]} sets no tableName`}) must be a DynamoDB table name (3-255 of a-z A-Z 0-9 _ . -); got ${describe(value)}.`;

export const CALL_OPTION_INVALID = (scope: string, name: string, expected: string, value: unknown) =>
  `${scope} option "${name}" must be ${expected}; got ${describe(value)}.`;

export const INVALID_WAIT = (value: unknown) =>
  `wait must be a duration, true (wait without limit) or false (a single attempt); got ${describe(value)}. Accepted durations: ${DURATION_FORMS}.`;

export const STORE_INVALID = (value: unknown, entry: LockEntryPoint) =>
  `${option(entry, 'store')} must be a MemoryLockStore (new MemoryLockStore()); got ${describe(value)}. ${
    entry === 'forTesting' ? 'Leave it out for a new, empty one.' : 'Leave it out to keep locks in the DynamoDB table.'
  }`;

/** What a key attribute option is, for its messages. */
const KEY_OPTION_MEANING = {
  partitionKey: "the name of the table's partition key attribute",
  'sortKey.name': "the name of the table's sort key attribute",
} as const;

export const TABLE_KEY_NAME_INVALID = (name: 'partitionKey' | 'sortKey.name', value: unknown, maxBytes: number, entry: LockEntryPoint) =>
  `${option(entry, name)} must be ${KEY_OPTION_MEANING[name]}: a non-empty string of at most ${maxBytes} bytes, such as 'PK'; got ${describe(value)}.`;

export const TABLE_KEY_NAME_CLASH = (
  name: 'partitionKey' | 'sortKey.name',
  value: string,
  lockAttributes: readonly string[],
  entry: LockEntryPoint,
) =>
  `${option(entry, name)} is "${value}", an attribute lock items write for themselves, so a table keyed on it cannot hold locks. Keep locks in a table whose key attributes have other names (such as "PK" and "SK"). Lock items write: ${lockAttributes.join(', ')}.`;

export const SORT_KEY_INVALID = (value: unknown, entry: LockEntryPoint) =>
  `${option(entry, 'sortKey')} must be the table's sort key and the value lock items have in it, such as { name: 'SK', value: 'LOCK' }; got ${describe(value)}. Leave it out for a table without a sort key.`;

export const SORT_KEY_VALUE_INVALID = (value: unknown, maxBytes: number, entry: LockEntryPoint) =>
  `${option(entry, 'sortKey.value')} must be the value every lock item has in the sort key: a non-empty string of at most ${maxBytes} bytes that none of your own items has there, such as 'LOCK'; got ${describe(value)}.`;

export const SORT_KEY_SAME_AS_PARTITION_KEY = (name: string, entry: LockEntryPoint) =>
  `${OPTIONS_SCOPE[entry]} options "partitionKey" and "sortKey.name" are both "${name}": a table's sort key is another attribute than its partition key. Name the sort key of your table (such as { name: 'SK', value: 'LOCK' }), or leave sortKey out if it has none.`;

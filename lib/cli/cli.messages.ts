/**
 * Every message the CLI shows a user, in one place: errors, notes, progress and help texts.
 * Command descriptions and examples stay next to each command's definition.
 */
import type { LockTableLocation } from '../errors/lock.errors';
import { CLI_KEY_OPTIONS, CONFIGURED_KEYS_TEXT, DESCRIBED_KEYS_TEXT, FITTING_KEYS_TEXT, shownErrorName } from '../errors/lock.messages';
import type { LockInfo } from '../interfaces/lock-info.interface';
import type { LockTableKeys } from '../interfaces/lock-table-keys.interface';
import type { TableKeySchema } from '../store/dynamo/lock-table';
import { ExitCode } from './exit-codes';
import { formatDuration, relativeTime } from './output/format-time';

/** Prefix of every line the CLI writes to stderr. */
export const PROGRAM = 'dynamo-lock';

const DURATION_FORMS =
  `a number with a unit, e.g. '500ms', '30s', '15 minutes', '1m30s', '1h30m', '2 hours', '1d' ` +
  `(units: ms, s/sec/seconds, m/min/minutes, h/hr/hours, d/days)`;

// ---- Output ----

/**
 * A holder's name as the CLI shows it in tables and fields: the name, or for a holder that has not
 * written its name yet (a waiter that a release or a pass served, until it writes) a phrase.
 */
export const holderName = (owner: string) => (owner === '' ? '(a promoted waiter of another process; name not written yet)' : owner);

// ---- Usage errors (exit 2) ----

export const INVALID_DURATION = (option: string, value: string, hint?: string) =>
  `${option}: ${quote(value)} is not a valid duration${hint ? ` (${hint})` : ''}. Accepted forms: ${DURATION_FORMS}.`;

export const DURATION_NEEDS_UNIT = (value: string) => `add a unit, e.g. '${value.trim()}s'`;

export const DURATION_UNKNOWN_UNIT = (unit: string) => `unknown unit ${quote(unit)}`;

export const DURATION_ZERO = () => `it must be more than zero`;

export const DURATION_TOO_LONG = () => `at most 24 days`;

export const WAIT_ZERO = () => `it must be more than zero; to try only once, use --no-wait`;

export const INVALID_LEASE_ID = (value: string) =>
  `${quote(value)} is not a lease id: a lease id is the 32 characters \`${PROGRAM} acquire\` printed, hexadecimal but for a reader's leading r (check for a truncated or mistyped copy).`;

export const INVALID_JSON = (option: string, reason: string) => `${option} must be JSON, e.g. '{"job":"deploy"}' or '"text"': ${reason}.`;

export const INVALID_TABLE_NAME = (name: string) =>
  `--table (or DYNAMO_LOCK_TABLE): ${quote(name)} is not a DynamoDB table name (3 to 255 characters of a-z, A-Z, 0-9, '_', '.', '-').`;

export const INVALID_ENDPOINT = (endpoint: string) =>
  `--endpoint (or DYNAMODB_ENDPOINT): ${quote(endpoint)} is not an http:// or https:// URL; use for example http://localhost:8000.`;

/** `detail`: the library's message, which names the flag (`--key-prefix (or DYNAMO_LOCK_KEY_PREFIX) ...`). */
export const INVALID_SETTING = (detail: string) => `invalid setting: ${detail}`;

export const INVALID_SORT_KEY = (value: string) =>
  `--sort-key (or DYNAMO_LOCK_SORT_KEY): ${quote(value)} is not NAME=VALUE: give the table's sort key attribute and the value lock items have in it, e.g. --sort-key SK=LOCK (the value is everything after the first "=").`;

export const INVALID_LIMIT = (value: string, max: number) =>
  `--limit: ${quote(value)} is not a whole number from 1 to ${max} (the most commands holding the lock at once, across hosts).`;

export const LIMIT_WITH_DATA = () => `--data cannot be used with --limit: a semaphore slot stores no data.`;

export const READ_WITH_OPTION = (option: string) =>
  `${option} cannot be used with --read: a read lock is shared, so it ${option === '--limit' ? 'has no slots (use one or the other)' : 'stores no data'}.`;

export const AND_WITH_OPTION = (option: string) =>
  `${option} cannot be used with --and: several names make a multi-key lock (mutexes, no ${option === '--limit' ? 'semaphore slots' : 'data'}).`;

export const SEMAPHORE_BUSY = (name: string, limit: number, waitedMs: number | undefined) =>
  `all ${limit} slot${limit === 1 ? '' : 's'} of ${quote(name)} are taken or callers wait ahead; ` +
  (waitedMs === undefined ? `not waiting (--no-wait).` : `gave up after waiting ${formatDuration(waitedMs)}.`);

/** Appended to commander's own usage errors, which already say what is wrong. */
export const USAGE_HINT = () => `(see ${PROGRAM} --help)`;

// ---- Lock outcomes ----

export const NOT_ELECTED = (name: string, holder: LockInfo | null, waitedMs: number) =>
  `not elected leader of ${quote(name)} within ${formatDuration(waitedMs)}: ` +
  (holder ? `${quoteHolder(holder.owner)} leads (fencing token ${holder.fencingToken}).` : 'no leader was seen at the last read.');

export const LED_ELSEWHERE = (name: string, holder: LockInfo | null) =>
  `${quote(name)} is led by ${holder ? `${quoteHolder(holder.owner)} (fencing token ${holder.fencingToken})` : 'another instance'}; not waiting (--no-wait).`;

export const FOLLOWING = (name: string, holder: LockInfo | null) =>
  `${quote(name)} is led by ${holder ? quoteHolder(holder.owner) : 'another instance'}; following (the command starts when this host is elected).`;

export const LOCK_BUSY = (name: string, owner: string | undefined, fencingToken: number | undefined, waitedMs: number | undefined) =>
  `lock ${quote(name)} is held by ${owner ? quote(owner) : 'another owner'}${fencingToken === undefined ? '' : ` (fencing token ${fencingToken})`}; ` +
  (waitedMs === undefined ? `not waiting (--no-wait).` : `gave up after waiting ${formatDuration(waitedMs)}.`);

/** An outage while taking a lock (no answer showed a holder); `waitedMs` is `undefined` for `--no-wait`. */
export const LOCK_UNAVAILABLE = (name: string, cause: unknown, waitedMs: number | undefined) =>
  `lock ${quote(name)} could not be taken: DynamoDB ${cause === undefined ? 'did not answer in time' : `failed (${errorText(cause)})`} ` +
  `and no answer showed another holder, so this is an outage or a slow DynamoDB, not a busy lock; ` +
  (waitedMs === undefined ? `one attempt (--no-wait).` : `gave up after trying for ${formatDuration(waitedMs)}.`);

export const LEASE_NOT_HELD = (name: string, current: LockInfo | null) =>
  `this lease id does not hold lock ${quote(name)}: ` +
  (current
    ? `it is held by ${quoteHolder(current.owner)} (fencing token ${current.fencingToken}) since ${relativeTime(current.acquiredAt, new Date())}.`
    : `the lock is free (the lease expired or was released).`);

export const ACQUIRING = (name: string, wait: number | boolean, leaseMs: number) =>
  `acquiring lock ${quote(name)}: ${waitText(wait)}, lease ${formatDuration(leaseMs)}.`;

function waitText(wait: number | boolean): string {
  if (wait === true) return 'waiting without limit';
  if (wait === false) return 'one attempt';
  return `waiting up to ${formatDuration(wait)}`;
}

export const INTERRUPTED = (name: string, signal: string) => `interrupted by ${signal} while waiting for lock ${quote(name)}.`;

export const WAITING = (name: string, waitedMs: number, holder: LockInfo | null | undefined, problem?: string) =>
  `Waiting for lock ${quote(name)}` +
  (problem
    ? ` (cannot read it: ${problem})`
    : holder
      ? `, held by ${quoteHolder(holder.owner)} (fencing token ${holder.fencingToken}) since ${relativeTime(holder.acquiredAt, new Date())}`
      : '') +
  `; waited ${formatDuration(waitedMs)} …`;

// ---- exec ----

export const LOST_DURING_EXEC = (reason: string, command: string, pid: number | undefined, killAfterMs: number) =>
  `${reason.replace(/\.$/, '')}. Stopping ${quote(command)}${pid === undefined ? '' : ` (pid ${pid})`}: SIGTERM now, SIGKILL after ${formatDuration(killAfterMs)}; exiting with ${ExitCode.lost}.`;

export const LOST_AT_RELEASE = (name: string, command: string) =>
  `${quote(command)} finished, but lock ${quote(name)} was no longer held when it was released: another holder may have run at the same time; exiting with ${ExitCode.lost}.`;

export const RELEASE_FAILED = (name: string, error: unknown) =>
  `could not release lock ${quote(name)} (${errorText(error)}); it will expire after its lease.`;

export const CANNOT_RUN = (command: string, error: NodeJS.ErrnoException) =>
  `cannot run ${quote(command)}: ${
    error.code === 'ENOENT'
      ? 'command not found'
      : error.code === 'EACCES'
        ? 'permission denied (not an executable file?)'
        : oneLine(error.message)
  }.`;

// ---- Table commands ----

/** The key attributes of a lock table, as the CLI names them after "partition key". */
const keyWords = (keys: LockTableKeys) =>
  keys.sortKey
    ? `partition key ${quote(keys.partitionKey)}, sort key ${quote(keys.sortKey.name)}`
    : `partition key ${quote(keys.partitionKey)}`;

export const TABLE_CREATED = (table: string, keys: LockTableKeys) => `Created lock table ${quote(table)} (on-demand, ${keyWords(keys)}).`;

export const TABLE_EXISTED = (table: string) => `Lock table ${quote(table)} already exists with the right key schema.`;

export const TABLE_OK = (table: string, keys: LockTableKeys) =>
  keys.sortKey
    ? `Lock table ${quote(table)} is ACTIVE with the right key schema (${keyWords(keys)}, both String); lock items are those with ${quote(keys.sortKey.name)} = ${quote(keys.sortKey.value)}.`
    : `Lock table ${quote(table)} is ACTIVE with the right key schema (${keyWords(keys)}, String).`;

export const TABLE_KEYS_MISMATCH = (table: string, actual: TableKeySchema, keys: LockTableKeys) => {
  const lockValue = keys.sortKey?.value ?? 'LOCK';
  const fit = FITTING_KEYS_TEXT(
    actual,
    (option, name) => (option === 'sortKey' ? `--sort-key ${name}=${lockValue}` : `--partition-key ${name}`),
    'no --sort-key',
  );
  return `lock table ${quote(table)} has key schema ${DESCRIBED_KEYS_TEXT(actual)}, but the locks are configured with ${CONFIGURED_KEYS_TEXT(keys)}: ${
    fit ? `to keep locks in this table, pass ${fit}; or ` : 'lock tables need String keys: '
  }name another table with --table.`;
};

export const TTL_OTHER_ATTRIBUTE = (table: string, attribute: string, lockAttribute: string) =>
  `TTL: enabled on attribute ${quote(attribute)} of ${quote(table)}, not on ${quote(lockAttribute)}: TTL never deletes lock items here. Each is a few hundred bytes; see "Locks in your own table" in docs/infrastructure.md for cleaning them up.`;

export const TTL_OFF_SHARED = (table: string, lockAttribute: string) =>
  `TTL: disabled on ${quote(table)}, a table shared with your items, so left as it is (a table has one TTL attribute, and your items may need it). Without TTL, lock items stay after release, a few hundred bytes each: enable TTL on ${quote(lockAttribute)} yourself, or see "Locks in your own table" in docs/infrastructure.md.`;

export const TTL_NOT_ENABLED = (table: string, error: unknown) =>
  `TTL: could not be enabled on ${quote(table)} (${errorText(error)}); released lock items are not cleaned up automatically on this server.`;

export const TTL_STATUS = (attribute: string, status: string | undefined) =>
  status === undefined
    ? `TTL: unknown (this server has no TTL API); released lock items are not cleaned up automatically.`
    : status === 'ENABLED' || status === 'ENABLING'
      ? `TTL: ${status.toLowerCase()} on attribute ${quote(attribute)}.`
      : `TTL: ${status.toLowerCase()}; run \`${PROGRAM} table-create\` to enable it on attribute ${quote(attribute)}, so released lock items are cleaned up (a server without TTL, such as dynalite, keeps them).`;

// ---- inspect / list ----

export const LOCK_FREE = (name: string) => `Lock ${quote(name)} is free.`;

export const NO_LOCKS = (prefix: string) => (prefix ? `No locks held with keys starting with ${quote(prefix)}.` : `No locks held.`);

// ---- AWS and infrastructure (exit 4) ----

/** `keys`: the table's key attributes as configured; `location`: where it was looked for (region, endpoint), when known. */
export const TABLE_NOT_FOUND = (table: string, keys?: LockTableKeys, location?: LockTableLocation) =>
  `DynamoDB table ${quote(table)} does not exist${location ? tablePlace(location) : ''}: name the table you use with --table (or DYNAMO_LOCK_TABLE)${
    location ? ' and its region with --region (or AWS_REGION)' : ''
  }, or create this one with \`${PROGRAM} table-create --table ${table}${CLI_KEY_OPTIONS(keys)}\`.`;

/** ` in region eu-west-1 at http://localhost:8000`: where a table was looked for. */
const tablePlace = ({ region, endpoint }: LockTableLocation) =>
  `${region === undefined ? '' : ` in region ${region}`}${endpoint === undefined ? '' : ` at ${endpoint}`}`;

export const ENDPOINT_UNREACHABLE = (endpoint: string | undefined, detail: string) =>
  `cannot reach DynamoDB${endpoint ? ` at ${endpoint}` : ''}: ${detail}.`;

export const NO_CREDENTIALS = (detail: string) =>
  `no AWS credentials: ${detail.replace(/\.$/, '')}. Use --profile, AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.`;

export const NO_REGION = () => `no AWS region: pass --region or set AWS_REGION.`;

export const AWS_ERROR = (name: string, message: string) => `DynamoDB error ${name}: ${message.replace(/\.$/, '')}.`;

export const UNEXPECTED = (error: unknown) => `unexpected error: ${errorText(error)} (run with --debug for details).`;

export const VERSION_UNKNOWN = () => 'unknown';

// ---- Help ----

/** The exit-code table shown by `--help`. */
export const EXIT_CODES_HELP = () =>
  [
    'Exit codes:',
    `  ${ExitCode.ok}    success`,
    `  ${ExitCode.busy}    lock busy (--no-wait), or the wait timed out`,
    `  ${ExitCode.usage}    usage error: unknown command or option, malformed duration, JSON or lease id, bad lock name`,
    `  ${ExitCode.lost}    lease lost, or the lease id does not hold the lock`,
    `  ${ExitCode.infrastructure}    AWS or DynamoDB error: missing or wrong table, endpoint unreachable, credentials`,
    `  130  interrupted while waiting (128 + signal number; 143 for SIGTERM, 129 for SIGHUP)`,
    `  exec exits with its command's exit code (128 + N if signal N ended it; ${ExitCode.commandNotFound} if the command`,
    `  was not found, ${ExitCode.commandNotExecutable} if it could not be run); ${ExitCode.lost} if the lock was lost while it ran.`,
    `  lead exits likewise once its command ends; ${ExitCode.lost} if leadership was lost while it ran, ${ExitCode.busy} if not elected within --wait`,
    `  (or, with --no-wait, if another host leads).`,
  ].join('\n');

/** Environment variables shown by `--help`. */
export const ENVIRONMENT_HELP = () =>
  [
    'Environment:',
    '  DYNAMO_LOCK_TABLE          lock table (--table; default "nestjs-dynamo-lock")',
    '  AWS_ENDPOINT_URL_DYNAMODB  DynamoDB endpoint URL, e.g. http://localhost:8000 (the AWS SDK reads it too)',
    '  DYNAMODB_ENDPOINT          DynamoDB endpoint URL (--endpoint), e.g. http://localhost:8000',
    '  AWS_REGION                 AWS region (--region)',
    '  AWS_PROFILE                AWS profile (--profile); other AWS_* variables work as in the AWS CLI',
    '  DYNAMO_LOCK_OWNER          owner name stored with locks (--owner)',
    '  DYNAMO_LOCK_KEY_PREFIX     prefix added to every lock name (--key-prefix)',
  ].join('\n');

// ---- Helpers ----

/** A holder's name quoted, or the phrase for one not written yet (see {@link holderName}). */
function quoteHolder(owner: string): string {
  return owner === '' ? holderName(owner) : quote(owner);
}

/** A value in double quotes, with control characters escaped so it prints on one line. */
export function quote(text: string): string {
  return JSON.stringify(text);
}

/** An error as `Name: message` (a broken connection: `message (code)`), on one line. */
export function errorText(error: unknown): string {
  if (error instanceof Error) {
    const name = shownErrorName(error);
    const code = (error as { code?: unknown }).code;
    if (!name && typeof code === 'string' && !error.message.includes(code)) return oneLine(`${error.message} (${code})`);
    return oneLine(name && name !== 'Error' ? `${name}: ${error.message}` : error.message);
  }
  return oneLine(String(error));
}

/** Collapses line breaks, so a message stays one line. */
export function oneLine(text: string): string {
  return text.replace(/\s*[\r\n]+\s*/g, ' ').trim();
}

/**
 * Unit tests of the CLI's pure parts: durations and JSON options, lease-id argument handling,
 * table rendering, time formatting, error classification, and the progress line on a
 * (fake) terminal; and the environment the end-to-end tests run the CLI in. The commands
 * themselves are tested end to end in `cli.e2e-spec.ts`.
 */
import { afterEach, describe, expect, it, jest } from '@jest/globals';
import { CommanderError } from 'commander';
import { LockBusyError, LockConfigurationError, LockLostError, LockTableError, LockUnavailableError, LockValidationError } from '../../lib';
import type { LockInfo } from '../../lib';
import { CliError, UsageError } from '../../lib/cli/cli.errors';
import { FOLLOWING, holderName, LED_ELSEWHERE, NOT_ELECTED, WAITING } from '../../lib/cli/cli.messages';
import { classifyError } from '../../lib/cli/error-report';
import { childExitCode, ExitCode, signalExitCode } from '../../lib/cli/exit-codes';
import { CliIo, type TextSink } from '../../lib/cli/io';
import { parseLeaseId } from '../../lib/cli/lease-id-args';
import { parseDataOption, parseDurationOption, parseWaitOption } from '../../lib/cli/options';
import { formatDuration, relativeTime } from '../../lib/cli/output/format-time';
import { lockInfoFields, lockInfoJson, lockInfoRow, LOCK_COLUMNS } from '../../lib/cli/output/lock-info.view';
import { renderFields, renderTable } from '../../lib/cli/output/table';
import { WaitProgress } from '../../lib/cli/progress';
import { Cli } from './support/cli-process';

/** A stream that records what is written to it. */
class MemorySink implements TextSink {
  text = '';
  constructor(
    readonly isTTY = false,
    readonly columns = 80,
  ) {}
  write(text: string, callback?: (error?: Error | null) => void): boolean {
    this.text += text;
    callback?.();
    return true;
  }
}

const info = (overrides: Partial<LockInfo> = {}): LockInfo => ({
  key: 'deploy',
  owner: 'alice@ci',
  fencingToken: 17,
  acquiredAt: new Date('2030-01-01T00:00:00Z'),
  updatedAt: new Date('2030-01-01T00:01:00Z'),
  leaseDuration: 300_000,
  ...overrides,
});

describe('duration options', () => {
  it('accepts the documented forms', () => {
    expect(parseDurationOption('15 minutes', '--lease-duration')).toBe(900_000);
    expect(parseDurationOption('300s', '--lease-duration')).toBe(300_000);
    expect(parseDurationOption('1h30m', '--wait')).toBe(5_400_000);
    expect(parseDurationOption('2 hours', '--wait')).toBe(7_200_000);
    expect(parseDurationOption('500ms', '--wait')).toBe(500);
  });

  it.each([
    ['30', /"30" is not a valid duration \(add a unit, e\.g\. '30s'\)/],
    ['5 parsecs', /\(unknown unit "parsecs"\)/],
    ['0s', /\(it must be more than zero; to try only once, use --no-wait\)/],
    ['30d', /\(at most 24 days\)/],
    ['soon', /"soon" is not a valid duration\. Accepted/],
  ])('rejects %j with a usage error naming the option and listing the accepted forms', (value, reason) => {
    const error = (() => {
      try {
        parseDurationOption(value, '--wait');
      } catch (thrown) {
        return thrown;
      }
      throw new Error('expected a throw');
    })();
    expect(error).toBeInstanceOf(UsageError);
    expect((error as UsageError).exitCode).toBe(ExitCode.usage);
    expect((error as Error).message).toMatch(/^--wait: /);
    expect((error as Error).message).toMatch(reason);
    expect((error as Error).message).toContain(
      "Accepted forms: a number with a unit, e.g. '500ms', '30s', '15 minutes', '1m30s', '1h30m', '2 hours', '1d'",
    );
  });

  it("maps --wait and --no-wait to the engine's wait", () => {
    expect(parseWaitOption(undefined)).toBe(true);
    expect(parseWaitOption(false)).toBe(false);
    expect(parseWaitOption('30s')).toBe(30_000);
  });

  it('parses --data as JSON, and refuses anything else', () => {
    expect(parseDataOption('{"a":[1,2]}')).toEqual({ a: [1, 2] });
    expect(parseDataOption('"text"')).toBe('text');
    expect(parseDataOption(undefined)).toBeUndefined();
    expect(() => parseDataOption('{a:1}')).toThrow(/^--data must be JSON/);
  });
});

describe('lease id arguments', () => {
  it('accept the 32 hexadecimal characters acquire prints', () => {
    expect(parseLeaseId('0123456789abcdef0123456789abcdef')).toBe('0123456789abcdef0123456789abcdef');
    // Copied in capitals (a terminal, a wiki): the same id.
    expect(parseLeaseId('0123456789ABCDEF0123456789ABCDEF')).toBe('0123456789abcdef0123456789abcdef');
    // A reader's (acquire --read): r first.
    expect(parseLeaseId('r123456789abcdef0123456789abcdef')).toBe('r123456789abcdef0123456789abcdef');
  });

  it('refuse anything else as a usage error (exit 2), before any request', () => {
    for (const bad of [
      '',
      'abc',
      '0123456789abcdef0123456789abcde',
      '0123456789abcdef0123456789abcdeg',
      '0r23456789abcdef0123456789abcdef',
      '-hQ3xAAAAAAAAAAAAAAAAA',
      ' 0123456789abcdef0123456789abcdef',
    ]) {
      expect(() => parseLeaseId(bad)).toThrow(UsageError);
      expect(() => parseLeaseId(bad)).toThrow(
        /is not a lease id: a lease id is the 32 characters `dynamo-lock acquire` printed, hexadecimal but for a reader's leading r/,
      );
    }
  });
});

describe('output', () => {
  it('formats durations in the units the CLI accepts', () => {
    expect([850, 4_250, 42_000, 90_000, 300_000, 3_600_000, 5_400_000, 93_600_000].map(formatDuration)).toEqual([
      '850ms',
      '4.2s',
      '42s',
      '1m30s',
      '5m',
      '1h',
      '1h30m',
      '1d2h',
    ]);
    const now = new Date('2030-01-01T00:10:00Z');
    expect(relativeTime(new Date('2030-01-01T00:07:00Z'), now)).toBe('3m ago');
    expect(relativeTime(new Date('2030-01-01T00:10:42Z'), now)).toBe('in 42s');
  });

  it('aligns table columns and escapes control characters', () => {
    const lines = renderTable(
      ['KEY', 'OWNER', 'DATA'],
      [
        ['a', 'alice', '{"x":1}'],
        ['longer-key', 'evil\u001b[2Jowner\nx', ''],
      ],
    );
    const owner = 'evil\\u001b[2Jowner\\nx';
    expect(lines).toEqual([
      `KEY         ${'OWNER'.padEnd(owner.length)}  DATA`,
      `a           ${'alice'.padEnd(owner.length)}  {"x":1}`,
      `longer-key  ${owner}`,
    ]);
    expect(renderTable(['A', 'B'], [['x', 'a long value']], { maxWidth: 8 })).toEqual(['A  B', 'x  a lo…']);
    expect(
      renderFields([
        ['Key', 'deploy'],
        ['Fencing token', '17'],
      ]),
    ).toEqual(['Key:            deploy', 'Fencing token:  17']);
  });

  it('renders a lock as JSON with ISO times and its expiry, and as a table row', () => {
    const lock = info({ data: { run: 42 } });
    expect(lockInfoJson(lock)).toEqual({
      key: 'deploy',
      owner: 'alice@ci',
      fencingToken: 17,
      acquiredAt: '2030-01-01T00:00:00.000Z',
      updatedAt: '2030-01-01T00:01:00.000Z',
      leaseDuration: 300_000,
      expiresAt: '2030-01-01T00:06:00.000Z',
      data: { run: 42 },
    });
    expect(lockInfoJson(info())).not.toHaveProperty('data');
    const row = lockInfoRow(lock, new Date('2030-01-01T00:02:00Z'));
    expect(row).toEqual(['deploy', 'alice@ci', '17', '2m ago', '1m ago', '5m', 'in 4m', '{"run":42}']);
    expect(row).toHaveLength(LOCK_COLUMNS.length);
    expect(lockInfoRow(lock, new Date('2030-01-01T00:07:00Z'))[6]).toBe('1m overdue');
  });

  it('names a holder that has not written its name yet (a promoted waiter) instead of leaving it blank', () => {
    const served = info({ owner: '' });
    const phrase = holderName('');
    expect(phrase).not.toBe('');
    expect(lockInfoRow(served, new Date('2030-01-01T00:02:00Z'))[1]).toBe(phrase);
    expect(lockInfoFields(served, new Date('2030-01-01T00:02:00Z'))).toContainEqual(['Owner', phrase]);
    expect(WAITING('deploy', 1_000, served)).toContain(`held by ${phrase}`);
    for (const message of [NOT_ELECTED('deploy', served, 1_000), LED_ELSEWHERE('deploy', served), FOLLOWING('deploy', served)]) {
      expect(message).toContain(phrase);
      expect(message).not.toContain('""');
    }
    expect(lockInfoJson(served).owner).toBe('');
    expect(holderName('alice@ci')).toBe('alice@ci');
  });

  it('renders a semaphore with its limit, line and every holder as JSON, and its taken slots in the table', () => {
    const older = info({ owner: 'bob@ci', fencingToken: 16 });
    const newest = info();
    const semaphore = { ...newest, limit: 3, waiting: 1, holders: [older, newest] };
    expect(lockInfoJson(semaphore)).toEqual({
      ...lockInfoJson(newest),
      limit: 3,
      waiting: 1,
      holders: [lockInfoJson(older), lockInfoJson(newest)],
    });
    expect(lockInfoRow(semaphore, new Date('2030-01-01T00:02:00Z')).slice(0, 3)).toEqual(['deploy (2/3 slots)', 'alice@ci', '17']);
  });
});

describe('exit codes', () => {
  it('map errors to the documented codes', () => {
    expect(classifyError(new CommanderError(0, 'commander.helpDisplayed', '')).exitCode).toBe(0);
    expect(classifyError(new CommanderError(1, 'commander.unknownOption', 'x')).exitCode).toBe(2);
    expect(classifyError(new CliError('busy', ExitCode.busy))).toEqual({ exitCode: 1, message: 'busy' });
    expect(classifyError(new LockBusyError('busy', 'k', undefined, 5)).exitCode).toBe(1);
    expect(classifyError(new LockValidationError('bad key')).exitCode).toBe(2);
    expect(classifyError(new LockLostError('lost', 'k', 'taken')).exitCode).toBe(3);
    expect(classifyError(new LockConfigurationError('no table')).exitCode).toBe(4);
    const notFound = Object.assign(new Error('Requested resource not found'), { name: 'ResourceNotFoundException', $metadata: {} });
    expect(classifyError(notFound, { tableName: 'locks' })).toEqual({
      exitCode: 4,
      message:
        'DynamoDB table "locks" does not exist: name the table you use with --table (or DYNAMO_LOCK_TABLE), or create this one with `dynamo-lock table-create --table locks`.',
    });
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    expect(classifyError(refused, { endpoint: 'http://127.0.0.1:1' })).toEqual({
      exitCode: 4,
      message: 'cannot reach DynamoDB at http://127.0.0.1:1: connect ECONNREFUSED 127.0.0.1:1.',
    });
    // A missing table found by exec or inspect: the CLI's advice, not the module's options; where it looked, when known.
    expect(classifyError(new LockTableError('Create it with `createTable: true` ...', 'locks', 'missing'))).toEqual(
      classifyError(notFound, { tableName: 'locks' }),
    );
    const located = new LockTableError('...', 'locks', 'missing', {
      region: 'eu-west-1',
      endpoint: 'https://dynamodb.eu-west-1.amazonaws.com',
    });
    expect(classifyError(located)).toEqual({
      exitCode: 4,
      message:
        'DynamoDB table "locks" does not exist in region eu-west-1 at https://dynamodb.eu-west-1.amazonaws.com: name the table you use with --table (or DYNAMO_LOCK_TABLE) and its region with --region (or AWS_REGION), or create this one with `dynamo-lock table-create --table locks`.',
    });
    // An outage while taking a lock keeps the library's words: the lock, the time tried, not a busy lock.
    const outage = new LockUnavailableError('Lock "k" could not be acquired: ...', 'k', 0, 3_000, { cause: refused });
    expect(classifyError(outage, { endpoint: 'http://127.0.0.1:1' })).toEqual({ exitCode: 4, message: outage.message });
    const throttled = Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException', $metadata: { httpStatusCode: 400 } });
    expect(classifyError(throttled)).toEqual({ exitCode: 4, message: 'DynamoDB error ThrottlingException: Rate exceeded.' });
  });

  it('report children like a shell: their code, or 128 + the signal number', () => {
    expect(childExitCode(7, null)).toBe(7);
    expect(childExitCode(null, 'SIGTERM')).toBe(143);
    expect(signalExitCode('SIGINT')).toBe(130);
    expect(signalExitCode('SIGHUP')).toBe(129);
  });
});

describe('progress line', () => {
  afterEach(() => {
    jest.useRealTimers();
  });

  it('redraws one line on a terminal with the holder and the time waited, and clears it at the end', async () => {
    jest.useFakeTimers({ doNotFake: ['performance'] });
    const stderr = new MemorySink(true, 200);
    const io = new CliIo(new MemorySink(), stderr);
    const holder = info({ acquiredAt: new Date(Date.now() - 120_000) });
    const progress = new WaitProgress(io, 'deploy', async () => holder, 1_000);
    progress.start(holder);
    expect(stderr.text).toBe('');
    await jest.advanceTimersByTimeAsync(300);
    /* eslint-disable no-control-regex -- the progress line is drawn with terminal escapes */
    expect(stderr.text).toMatch(
      /^\r\x1b\[KWaiting for lock "deploy", held by "alice@ci" \(fencing token 17\) since 2m ago; waited \d+ms …$/,
    );
    io.err('dynamo-lock: a message');
    expect(stderr.text).toMatch(/\r\x1b\[Kdynamo-lock: a message\nWaiting for lock "deploy"[^\n]*$/);
    /* eslint-enable no-control-regex */
    await jest.advanceTimersByTimeAsync(1_000);
    expect(stderr.text.split('\r\x1b[K').length).toBeGreaterThanOrEqual(4);
    progress.stop();
    expect(stderr.text.endsWith('\r\x1b[K')).toBe(true);
    const length = stderr.text.length;
    await jest.advanceTimersByTimeAsync(3_000);
    expect(stderr.text.length).toBe(length);
  });

  it('is silent when stderr is not a terminal', async () => {
    jest.useFakeTimers({ doNotFake: ['performance'] });
    const stderr = new MemorySink(false);
    const progress = new WaitProgress(new CliIo(new MemorySink(), stderr), 'deploy', async () => null, 1_000);
    progress.start(null);
    await jest.advanceTimersByTimeAsync(2_500);
    progress.stop();
    expect(stderr.text).toBe('');
  });
});

describe("the environment of the end-to-end tests' CLI runs", () => {
  const saved = { ...process.env };
  afterEach(() => {
    for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
    Object.assign(process.env, saved);
  });
  const userEnvironment = {
    AWS_ENDPOINT_URL_DYNAMODB: 'http://localhost:8000',
    AWS_REGION: 'eu-west-1',
    AWS_ACCESS_KEY_ID: 'newcomer',
    AWS_SECRET_ACCESS_KEY: 'secret',
    AWS_SESSION_TOKEN: 'session',
    AWS_PROFILE: 'dev',
    AWS_MAX_ATTEMPTS: '10',
    DYNAMODB_ENDPOINT: 'http://localhost:8001',
    DYNAMO_LOCK_TABLE: 'their-locks',
    DYNAMO_LOCK_KEY_PREFIX: 'theirs:',
  };

  it('keep, against an external server, the credentials and region the README tells users to set and nothing else; against a local server, dummy ones (a profile would take precedence over them)', () => {
    Object.assign(process.env, userEnvironment);
    const env = new Cli({ name: 'external', endpoint: 'http://localhost:8000' }).env();
    expect(env).toMatchObject({
      AWS_REGION: 'eu-west-1',
      AWS_ACCESS_KEY_ID: 'newcomer',
      AWS_SECRET_ACCESS_KEY: 'secret',
      AWS_SESSION_TOKEN: 'session',
      AWS_PROFILE: 'dev',
    });
    for (const name of [
      'AWS_ENDPOINT_URL_DYNAMODB',
      'AWS_MAX_ATTEMPTS',
      'DYNAMODB_ENDPOINT',
      'DYNAMO_LOCK_TABLE',
      'DYNAMO_LOCK_KEY_PREFIX',
    ]) {
      expect(env).not.toHaveProperty(name);
    }
    // A local server was started with -sharedDb: any credentials see its tables.
    const local = new Cli({ name: 'dynalite', endpoint: 'http://127.0.0.1:9' }).env();
    expect(local).toMatchObject({ AWS_REGION: 'us-east-1', AWS_ACCESS_KEY_ID: 'x', AWS_SECRET_ACCESS_KEY: 'x' });
    for (const name of ['AWS_PROFILE', 'AWS_SESSION_TOKEN', 'AWS_ENDPOINT_URL_DYNAMODB', 'DYNAMO_LOCK_TABLE'])
      expect(local).not.toHaveProperty(name);
  });
});

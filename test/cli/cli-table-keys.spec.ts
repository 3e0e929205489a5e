/**
 * Unit tests of the CLI's parts for a table shared with the app: `--sort-key NAME=VALUE` parsing,
 * and a missing table reported with the flags that create it with its keys.
 */
import { describe, expect, it } from '@jest/globals';
import { LockTableError } from '../../lib';
import { UsageError } from '../../lib/cli/cli.errors';
import { classifyError } from '../../lib/cli/error-report';
import { ExitCode } from '../../lib/cli/exit-codes';
import { parseSortKey } from '../../lib/cli/session';

describe('--sort-key NAME=VALUE', () => {
  it('splits at the first "=": the value may hold more', () => {
    expect(parseSortKey(undefined)).toBeUndefined();
    expect(parseSortKey('SK=LOCK')).toEqual({ name: 'SK', value: 'LOCK' });
    expect(parseSortKey('type=lock=v1')).toEqual({ name: 'type', value: 'lock=v1' });
  });

  it('refuses a value without "=", or with nothing before or after it, naming the form', () => {
    for (const bad of ['SK', '=LOCK', 'SK=', '=']) {
      expect(() => parseSortKey(bad)).toThrow(UsageError);
      expect(() => parseSortKey(bad)).toThrow(`--sort-key (or DYNAMO_LOCK_SORT_KEY): "${bad}" is not NAME=VALUE`);
    }
  });
});

describe('a missing table, with the keys of a shared table', () => {
  it('says to create it with --partition-key and --sort-key; the default keys add nothing', () => {
    const missing = new LockTableError('missing', 'app', 'missing');
    const keys = { partitionKey: 'PK', sortKey: { name: 'SK', value: 'LOCK' } };
    expect(classifyError(missing, { tableName: 'app', tableKeys: keys })).toEqual({
      exitCode: ExitCode.infrastructure,
      message:
        'DynamoDB table "app" does not exist: name the table you use with --table (or DYNAMO_LOCK_TABLE), or create this one with `dynamo-lock table-create --table app --partition-key PK --sort-key SK=LOCK`.',
    });
    expect(classifyError(missing, { tableName: 'app', tableKeys: { partitionKey: 'key' } }).message).toContain(
      '`dynamo-lock table-create --table app`.',
    );
  });
});

/**
 * A standalone `LockManager`'s configuration errors name `LockManager`, the entry point its user
 * wrote, never `DynamoLockModule`. Checked at construction: no request is sent.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { LockConfigurationError, LockManager } from '../../../lib/standalone';

describe('a standalone LockManager with bad options', () => {
  const saved = process.env.DYNAMO_LOCK_TABLE;
  afterEach(() => {
    if (saved === undefined) delete process.env.DYNAMO_LOCK_TABLE;
    else process.env.DYNAMO_LOCK_TABLE = saved;
  });

  it.each([
    ['an unknown option', { leaseDurration: '5s' }, /^LockManager has no option "leaseDurration"; did you mean "leaseDuration"\?/],
    ['options that are no object', 'locks', /^LockManager options must be an object, such as \{ tableName: 'locks' \}; got "locks"\.$/],
    [
      'a store that is no MemoryLockStore',
      { store: {} },
      /^LockManager option "store" must be a MemoryLockStore \(new MemoryLockStore\(\)\); got \{\}\. Leave it out to keep locks in the DynamoDB table\.$/,
    ],
    ['a table name DynamoDB refuses', { tableName: 'x' }, /^LockManager option "tableName" must be a DynamoDB table name/],
    ['a key prefix with no room for keys', { keyPrefix: 'p'.repeat(2048) }, /^LockManager option "keyPrefix" leaves no room for keys/],
    ['a boolean option given as a string', { createTable: 'false' }, /^LockManager option "createTable" must be true or false/],
    ['a negative ttlDays', { ttlDays: -1 }, /^LockManager option "ttlDays" must be a number of days, 0 or more; got -1\.$/],
  ])('%s: the error names LockManager', (_, options, message) => {
    let error: unknown;
    try {
      new LockManager(options as never);
    } catch (thrown) {
      error = thrown;
    }
    expect(error).toBeInstanceOf(LockConfigurationError);
    expect((error as Error).message).toMatch(message);
    expect((error as Error).message).not.toContain('DynamoLockModule');
  });

  it('a bad DYNAMO_LOCK_TABLE is named as the variable it is, not as an option', () => {
    process.env.DYNAMO_LOCK_TABLE = 'x';
    expect(() => new LockManager({ verifyTable: false })).toThrow(
      /^The DYNAMO_LOCK_TABLE environment variable \(the table name, as LockManager sets no tableName\) must be a DynamoDB table name \(3-255 of a-z A-Z 0-9 _ \. -\); got "x"\.$/,
    );
  });
});

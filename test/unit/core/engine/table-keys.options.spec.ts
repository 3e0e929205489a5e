/**
 * `partitionKey` and `sortKey` checked before anything is sent: each bad input rejected with a
 * message naming the option, what it must be and how to fix it; the default unchanged.
 */
import { describe, expect, it } from '@jest/globals';
import { LockConfigurationError, LockManager, MemoryLockStore } from '../../../../lib';
import { resolveTableKeys, tableKeysOf } from '../../../../lib/core/engine/table-keys.options';
import { resolveLockOptions } from '../../../../lib/core/engine/lock-options.resolver';

/** The message `resolveTableKeys` throws for these inputs. */
function problem(partitionKey: unknown, sortKey?: unknown): string {
  try {
    resolveTableKeys(partitionKey, sortKey);
  } catch (error) {
    expect(error).toBeInstanceOf(LockConfigurationError);
    return (error as Error).message;
  }
  throw new Error(`resolveTableKeys(${String(partitionKey)}, ...) accepted the input`);
}

describe('partitionKey and sortKey options', () => {
  it('default to the library\'s own table: partition key "key", no sort key', () => {
    const resolved = resolveLockOptions({});
    expect([resolved.partitionKey, resolved.sortKey]).toEqual(['key', undefined]);
    expect(tableKeysOf(resolved)).toEqual({ partitionKey: 'key' });
  });

  it('take a partition key name and a sort key with its value, copied', () => {
    const sortKey = { name: 'SK', value: 'LOCK' };
    const resolved = resolveLockOptions({ partitionKey: 'PK', sortKey });
    sortKey.value = 'changed';
    expect(tableKeysOf(resolved)).toEqual({ partitionKey: 'PK', sortKey: { name: 'SK', value: 'LOCK' } });
    // A sort key with the default partition key, and names that only look like a lock's.
    expect(resolveTableKeys(undefined, { name: 'sk', value: 'x' })).toEqual({ partitionKey: 'key', sortKey: { name: 'sk', value: 'x' } });
    expect(resolveTableKeys('Token', undefined)).toEqual({ partitionKey: 'Token' });
  });

  it('refuse a name that is not a non-empty string of at most 255 bytes', () => {
    for (const bad of ['', 42, null, 'x'.repeat(256), '\ud800']) {
      expect(problem(bad)).toMatch(
        /^LockManager option "partitionKey" must be the name of the table's partition key attribute: a non-empty string of at most 255 bytes, such as 'PK'; got /,
      );
    }
    expect(problem('PK', { name: '', value: 'LOCK' })).toMatch(
      /^LockManager option "sortKey.name" must be the name of the table's sort key attribute/,
    );
  });

  it('refuse a key named as an attribute of lock items, listing them', () => {
    expect(problem('token')).toMatch(
      /^LockManager option "partitionKey" is "token", an attribute lock items write for themselves, so a table keyed on it cannot hold locks\. Keep locks in a table whose key attributes have other names \(such as "PK" and "SK"\)\. Lock items write: acquiredAt, claims, .*, ttl, updatedAt, upgrader, upgrading\.$/,
    );
    // Semaphore items' attributes too.
    expect(problem('PK', { name: 'holders', value: 'LOCK' })).toMatch(/^LockManager option "sortKey.name" is "holders"/);
    expect(problem('ttl')).toMatch(/"partitionKey" is "ttl"/);
  });

  it('refuse a sort key that is not { name, value }, or has an unknown field, with the closest name', () => {
    for (const bad of ['SK=LOCK', ['SK', 'LOCK'], null, 7]) {
      expect(problem('PK', bad)).toMatch(
        /^LockManager option "sortKey" must be the table's sort key and the value lock items have in it, such as \{ name: 'SK', value: 'LOCK' \}; got .*Leave it out for a table without a sort key\.$/,
      );
    }
    expect(problem('PK', { name: 'SK', vaule: 'LOCK' })).toMatch(/has no option "vaule"; did you mean "value"\?/);
  });

  it('refuse an empty or too long sort key value, and a sort key named as the partition key', () => {
    for (const bad of ['', undefined, 3, 'x'.repeat(1025)]) {
      expect(problem('PK', { name: 'SK', value: bad })).toMatch(
        /^LockManager option "sortKey.value" must be the value every lock item has in the sort key: a non-empty string of at most 1024 bytes that none of your own items has there, such as 'LOCK'; got /,
      );
    }
    expect(problem('PK', { name: 'PK', value: 'LOCK' })).toBe(
      `LockManager options "partitionKey" and "sortKey.name" are both "PK": a table's sort key is another attribute than its partition key. Name the sort key of your table (such as { name: 'SK', value: 'LOCK' }), or leave sortKey out if it has none.`,
    );
  });

  it('are checked with a memory store too, when the manager is made', () => {
    expect(() => new LockManager({ store: new MemoryLockStore(), sortKey: { name: 'SK', value: '' } })).toThrow(LockConfigurationError);
  });
});

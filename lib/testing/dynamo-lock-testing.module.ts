import type { DynamicModule, Type } from '@nestjs/common';
import { DYNAMO_LOCK_OPTIONS } from '../dynamo-lock.module-definition';
import { withEntryPoint } from '../core/engine/lock-options.resolver';
import type { DynamoLockOptions } from '../interfaces/dynamo-lock-options.interface';
import { MemoryLockStore } from '../store/memory-lock.store';

/**
 * Options of `DynamoLockModule.forTesting()`: the lock options (lease, wait, owner name, key
 * prefix, logger...) without the table checks, which have nothing to check in memory.
 */
export interface DynamoLockTestingOptions extends Omit<DynamoLockOptions, 'createTable' | 'verifyTable'> {
  /**
   * The store to use; default a new {@link MemoryLockStore}. Pass one store to several testing
   * modules to make them act like instances of an app sharing one table, or to look at the
   * records a test left behind. To test a `@WithLock` method that calls
   * `this.locks.current()!.transact(items)` or `fencedWrite(item)`, pass
   * `new MemoryLockStore({ onWrite })`: the store checks the lock (or the item's fencing token) as
   * DynamoDB would and hands each write that passes to `onWrite`.
   */
  store?: NonNullable<DynamoLockOptions['store']>;
  /** Register the module globally, as `forRoot()` does (default `true`). */
  isGlobal?: boolean;
}

/**
 * The dynamic module `DynamoLockModule.forTesting()` returns: `module` (the `DynamoLockModule`
 * class, with its `LockService` and `@WithLock` check), global unless `isGlobal: false`, with options that
 * keep every lock in memory and never contact DynamoDB.
 * @internal
 */
export function dynamoLockTestingModule(module: Type<unknown>, options: DynamoLockTestingOptions = {}): DynamicModule {
  const { isGlobal = true, ...lockOptions } = options;
  const resolved = withEntryPoint(
    { ...lockOptions, store: lockOptions.store ?? new MemoryLockStore(), verifyTable: false, createTable: false },
    'forTesting',
  );
  return {
    module,
    global: isGlobal,
    providers: [{ provide: DYNAMO_LOCK_OPTIONS, useValue: resolved }],
  };
}

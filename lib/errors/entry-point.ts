/** Which entry point of the library the user configured it through: configuration errors name it. */

/**
 * Where the lock options were written, so that an error about them names what the user wrote:
 * - `forRoot`, `forRootAsync`, `forTesting`: `DynamoLockModule`'s methods;
 * - `module`: a `LockService` provided without them (the options under `DYNAMO_LOCK_OPTIONS`);
 * - `LockManager`: a standalone `new LockManager(options)`;
 * - `cli`: the `dynamo-lock` command (options come from its flags and environment variables);
 * - `ensureLockTable`: a direct call of `ensureLockTable()` (its option `create`).
 */
export type LockEntryPoint = 'forRoot' | 'forRootAsync' | 'forTesting' | 'module' | 'LockManager' | 'cli' | 'ensureLockTable';

import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { LockConfigurationError } from '../../errors/lock.errors';
import type { LockEntryPoint } from '../../errors/entry-point';
import { STORE_INVALID } from '../../errors/lock.messages';
import type { DynamoLockOptions } from '../../interfaces/dynamo-lock-options.interface';
import { createDynamoClient } from '../../store/dynamo/dynamo-endpoint';
import { DynamoLockStores } from '../../store/dynamo-lock.stores';
import { type LockStores, storesOf } from '../../store/lock-stores';
import type { ResolvedLockOptions } from './lock-options.resolver';
import { tableKeysOf } from './table-keys.options';

/**
 * Where a manager's lock items live: the `store` option, or the DynamoDB table. The DynamoDB
 * client is the `client` option, or one created from `clientConfig` on first use, so a memory
 * store (the one of `forTesting()`) creates none.
 */
export class LockStoreFactory {
  /** The stores to use, one per primitive. */
  readonly stores: LockStores;
  private created: DynamoDBClient | undefined;

  /**
   * @param entry what the options were written for: the table's errors name it.
   * @throws LockConfigurationError when the `store` option is not a store the engine can use.
   */
  constructor(
    private readonly options: Pick<DynamoLockOptions, 'client' | 'clientConfig' | 'store'>,
    resolved: ResolvedLockOptions,
    entry: LockEntryPoint,
  ) {
    const { store } = options;
    const given = store === undefined ? undefined : storesOf(store);
    if (store !== undefined && !given) throw new LockConfigurationError(STORE_INVALID(store, entry));
    this.stores =
      given ??
      new DynamoLockStores(this.client, {
        tableName: resolved.tableName,
        keys: tableKeysOf(resolved),
        ttlDays: resolved.ttlDays,
        logger: resolved.logger,
        requestTimeoutMs: resolved.requestTimeoutMs,
        createTable: resolved.createTable,
        entryPoint: entry,
      });
  }

  /** The DynamoDB client: the one given, or the one created (now, if not yet). */
  get client(): DynamoDBClient {
    return this.options.client ?? (this.created ??= createDynamoClient(this.options.clientConfig));
  }

  /** Destroys the client if this factory created it (never one that was given). */
  destroy(): void {
    this.created?.destroy();
  }
}

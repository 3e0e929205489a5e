import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoLockOptions } from '../interfaces/dynamo-lock-options.interface';
import { createDynamoClient } from '../store/dynamo-endpoint';
import { LockStore } from '../store/lock.store';
import type { LockStorePort } from '../store/lock-store.interface';
import type { ResolvedLockOptions } from './lock-options.resolver';

/**
 * Where a manager's lock records live: the `store` option, or the DynamoDB store on the table.
 * The DynamoDB client is the `client` option, or one created from `clientConfig` on first use,
 * so a custom store (the memory store of `forTesting()`) creates none.
 */
export class LockStoreFactory {
  /** The store to use. */
  readonly store: LockStorePort;
  private created: DynamoDBClient | undefined;

  constructor(
    private readonly options: Pick<DynamoLockOptions, 'client' | 'clientConfig' | 'store'>,
    resolved: ResolvedLockOptions,
  ) {
    this.store =
      options.store ??
      new LockStore(this.client, {
        tableName: resolved.tableName,
        ttlDays: resolved.ttlDays,
        logger: resolved.logger,
        requestTimeoutMs: resolved.requestTimeoutMs,
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

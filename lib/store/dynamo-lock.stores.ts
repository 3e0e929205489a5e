import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoStoreOptions } from './dynamo/dynamo-store.options';
import { DynamoFencingStore } from './fencing/fencing.dynamo-store';
import { checkLockTable, tableHealth } from './dynamo/lock-table';
import type { LockStores } from './lock-stores';
import { DynamoMutexStore } from './mutex/mutex.dynamo-store';
import { DynamoSemaphoreStore } from './semaphore/semaphore.dynamo-store';
import { DynamoReadStore } from './rw/read.dynamo-store';
import type { TableHealth } from './store.protocol';

/** The lock table on DynamoDB: every primitive's items in one table, on one client; fenced writes on the same client. */
export class DynamoLockStores implements LockStores {
  readonly kind = 'dynamodb';
  readonly mutex: DynamoMutexStore;
  readonly semaphore: DynamoSemaphoreStore;
  readonly read: DynamoReadStore;
  readonly fencing: DynamoFencingStore;

  constructor(
    private readonly client: DynamoDBClient,
    private readonly options: DynamoStoreOptions,
  ) {
    this.mutex = new DynamoMutexStore(client, options);
    this.semaphore = new DynamoSemaphoreStore(client, options);
    this.read = new DynamoReadStore(client, options, this.mutex);
    this.fencing = new DynamoFencingStore(client, options);
  }

  /** The table the stores write to. */
  get tableName(): string {
    return this.options.tableName;
  }

  /** Checks that the table exists with the configured key schema, creating it when `create` is set. */
  prepare(create: boolean): Promise<void> {
    const { tableName, logger, keys, entryPoint = 'LockManager' } = this.options;
    return checkLockTable(this.client, tableName, { create, logger, keys }, entryPoint);
  }

  /** The table's status, from one `DescribeTable` that stops waiting when `signal` aborts. */
  health(signal: AbortSignal): Promise<TableHealth> {
    return tableHealth(this.client, this.options.tableName, signal);
  }
}

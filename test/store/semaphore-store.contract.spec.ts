import { describe } from '@jest/globals';
import { MemoryLockStore } from '../../lib';
import { DynamoLockStores } from '../../lib/store/dynamo-lock.stores';
import { memoryStoresOf } from '../support/custom-stores';
import { createLockTable, createTestClient, deleteTable, describeEachServer, uniqueTableName } from '../support/servers';
import { semaphoreStoreContract } from './semaphore-store.contract';

describeEachServer('DynamoSemaphoreStore (DynamoDB)', (server) => {
  semaphoreStoreContract(
    `DynamoSemaphoreStore on ${server.name}`,
    async () => {
      const client = createTestClient(server);
      const tableName = uniqueTableName('sem-contract');
      await createLockTable(client, tableName);
      return {
        store: new DynamoLockStores(client, { tableName, ttlDays: 2 }).semaphore,
        async close() {
          await deleteTable(client, tableName).catch(() => undefined);
          client.destroy();
        },
      };
    },
    // dynalite ignores ReturnValuesOnConditionCheckFailure: its failed writes carry no record.
    { returnsCurrent: server.name !== 'dynalite' },
  );
});

describe('MemorySemaphoreStore', () => {
  semaphoreStoreContract(
    'MemorySemaphoreStore',
    async () => ({ store: memoryStoresOf(new MemoryLockStore()).semaphore, close: async () => undefined }),
    { returnsCurrent: true },
  );
});

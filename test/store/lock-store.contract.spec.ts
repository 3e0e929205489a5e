import { describe } from '@jest/globals';
import { MemoryLockStore } from '../../lib';
import { DynamoLockStores } from '../../lib/store/dynamo-lock.stores';
import { memoryStoresOf } from '../support/custom-stores';
import { createLockTable, createTestClient, deleteTable, describeEachServer, uniqueTableName } from '../support/servers';
import { lockStoreContract } from './lock-store.contract';

describeEachServer('DynamoMutexStore (DynamoDB)', (server) => {
  lockStoreContract(
    `DynamoMutexStore on ${server.name}`,
    async () => {
      const client = createTestClient(server);
      const tableName = uniqueTableName('contract');
      await createLockTable(client, tableName);
      return {
        store: new DynamoLockStores(client, { tableName, ttlDays: 2 }).mutex,
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

describe('MemoryMutexStore', () => {
  lockStoreContract(
    'MemoryMutexStore',
    async () => ({ store: memoryStoresOf(new MemoryLockStore()).mutex, close: async () => undefined }),
    { returnsCurrent: true },
  );
});

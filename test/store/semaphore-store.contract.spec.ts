import { describe } from '@jest/globals';
import { MemoryLockStore } from '../../lib';
import { LockStore } from '../../lib/store/mutex/mutex.dynamo-store';
import { createLockTable, createTestClient, deleteTable, describeEachServer, uniqueTableName } from '../support/servers';
import { semaphoreStoreContract } from './semaphore-store.contract';

describeEachServer('SemaphoreStore (DynamoDB)', (server) => {
  semaphoreStoreContract(
    `SemaphoreStore on ${server.name}`,
    async () => {
      const client = createTestClient(server);
      const tableName = uniqueTableName('sem-contract');
      await createLockTable(client, tableName);
      return {
        store: new LockStore(client, { tableName, ttlDays: 2 }).semaphores,
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
  semaphoreStoreContract('MemorySemaphoreStore', async () => ({ store: new MemoryLockStore().semaphores, close: async () => undefined }), {
    returnsCurrent: true,
  });
});

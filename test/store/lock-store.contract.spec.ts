import { describe } from '@jest/globals';
import { MemoryLockStore } from '../../lib';
import { LockStore } from '../../lib/store/mutex/mutex.dynamo-store';
import { createLockTable, createTestClient, deleteTable, describeEachServer, uniqueTableName } from '../support/servers';
import { lockStoreContract } from './lock-store.contract';

describeEachServer('LockStore (DynamoDB)', (server) => {
  lockStoreContract(
    `LockStore on ${server.name}`,
    async () => {
      const client = createTestClient(server);
      const tableName = uniqueTableName('contract');
      await createLockTable(client, tableName);
      return {
        store: new LockStore(client, { tableName, ttlDays: 2 }),
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

describe('MemoryLockStore', () => {
  lockStoreContract('MemoryLockStore', async () => ({ store: new MemoryLockStore(), close: async () => undefined }), {
    returnsCurrent: true,
  });
});

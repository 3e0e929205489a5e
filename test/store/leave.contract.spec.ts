import { describe } from '@jest/globals';
import { MemoryLockStore } from '../../lib';
import { DynamoLockStores } from '../../lib/store/dynamo-lock.stores';
import { storesOf } from '../../lib/store/lock-stores';
import { createLockTable, createTestClient, deleteTable, describeEachServer, uniqueTableName } from '../support/servers';
import { leaveContract } from './leave.contract';

describeEachServer('leaving the line (DynamoDB)', (server) => {
  leaveContract(
    `DynamoMutexStore on ${server.name}`,
    async () => {
      const client = createTestClient(server);
      const tableName = uniqueTableName('leave');
      await createLockTable(client, tableName);
      return {
        store: new DynamoLockStores(client, { tableName, ttlDays: 2 }).mutex,
        async close() {
          await deleteTable(client, tableName).catch(() => undefined);
          client.destroy();
        },
      };
    },
    // dynalite ignores ReturnValuesOnConditionCheckFailure: its failed writes carry no item.
    { returnsCurrent: server.name !== 'dynalite' },
  );
});

describe('leaving the line (memory)', () => {
  leaveContract('MemoryMutexStore', async () => ({ store: storesOf(new MemoryLockStore())!.mutex, close: async () => undefined }), {
    returnsCurrent: true,
  });
});

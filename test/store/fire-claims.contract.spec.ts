import { describe } from '@jest/globals';
import { MemoryLockStore } from '../../lib';
import { DynamoLockStores } from '../../lib/store/dynamo-lock.stores';
import { storesOf } from '../../lib/store/lock-stores';
import { createLockTable, createTestClient, deleteTable, describeEachServer, uniqueTableName } from '../support/servers';
import { fireClaimsContract } from './fire-claims.contract';

describeEachServer('fire claims (DynamoDB)', (server) => {
  fireClaimsContract(
    `DynamoMutexStore on ${server.name}`,
    async () => {
      const client = createTestClient(server);
      const tableName = uniqueTableName('fires');
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

describe('fire claims (memory)', () => {
  fireClaimsContract('MemoryMutexStore', async () => ({ store: storesOf(new MemoryLockStore())!.mutex, close: async () => undefined }), {
    returnsCurrent: true,
  });
});

import { describe } from '@jest/globals';
import { MemoryLockStore } from '../../lib';
import { storesOf } from '../../lib/store/lock-stores';
import { describeEachServer } from '../support/servers';
import { readStoreContract } from './read-store.contract';
import { freshTableStore, serverTraits } from './support/contract-stores';

describeEachServer('readers on mutex items (DynamoDB)', (server) => {
  readStoreContract(
    `DynamoReadStore on ${server.name}`,
    async () => {
      const { store, close } = await freshTableStore(server, 'read', (stores) => stores);
      return { read: store.read, mutex: store.mutex, close };
    },
    serverTraits(server),
  );
});

describe('readers on mutex items (memory)', () => {
  readStoreContract(
    'MemoryReadStore',
    async () => {
      const stores = storesOf(new MemoryLockStore())!;
      return { read: stores.read!, mutex: stores.mutex, close: async () => undefined };
    },
    { returnsCurrent: true },
  );
});

import { describe } from '@jest/globals';
import { MemoryLockStore } from '../../lib';
import { memoryStoresOf } from '../support/custom-stores';
import { describeEachServer } from '../support/servers';
import { lockStoreContract } from './lock-store.contract';
import { freshTableStore, serverTraits } from './support/contract-stores';

describeEachServer('DynamoMutexStore (DynamoDB)', (server) => {
  lockStoreContract(
    `DynamoMutexStore on ${server.name}`,
    () => freshTableStore(server, 'contract', (stores) => stores.mutex),
    serverTraits(server),
  );
});

describe('MemoryMutexStore', () => {
  lockStoreContract(
    'MemoryMutexStore',
    async () => ({ store: memoryStoresOf(new MemoryLockStore()).mutex, close: async () => undefined }),
    { returnsCurrent: true },
  );
});

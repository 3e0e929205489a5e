import { describe } from '@jest/globals';
import { MemoryLockStore } from '../../lib';
import { memoryStoresOf } from '../support/custom-stores';
import { describeEachServer } from '../support/servers';
import { semaphoreStoreContract } from './semaphore-store.contract';
import { freshTableStore, serverTraits } from './support/contract-stores';

describeEachServer('DynamoSemaphoreStore (DynamoDB)', (server) => {
  semaphoreStoreContract(
    `DynamoSemaphoreStore on ${server.name}`,
    () => freshTableStore(server, 'sem-contract', (stores) => stores.semaphore),
    serverTraits(server),
  );
});

describe('MemorySemaphoreStore', () => {
  semaphoreStoreContract(
    'MemorySemaphoreStore',
    async () => ({ store: memoryStoresOf(new MemoryLockStore()).semaphore, close: async () => undefined }),
    { returnsCurrent: true },
  );
});

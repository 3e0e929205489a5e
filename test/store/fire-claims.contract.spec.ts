import { describe } from '@jest/globals';
import { MemoryLockStore } from '../../lib';
import { memoryStoresOf } from '../support/custom-stores';
import { describeEachServer } from '../support/servers';
import { fireClaimsContract } from './fire-claims.contract';
import { freshTableStore, serverTraits } from './support/contract-stores';

describeEachServer('fire claims (DynamoDB)', (server) => {
  fireClaimsContract(
    `DynamoMutexStore on ${server.name}`,
    () => freshTableStore(server, 'fires', (stores) => stores.mutex),
    serverTraits(server),
  );
});

describe('fire claims (memory)', () => {
  fireClaimsContract(
    'MemoryMutexStore',
    async () => ({ store: memoryStoresOf(new MemoryLockStore()).mutex, close: async () => undefined }),
    {
      returnsCurrent: true,
    },
  );
});

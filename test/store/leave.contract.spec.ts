import { describe } from '@jest/globals';
import { MemoryLockStore } from '../../lib';
import { memoryStoresOf } from '../support/custom-stores';
import { describeEachServer } from '../support/servers';
import { leaveContract } from './leave.contract';
import { freshTableStore, serverTraits } from './support/contract-stores';

describeEachServer('leaving the line (DynamoDB)', (server) => {
  leaveContract(
    `DynamoMutexStore on ${server.name}`,
    () => freshTableStore(server, 'leave', (stores) => stores.mutex),
    serverTraits(server),
  );
});

describe('leaving the line (memory)', () => {
  leaveContract('MemoryMutexStore', async () => ({ store: memoryStoresOf(new MemoryLockStore()).mutex, close: async () => undefined }), {
    returnsCurrent: true,
  });
});

/**
 * The store contracts (mutex, semaphore, fire claims) in tables shared with an app's items
 * (`SHARED_LAYOUTS`: `PK`/`SK` with lock items at `SK = LOCK`, and `pk` only), on every server:
 * every write and read through the configured key attributes, records with their stored keys as
 * in the library's own table, and the app's items byte for byte as they were put.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DynamoLockStores } from '../../lib/store/dynamo-lock.stores';
import { describeEachServer } from '../support/servers';
import { SHARED_LAYOUTS, SharedTable } from '../support/shared-table';
import { fireClaimsContract } from './fire-claims.contract';
import { lockStoreContract } from './lock-store.contract';
import { semaphoreStoreContract } from './semaphore-store.contract';

describeEachServer('store contracts in a table shared with the app', (server) => {
  // dynalite ignores ReturnValuesOnConditionCheckFailure: its failed writes carry no record.
  const traits = { returnsCurrent: server.name !== 'dynalite' };
  for (const layout of SHARED_LAYOUTS) {
    describe(layout.label, () => {
      const table = new SharedTable(server, layout);
      let stores: DynamoLockStores;
      beforeAll(async () => {
        await table.create();
        // Around keys the contracts use as prefixes, and one a lock could have but none uses.
        await table.putAppItems(['contract', 'sem-contract', 'sem-scan', 'fires'], 'contract/none');
        stores = new DynamoLockStores(table.client, { tableName: table.tableName, ttlDays: 2, keys: layout.keys });
      });
      afterAll(() => table.close());

      const kept = { close: async () => undefined };
      lockStoreContract(`DynamoMutexStore, ${layout.label}`, async () => ({ store: stores.mutex, ...kept }), traits);
      semaphoreStoreContract(`DynamoSemaphoreStore, ${layout.label}`, async () => ({ store: stores.semaphore, ...kept }), traits);
      fireClaimsContract(`DynamoMutexStore's fire claims, ${layout.label}`, async () => ({ store: stores.mutex, ...kept }), traits);

      it("leaves the app's items as they were put", async () => {
        await table.expectAppItemsUntouched();
        const locks = await table.lockItems();
        expect(locks.length).toBeGreaterThan(50);
        if (layout.keys.sortKey) {
          for (const item of locks) expect(item[layout.keys.sortKey.name]).toEqual({ S: layout.keys.sortKey.value });
        }
      });
    });
  }
});

/**
 * What the store contract specs share: a fresh DynamoDB table per contract (its stores, and how to
 * drop it), the traits of each server, and the helpers every contract writes with.
 */
import { randomBytes } from 'node:crypto';
import { DynamoLockStores } from '../../../lib/store/dynamo-lock.stores';
import type { WriteResult } from '../../../lib/store/mutex/mutex-store.protocol';
import type { LockRecord } from '../../../lib/store/mutex/mutex.record';
import { createLockTable, createTestClient, deleteTable, type TestServer, uniqueTableName } from '../../support/servers';

/** What differs between stores without being a semantic difference. */
export interface ContractTraits {
  /**
   * Whether a failed conditional write reports the record that blocked it (`current`), as
   * DynamoDB does with `ReturnValuesOnConditionCheckFailure: ALL_OLD`. dynalite ignores that
   * parameter; its failures carry `current: undefined`. Where it is given, it must be exact.
   */
  returnsCurrent: boolean;
}

/** The traits of a server: dynalite ignores ReturnValuesOnConditionCheckFailure, so its failed writes carry no record. */
export function serverTraits(server: TestServer): ContractTraits {
  return { returnsCurrent: server.name !== 'dynalite' };
}

/** A store taken from the stores of a fresh table on `server` (named after `label`), and how to drop the table. */
export async function freshTableStore<S>(
  server: TestServer,
  label: string,
  pick: (stores: DynamoLockStores) => S,
): Promise<{ store: S; close(): Promise<void> }> {
  const client = createTestClient(server);
  const tableName = uniqueTableName(label);
  await createLockTable(client, tableName);
  return {
    store: pick(new DynamoLockStores(client, { tableName, ttlDays: 2 })),
    async close() {
      await deleteTable(client, tableName).catch(() => undefined);
      client.destroy();
    },
  };
}

/** A fresh random token (an owner token, or a ticket's). */
export const tok = (): string => randomBytes(16).toString('hex');

/** The record a write answered with; throws, naming the item that blocked it, when the write failed. */
export function okRecord(result: WriteResult): LockRecord {
  if (!result.ok) throw new Error(`expected the write to succeed; it failed against ${JSON.stringify(result.current)}`);
  return result.record;
}

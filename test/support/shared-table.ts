/**
 * A table shared by locks and an app's own items (single-table design), for the specs of the
 * `partitionKey` and `sortKey` options: the layouts tested, the app's items put next to the locks
 * (some with lock-like attributes, some under the locks' own partition keys), and the check that
 * they are byte for byte what was put.
 */
import { type AttributeValue, type DynamoDBClient, GetItemCommand, PutItemCommand, ScanCommand } from '@aws-sdk/client-dynamodb';
import { expect } from '@jest/globals';
import type { LockTableKeys } from '../../lib';
import { createLockTable, createTestClient, deleteTable, type TestServer, uniqueTableName } from './servers';

/** One way of sharing a table: its key attributes and the key prefix of the locks in it. */
export interface SharedLayout {
  /** For test names. */
  readonly label: string;
  readonly keys: LockTableKeys;
  readonly keyPrefix: string;
}

/** The layouts every shared-table spec runs: a `PK`/`SK` table (locks at `SK = LOCK`), and a `pk`-only table (locks under `LOCK#`). */
export const SHARED_LAYOUTS: readonly SharedLayout[] = [
  { label: 'PK/SK, SK = LOCK', keys: { partitionKey: 'PK', sortKey: { name: 'SK', value: 'LOCK' } }, keyPrefix: '' },
  { label: 'pk only, keyPrefix LOCK#', keys: { partitionKey: 'pk' }, keyPrefix: 'LOCK#' },
];

/**
 * Attributes with lock names an app's item may happen to have (`token`, `owner`...): a scan that
 * filters on them alone (held: a token, or `head` < `tail`; a semaphore: `holderCount` > 0) would
 * list the item. Not the whole shape of a lock item (`rvn`, `fence`, `limit`, `holders`).
 */
const LOCK_NAMES: Record<string, AttributeValue> = {
  token: { S: 'app-token' },
  owner: { S: 'app-owner' },
  head: { N: '1' },
  tail: { N: '3' },
  holderCount: { N: '2' },
  data: { S: '{"app":true}' },
  ttl: { N: '1' },
  key: { S: 'looks-like-a-lock-key' },
};

/** Every attribute of a held lock or semaphore: only the key (the sort key value, the prefix) tells such an item from a lock. */
const LOCK_SHAPE: Record<string, AttributeValue> = {
  ...LOCK_NAMES,
  rvn: { S: 'app-version' },
  fence: { N: '7' },
  limit: { N: '3' },
  holders: { M: { t: { M: { o: { S: 'app' } } } } },
};

/** A table on one server laid out as `layout`, with the app's items in it. */
export class SharedTable {
  readonly tableName = uniqueTableName('shared');
  readonly client: DynamoDBClient;
  /** The app's items as put, to compare with at the end. */
  private readonly appItems: Record<string, AttributeValue>[] = [];

  constructor(
    readonly server: TestServer,
    readonly layout: SharedLayout,
  ) {
    this.client = createTestClient(server);
  }

  get keys(): LockTableKeys {
    return this.layout.keys;
  }

  /** Creates the table with the layout's keys. */
  async create(): Promise<this> {
    await createLockTable(this.client, this.tableName, { partitionKey: this.keys.partitionKey, sortKey: this.keys.sortKey?.name });
    return this;
  }

  /**
   * Puts the app's items around the locks of `lockKeys` (keys as the locks name them, without the
   * prefix): in a `PK`/`SK` table, items under each lock's partition key with other sort keys, and
   * one at `SK = LOCK` under a key no lock uses; in a `pk`-only table, items at each lock's key
   * without the prefix, and one under the prefix that no lock uses. Each has lock-like attributes.
   */
  async putAppItems(lockKeys: readonly string[], unusedLockKey: string): Promise<void> {
    const { partitionKey, sortKey } = this.keys;
    const items: Record<string, AttributeValue>[] = [];
    for (const key of lockKeys) {
      if (sortKey) {
        items.push({ [partitionKey]: { S: this.layout.keyPrefix + key }, [sortKey.name]: { S: 'PROFILE' }, ...LOCK_SHAPE });
        items.push({ [partitionKey]: { S: this.layout.keyPrefix + key }, [sortKey.name]: { S: 'ORDER#0001' }, total: { N: '12' } });
        items.push({
          [partitionKey]: { S: `${this.layout.keyPrefix}${key}\u001fsemaphore` },
          [sortKey.name]: { S: 'META' },
          ...LOCK_SHAPE,
        });
      } else {
        items.push({ [partitionKey]: { S: key }, ...LOCK_SHAPE });
        items.push({ [partitionKey]: { S: `${key}\u001fsemaphore` }, ...LOCK_SHAPE });
      }
    }
    // At a key a lock could have (the prefix, the sort key value), but no lock uses: only the item's shape tells.
    const unused: Record<string, AttributeValue> = { [partitionKey]: { S: this.layout.keyPrefix + unusedLockKey }, ...LOCK_NAMES };
    if (sortKey) unused[sortKey.name] = { S: sortKey.value };
    items.push(unused, this.item('USER#1', 'USER#1', { name: { S: 'Ada' } }));
    for (const item of items) {
      await this.client.send(new PutItemCommand({ TableName: this.tableName, Item: item }));
      this.appItems.push(item);
    }
  }

  /** Every app item put so far. */
  get appItemCount(): number {
    return this.appItems.length;
  }

  /** Expects every app item to be exactly as put (a strongly consistent read of each). */
  async expectAppItemsUntouched(): Promise<void> {
    expect(this.appItems.length).toBeGreaterThan(0);
    for (const item of this.appItems) {
      const key = this.keyOf(item);
      const output = await this.client.send(new GetItemCommand({ TableName: this.tableName, Key: key, ConsistentRead: true }));
      expect(output.Item).toEqual(item);
    }
  }

  /** Every item of the table that is not one of the app's: the lock items. */
  async lockItems(): Promise<Record<string, AttributeValue>[]> {
    const app = new Set(this.appItems.map((item) => JSON.stringify(this.keyOf(item))));
    const all: Record<string, AttributeValue>[] = [];
    let start: Record<string, AttributeValue> | undefined;
    do {
      const page = await this.client.send(new ScanCommand({ TableName: this.tableName, ConsistentRead: true, ExclusiveStartKey: start }));
      all.push(...(page.Items ?? []));
      start = page.LastEvaluatedKey;
    } while (start);
    return all.filter((item) => !app.has(JSON.stringify(this.keyOf(item))));
  }

  /** The raw lock item of stored key `storedKey` (prefix included), read strongly consistent. */
  async readLockItem(storedKey: string): Promise<Record<string, AttributeValue> | undefined> {
    const Key: Record<string, AttributeValue> = { [this.keys.partitionKey]: { S: storedKey } };
    if (this.keys.sortKey) Key[this.keys.sortKey.name] = { S: this.keys.sortKey.value };
    const output = await this.client.send(new GetItemCommand({ TableName: this.tableName, Key, ConsistentRead: true }));
    return output.Item;
  }

  /** An app item with partition key `pk` and, in a table with a sort key, sort key `sk`. */
  item(pk: string, sk: string, attributes: Record<string, AttributeValue>): Record<string, AttributeValue> {
    const item: Record<string, AttributeValue> = { [this.keys.partitionKey]: { S: pk }, ...attributes };
    if (this.keys.sortKey) item[this.keys.sortKey.name] = { S: sk };
    return item;
  }

  /** Puts one more app item (checked at the end like the others). */
  async putAppItem(item: Record<string, AttributeValue>): Promise<void> {
    await this.client.send(new PutItemCommand({ TableName: this.tableName, Item: item }));
    this.appItems.push(item);
  }

  /** Deletes the table and destroys the client. */
  async close(): Promise<void> {
    await deleteTable(this.client, this.tableName).catch(() => undefined);
    this.client.destroy();
  }

  private keyOf(item: Record<string, AttributeValue>): Record<string, AttributeValue> {
    const key: Record<string, AttributeValue> = { [this.keys.partitionKey]: item[this.keys.partitionKey] };
    if (this.keys.sortKey) key[this.keys.sortKey.name] = item[this.keys.sortKey.name];
    return key;
  }
}

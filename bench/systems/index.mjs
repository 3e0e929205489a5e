/**
 * The systems under test, by id, and what they share: each gets its own client aimed at
 * the counting proxy and its own table (created with the key schema it expects).
 */
import { CreateTableCommand, DescribeTableCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * The systems under test: their adapter file (loaded on demand: a worker loads only the one it
 * runs, which keeps process start-up short) and the partition key of their table.
 */
export const SYSTEMS = {
  ours: { file: './ours.mjs', keyAttribute: 'key' },
  dlc: { file: './dynamodb-lock-client.mjs', keyAttribute: 'id' },
  raw: { file: './raw-polling.mjs', keyAttribute: 'pk' },
  baseline: { file: './baseline.mjs', keyAttribute: 'key' },
};
/** The lock implementations compared in every scenario, ours first. */
export const LOCKS = ['ours', 'dlc', 'raw'];

/**
 * Opens system `id`: `{ acquire(key, { signal }) → { release() }, close(), warnings }`.
 * Options: `{ client, table, owner, leaseMs, heartbeatMs }`.
 */
export async function openSystem(id, options) {
  const adapter = await import(SYSTEMS[id].file);
  return adapter.open({ ...options, keyAttribute: SYSTEMS[id].keyAttribute });
}

/** Creates an on-demand table for system `id` and waits until it is ACTIVE. */
export async function createTable(client, id, table) {
  const attr = SYSTEMS[id].keyAttribute;
  await client.send(
    new CreateTableCommand({
      TableName: table,
      AttributeDefinitions: [{ AttributeName: attr, AttributeType: 'S' }],
      KeySchema: [{ AttributeName: attr, KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
  for (;;) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: table }));
    if (Table?.TableStatus === 'ACTIVE') return;
    await sleep(50);
  }
}

/**
 * RTT for the throughput limits: the median latency of conditional UpdateItems of a minimal
 * item through `client`, measured in the same run and conditions. They are sent the way a
 * lock sends its writes, one after each pause of `gapMs` (a lock's write follows a hold):
 * on this kind of host a write after 20 ms idle takes ~1.5x one sent back-to-back (processes
 * go to sleep and wake again), and the limit should not count that against the lock.
 */
export async function measureRtt(client, table, { samples = 30, gapMs = 20 } = {}) {
  const times = [];
  for (let i = 0; i < samples + 10; i++) {
    const t = performance.now();
    await client.send(
      new UpdateItemCommand({
        TableName: table,
        Key: { key: { S: `rtt-${process.pid}` } },
        UpdateExpression: 'SET #v = :v',
        ConditionExpression: 'attribute_not_exists(#o) OR #o = :v',
        ExpressionAttributeNames: { '#v': 'v', '#o': 'owner' },
        ExpressionAttributeValues: { ':v': { S: 'x' } },
      }),
    );
    if (i >= 10) times.push(performance.now() - t); // the first ones open connections and warm the JIT
    await sleep(gapMs);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

/**
 * Scenario 11: the cost of fenced writes. One holder writes small items of a data table, round-robin
 * in one process so drift hits all alike: a plain `PutItem` (the SDK, no lock involved), a
 * `lock.fencedWrite()` Put and Update (the token stamped, the fence condition joined), and a
 * `lock.transact()` of one item (the item and a check of the lock item in one `TransactWriteItems`;
 * servers without transactions, like dynalite, refuse it: "not supported"). Every request asks for
 * `ReturnConsumedCapacity: TOTAL`; per kind: capacity units per write (as the server reports them)
 * and latency, with ratios to the plain Put.
 */
import { CreateTableCommand, DescribeTableCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { setTimeout as sleep } from 'node:timers/promises';
import { LockConfigurationError, LockManager } from '../../dist/index.js';
import { makeClient } from '../support/client.mjs';
import { median, round, summarize } from '../support/stats.mjs';
import { createTable } from '../systems/index.mjs';

export const KINDS = ['plainPut', 'fencedPut', 'fencedUpdate', 'transact'];

async function createDataTable(client, table) {
  await client.send(
    new CreateTableCommand({
      TableName: table,
      AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
  for (;;) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: table }));
    if (Table?.TableStatus === 'ACTIVE') return;
    await sleep(50);
  }
}

const units = (capacity) => {
  const list = Array.isArray(capacity) ? capacity : capacity ? [capacity] : [];
  return list.length === 0 ? null : list.reduce((sum, c) => sum + (c.CapacityUnits ?? 0), 0);
};

export async function run(ctx, { writes }) {
  const lockTable = ctx.table('s11-locks');
  const dataTable = ctx.table('s11-data');
  await createTable(ctx.admin, 'ours', lockTable);
  await createDataTable(ctx.admin, dataTable);
  const client = makeClient(ctx.proxy.endpoint);
  const silent = { log() {}, warn() {}, error() {}, debug() {}, verbose() {} };
  const manager = new LockManager({ tableName: lockTable, client, verifyTable: false, ownerName: 's11', logger: silent });
  try {
    const lock = await manager.acquire('s11-fenced', { leaseDuration: '5m' });
    const value = (i) => ({ S: `value ${i}` });
    const send = {
      plainPut: async (i) =>
        units(
          (
            await client.send(
              new PutItemCommand({ TableName: dataTable, Item: { id: { S: 'plain' }, v: value(i) }, ReturnConsumedCapacity: 'TOTAL' }),
            )
          ).ConsumedCapacity,
        ),
      fencedPut: async (i) =>
        units(
          (
            await lock.fencedWrite(
              { Put: { TableName: dataTable, Item: { id: { S: 'fenced-put' }, v: value(i) } } },
              { returnConsumedCapacity: 'TOTAL' },
            )
          ).consumedCapacity,
        ),
      fencedUpdate: async (i) =>
        units(
          (
            await lock.fencedWrite(
              {
                Update: {
                  TableName: dataTable,
                  Key: { id: { S: 'fenced-update' } },
                  UpdateExpression: 'SET v = :v',
                  ExpressionAttributeValues: { ':v': value(i) },
                },
              },
              { returnConsumedCapacity: 'TOTAL' },
            )
          ).consumedCapacity,
        ),
      transact: async (i) =>
        units(
          (
            await lock.transact([{ Put: { TableName: dataTable, Item: { id: { S: 'transact' }, v: value(i) } } }], {
              returnConsumedCapacity: 'TOTAL',
            })
          ).consumedCapacity,
        ),
    };
    const supported = Object.fromEntries(KINDS.map((kind) => [kind, true]));
    const refusal = {};
    // Warm-up (JIT, connection), and whether the server runs transactions.
    for (const kind of KINDS) {
      for (let i = 0; i < 5; i++) {
        try {
          await send[kind](i);
        } catch (error) {
          if (kind !== 'transact' || !(error instanceof LockConfigurationError)) throw error;
          supported[kind] = false;
          refusal[kind] = error.message.slice(0, 200);
          break;
        }
      }
    }
    const latencies = Object.fromEntries(KINDS.map((kind) => [kind, []]));
    const capacity = Object.fromEntries(KINDS.map((kind) => [kind, []]));
    for (let i = 0; i < writes; i++) {
      for (const kind of KINDS) {
        if (!supported[kind]) continue;
        const t = performance.now();
        const cu = await send[kind](i);
        latencies[kind].push(performance.now() - t);
        if (cu !== null) capacity[kind].push(cu);
      }
    }
    await lock.release();
    const base = { lat: summarize(latencies.plainPut), cu: capacity.plainPut.length ? median(capacity.plainPut) : null };
    const out = { writes };
    for (const kind of KINDS) {
      if (!supported[kind]) {
        out[kind] = { supported: false, refusal: refusal[kind] };
        continue;
      }
      const lat = summarize(latencies[kind]);
      const cu = capacity[kind].length ? median(capacity[kind]) : null;
      out[kind] = {
        supported: true,
        capacityUnits: cu,
        capacityRatio: cu !== null && base.cu ? round(cu / base.cu, 2) : null,
        latencyMs: lat,
        p50Ratio: round(lat.p50 / base.lat.p50, 2),
      };
    }
    return out;
  } finally {
    await manager.close();
    client.destroy();
  }
}

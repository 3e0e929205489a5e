/**
 * The stores' health answer (`LockStores.health`), which the Terminus indicator turns into
 * its report (test/health): the memory store is always up; the DynamoDB store reports its table
 * from one `DescribeTable`, or why it could not, and gives up as soon as the signal aborts.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { MemoryLockStore } from '../../lib';
import { DynamoLockStores } from '../../lib/store/dynamo-lock.stores';
import { memoryStoresOf } from '../support/custom-stores';
import { startHungServer } from '../support/hung-server';
import { createLockTable, createTestClient, deleteTable, describeEachServer, uniqueTableName } from '../support/servers';

const never = new AbortController().signal;

/** A client for an endpoint that is not a real server: dummy credentials and region, no retries. */
const offlineClient = (endpoint: string) =>
  new DynamoDBClient({ endpoint, region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' }, maxAttempts: 1 });

describe('MemoryLockStore.health', () => {
  it('is { store: "memory" }, contacting nothing', async () => {
    await expect(memoryStoresOf(new MemoryLockStore()).health(never)).resolves.toEqual({ store: 'memory' });
  });
});

describeEachServer('DynamoLockStores.health', (server) => {
  const client = createTestClient(server);
  const tableName = uniqueTableName('health');
  beforeAll(() => createLockTable(client, tableName));
  afterAll(async () => {
    await deleteTable(client, tableName).catch(() => undefined);
    client.destroy();
  });

  it('reports the table, its status and the latency', async () => {
    const health = await new DynamoLockStores(client, { tableName, ttlDays: 2 }).health(never);
    expect(health).toEqual({ store: 'dynamodb', table: tableName, tableStatus: 'ACTIVE', latencyMs: expect.any(Number) });
  });

  it('reports a missing table as "missing", without a status', async () => {
    const missing = uniqueTableName('missing');
    const health = await new DynamoLockStores(client, { tableName: missing, ttlDays: 2 }).health(never);
    expect(health).toEqual({
      store: 'dynamodb',
      table: missing,
      latencyMs: expect.any(Number),
      failure: 'missing',
      // Where it was looked for, for the health check's message.
      endpoint: expect.objectContaining({ region: expect.any(String), url: expect.any(String) }),
    });
  });
});

describe('DynamoLockStores.health without a server', () => {
  it('reports an endpoint that refuses the request as "failed", with the error', async () => {
    const hung = await startHungServer();
    const endpoint = hung.endpoint;
    await hung.close(); // nothing listens there now
    const offline = offlineClient(endpoint);
    const health = await new DynamoLockStores(offline, { tableName: 'locks', ttlDays: 2 }).health(never);
    offline.destroy();
    expect(health).toMatchObject({ store: 'dynamodb', table: 'locks', failure: 'failed', error: expect.anything() });
    expect(health.tableStatus).toBeUndefined();
  });

  it('gives up as soon as the signal aborts, on an endpoint that never answers, as "aborted"', async () => {
    const hung = await startHungServer();
    const offline = offlineClient(hung.endpoint);
    const controller = new AbortController();
    const stores = new DynamoLockStores(offline, { tableName: 'locks', ttlDays: 2 });
    // The abort is timed from the call itself: set-up time on a busy machine does not count.
    setTimeout(() => controller.abort(), 200);
    const health = await stores.health(controller.signal);
    offline.destroy();
    await hung.close();
    expect(health).toEqual({ store: 'dynamodb', table: 'locks', latencyMs: expect.any(Number), failure: 'aborted' });
    expect(health.latencyMs).toBeGreaterThanOrEqual(190);
    expect(health.latencyMs).toBeLessThan(1_000);
  });
});

import {
  ConditionalCheckFailedException,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  type PutItemCommandOutput,
} from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { Inject, Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { type FaultInjector, type FaultKind, faultError, injectFaults } from './support/fault-injection';
import { type RequestCounter, countRequests } from './support/request-counter';
import { createLockTable, createTestClient, deleteTable, describeEachServer, testServers, uniqueTableName } from './support/servers';

/** A conditional create: succeeds only if no item has this key yet. */
const putIfAbsent = (tableName: string, key: string, owner: string): PutItemCommand =>
  new PutItemCommand({
    TableName: tableName,
    Item: { key: { S: key }, owner: { S: owner } },
    ConditionExpression: 'attribute_not_exists(#key)',
    ExpressionAttributeNames: { '#key': 'key' },
  });

/** Resolves to the rejection reason of `promise`, failing if it resolves. */
async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    (value) => {
      throw new Error(`expected a rejection, got ${JSON.stringify(value)}`);
    },
    (error: unknown) => error,
  );
}

describe('test servers', () => {
  it('are published by the global setup', () => {
    const servers = testServers();
    expect(servers.length).toBeGreaterThan(0);
    for (const server of servers) expect(server.endpoint).toMatch(/^https?:\/\/[^/]+/);
  });
});

describe('TypeScript compilation', () => {
  @Injectable()
  class Clock {
    now(): number {
      return 42;
    }
  }

  @Injectable()
  class Service {
    @Inject(Clock) readonly viaProperty!: Clock;
    constructor(readonly clock: Clock) {}
  }

  it('emits decorator metadata that NestJS DI (ESM) understands', async () => {
    const moduleRef = await Test.createTestingModule({ providers: [Clock, Service] }).compile();
    const service = moduleRef.get(Service);
    expect(service.clock).toBeInstanceOf(Clock);
    expect(service.viaProperty).toBe(service.clock);
    expect(service.constructor.name).toBe('Service');
    await moduleRef.close();
  });

  it('supports await using (explicit resource management)', async () => {
    const events: string[] = [];
    {
      await using _resource = {
        [Symbol.asyncDispose]: async () => {
          events.push('disposed');
        },
      };
      events.push('used');
    }
    expect(events).toEqual(['used', 'disposed']);
  });
});

describe('fault errors', () => {
  it.each<[FaultKind, string]>([
    ['lost-response', 'TimeoutError'],
    ['network-error', 'Error'],
    ['throttling', 'ThrottlingException'],
    ['throughput-exceeded', 'ProvisionedThroughputExceededException'],
    ['server-error', 'InternalServerError'],
  ])('%s is an Error named %s', (kind, name) => {
    const error = faultError(kind, 'PutItemCommand');
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe(name);
    expect(error.message).toContain(kind);
  });
});

describeEachServer('harness', (server) => {
  const tableName = uniqueTableName('harness');
  let client: DynamoDBClient;
  let commands: RequestCounter;
  let attempts: RequestCounter;
  let faults: FaultInjector;

  beforeAll(async () => {
    client = createTestClient(server);
    await createLockTable(client, tableName);
    faults = injectFaults(client);
    commands = countRequests(client);
    attempts = countRequests(client, { level: 'attempt' });
  });

  afterAll(async () => {
    await deleteTable(client, tableName);
    client.destroy();
  });

  beforeEach(() => {
    commands.reset();
    attempts.reset();
    faults.clear();
  });

  it('counts a conditional put that succeeds, then fails its condition', async () => {
    const first = await client.send(putIfAbsent(tableName, 'plain', 'a'));
    expect(first.$metadata.attempts).toBe(1);

    const error = await rejectionOf(client.send(putIfAbsent(tableName, 'plain', 'b')));
    expect(error).toBeInstanceOf(ConditionalCheckFailedException);
    expect((error as ConditionalCheckFailedException).$metadata.attempts).toBe(1); // never retried

    const expected = { PutItemCommand: { ok: 1, ConditionalCheckFailedException: 1 } };
    expect(commands.snapshot()).toEqual(expected);
    expect(attempts.snapshot()).toEqual(expected);
    expect(commands.count('PutItem')).toBe(2);
    expect(commands.total()).toBe(2);
  });

  it('applies a write whose response is lost, and the SDK retry then fails its condition', async () => {
    faults.failNext('PutItem', { kind: 'lost-response' });

    const error = await rejectionOf(client.send(putIfAbsent(tableName, 'lost', 'a')));

    expect(error).toBeInstanceOf(ConditionalCheckFailedException);
    expect((error as ConditionalCheckFailedException).$metadata.attempts).toBe(2);
    expect(faults.injected).toEqual([{ command: 'PutItemCommand', kind: 'lost-response', reachedServer: true }]);
    expect(faults.pending()).toBe(0);
    // Both attempts reached the server: the first was applied, the retry was rejected.
    expect(attempts.snapshot()).toEqual({ PutItemCommand: { ok: 1, ConditionalCheckFailedException: 1 } });
    expect(commands.snapshot()).toEqual({ PutItemCommand: { ConditionalCheckFailedException: 1 } });

    const { Item } = await client.send(new GetItemCommand({ TableName: tableName, Key: { key: { S: 'lost' } } }));
    expect(Item?.owner).toEqual({ S: 'a' });
  });

  it.each<FaultKind>(['network-error', 'throttling', 'throughput-exceeded', 'server-error'])(
    'retries a %s that happened before sending',
    async (kind) => {
      faults.failNext('PutItem', { kind });

      const output: PutItemCommandOutput = await client.send(putIfAbsent(tableName, `retry-${kind}`, 'a'));

      expect(output.$metadata.attempts).toBe(2);
      expect(faults.injected).toEqual([{ command: 'PutItemCommand', kind, reachedServer: false }]);
      expect(attempts.snapshot()).toEqual({ PutItemCommand: { ok: 1 } });
      expect(commands.snapshot()).toEqual({ PutItemCommand: { ok: 1 } });
    },
  );

  it('gives up after maxAttempts and surfaces the injected error', async () => {
    const maxAttempts = await client.config.maxAttempts(); // 4 for DynamoDB in this SDK
    expect(maxAttempts).toBeGreaterThan(1);
    faults.failNext('*', { kind: 'server-error', times: maxAttempts });

    const error = await rejectionOf(client.send(putIfAbsent(tableName, 'exhausted', 'a')));

    expect(error).toMatchObject({ name: 'InternalServerError', $metadata: { attempts: maxAttempts } });
    expect(faults.pending()).toBe(0);
    expect(attempts.total()).toBe(0); // nothing reached the server
    expect(commands.snapshot()).toEqual({ PutItemCommand: { InternalServerError: 1 } });
  });
});

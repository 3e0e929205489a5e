// @ts-check
/** dynalite, an in-memory DynamoDB written in JavaScript: in this process or in a child process of its own. */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import dynalite from 'dynalite';
import { killOnExit } from './exit-guard.mjs';
import { packageVersion } from './package-version.mjs';

/** @typedef {import('./dynamodb-servers.mjs').RunningServer} RunningServer */

/**
 * Starts an in-memory dynalite server on a free 127.0.0.1 port: in this process (quick; the tests),
 * or with `childProcess` in a process of its own (the benchmarks and the chaos suite, whose event
 * loops must measure the lock, not the server). A child is killed when this process exits.
 * @param {{ childProcess?: boolean }} [options]
 * @returns {Promise<RunningServer>}
 */
export async function startDynalite({ childProcess = false } = {}) {
  const { endpoint, stop } = childProcess ? await startDynaliteChild() : await startDynaliteHere();
  return { name: 'dynalite', version: packageVersion('dynalite'), endpoint, stop };
}

/**
 * dynalite in this process; tables are ACTIVE at once.
 * @returns {Promise<{ endpoint: string, stop(): Promise<void> }>}
 */
export async function startDynaliteHere() {
  const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve(undefined);
    });
  });
  const address = server.address();
  if (address === null || typeof address !== 'object') throw new Error('dynalite: could not read its port');
  /** @type {Promise<void> | undefined} */
  let stopped;
  return {
    endpoint: `http://127.0.0.1:${address.port}`,
    stop() {
      stopped ??= new Promise((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        // Keep-alive sockets of SDK clients would otherwise delay close().
        server.closeAllConnections();
      });
      return stopped;
    },
  };
}

/** @returns {Promise<{ endpoint: string, stop(): Promise<void> }>} */
async function startDynaliteChild() {
  const child = fork(fileURLToPath(new URL('./dynalite-process.mjs', import.meta.url)), [], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const forget = killOnExit(() => child.kill('SIGKILL'));
  /** @type {string} */
  const endpoint = await new Promise((resolve, reject) => {
    child.once('message', (message) => resolve(/** @type {{ endpoint: string }} */ (message).endpoint));
    child.once('exit', (code) => reject(new Error(`dynalite exited with ${code} during start-up`)));
  });
  return {
    endpoint,
    async stop() {
      forget();
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGKILL');
        await exited;
      }
    },
  };
}

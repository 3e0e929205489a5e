/**
 * What every worker script of the multi-process specs starts with: its configuration (one JSON
 * argument: `{ endpoint, table, owner, ... }`), `send(type, fields)` to report to the spec over IPC,
 * and a `LockManager` of the built library on that table, logging errors as `log` reports.
 */
import { LockManager } from '../../../dist/index.js';

export const config = JSON.parse(process.argv[2] ?? '{}');

/** Reports `{ type, owner, at, ...fields }` to the spec; resolves once sent (at once when disconnected). */
export const send = (type, fields = {}) =>
  new Promise((resolve) => {
    if (!process.connected) return resolve();
    process.send({ type, owner: config.owner, at: performance.now(), ...fields }, () => resolve());
  });

const quiet = { log: () => undefined, warn: () => undefined, error: (m) => void send('log', { message: String(m) }) };

export const manager = new LockManager({
  tableName: config.table,
  ownerName: config.owner,
  verifyTable: false,
  maxPollInterval: 250,
  logger: quiet,
  clientConfig: { endpoint: config.endpoint, region: 'us-east-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' } },
});

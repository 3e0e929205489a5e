/**
 * Holder A of `stale-holder.e2e-spec.ts`, in its own OS process, using the built library (`dist/`).
 * It takes the lock, and on `{ cmd: 'write' }` checks its signal and starts its write; the write is
 * held at the client (`about-to-write` is reported) until `{ cmd: 'go' }`, so the parent can freeze
 * the process (SIGSTOP) exactly between the check and the write, as a GC pause would.
 * Modes: `transact`, `fencedWrite`, `plain` (a PutItem without fence). Reports over IPC.
 */
import { DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { LockManager } from '../../dist/index.js';

const config = JSON.parse(process.argv[2] ?? '{}');
const send = (type, fields = {}) => new Promise((resolve) => process.send({ type, ...fields }, () => resolve()));

let armed = false;
let go;
const released = new Promise((resolve) => (go = resolve));
process.on('message', (message) => {
  if (message?.cmd === 'write') void write();
  if (message?.cmd === 'go') go();
});

const client = new DynamoDBClient({
  endpoint: config.endpoint,
  region: 'us-east-1',
  credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
});
// Holds the data write between the holder's check and the request, once.
client.middlewareStack.add(
  (next, context) => async (args) => {
    const input = args.input ?? {};
    const toData = input.TableName === config.dataTable || Array.isArray(input.TransactItems);
    if (armed && toData) {
      armed = false;
      await send('about-to-write', { command: context.commandName });
      await released;
    }
    return next(args);
  },
  { step: 'initialize', name: 'holdDataWrite' },
);

// A long request limit: the request must reach the server after the pause, not time out during it.
const manager = new LockManager({
  tableName: config.table,
  client,
  verifyTable: false,
  ownerName: 'A',
  requestTimeout: '60s',
  logger: { log() {}, warn() {}, error() {} },
});
let lock;

async function write() {
  try {
    // The documented check right before a protected write: it passes, then the process freezes.
    lock.signal.throwIfAborted();
    armed = true;
    const item = { id: { S: config.id }, value: { S: 'by A' } };
    if (config.mode === 'transact') await lock.transact([{ Put: { TableName: config.dataTable, Item: item } }]);
    else if (config.mode === 'fencedWrite') await lock.fencedWrite({ Put: { TableName: config.dataTable, Item: item } });
    else await client.send(new PutItemCommand({ TableName: config.dataTable, Item: { ...item, token: { N: String(lock.fencingToken) } } }));
    await send('result', { ok: true });
  } catch (error) {
    await send('result', { ok: false, name: error?.name, reason: error?.reason, newerToken: error?.newerToken, message: error?.message });
  }
  await manager.close().catch(() => undefined);
  process.exit(0);
}

lock = await manager.acquire(config.key, { leaseDuration: config.leaseMs });
await send('acquired', { token: lock.fencingToken });

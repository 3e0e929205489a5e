/**
 * The npm package dynamodb-lock-client (FailOpen: leases with heartbeats).
 *
 * It expects an aws-sdk v2 DocumentClient (callback style, errors with `.code`). The v3
 * `DynamoDBDocument` can be called the same way, but its errors carry the exception name in
 * `.name` only, so the adapter below copies it to `.code`, which the package branches on.
 *
 * How it waits (index.js 0.7.3): a strongly consistent GetItem; if the item exists it sleeps
 * the holder's full `leaseDurationMs` (1 ms when the holder released), then a conditional
 * PutItem on the guid it saw, which a heartbeat or another acquirer has changed meanwhile;
 * on failure it starts over with a read. `retryCount` bounds the rounds: set very high here
 * so it waits like the others.
 */
import { createRequire } from 'node:module';
import { DynamoDBDocument } from '@aws-sdk/lib-dynamodb';

const { FailOpen } = createRequire(import.meta.url)('dynamodb-lock-client');

export function open({ client, table, owner, leaseMs, heartbeatMs, keyAttribute }) {
  const doc = DynamoDBDocument.from(client);
  let closed = false;
  const call = (send, callback) => {
    // After close() every request fails, which ends a wait that cannot be cancelled otherwise.
    if (closed) return callback(Object.assign(new Error('lock client closed'), { code: 'Closed' }));
    send().then(
      (data) => callback(null, data),
      (error) => {
        error.code ??= error.name;
        callback(error);
      },
    );
  };
  const v2 = {
    get: (params, callback) => call(() => doc.get(params), callback),
    put: (params, callback) => call(() => doc.put(params), callback),
    delete: (params, callback) => call(() => doc.delete(params), callback),
  };
  const locks = new FailOpen({
    dynamodb: v2,
    lockTable: table,
    partitionKey: keyAttribute,
    owner,
    leaseDurationMs: leaseMs,
    heartbeatPeriodMs: heartbeatMs,
    retryCount: 1_000_000_000,
  });
  const warnings = [];
  const held = new Set();
  const release = (lock) =>
    new Promise((resolve, reject) => {
      held.delete(lock);
      lock.release((error) => (error ? reject(error) : resolve()));
    });
  return {
    warnings,
    acquire(key, { signal } = {}) {
      return new Promise((resolve, reject) => {
        // It cannot be cancelled: on abort we stop waiting, and give back a lock that comes later.
        const onAbort = () => reject(signal.reason);
        if (signal?.aborted) return onAbort();
        signal?.addEventListener('abort', onAbort, { once: true });
        locks.acquireLock(key, (error, lock) => {
          signal?.removeEventListener('abort', onAbort);
          if (error) return reject(error);
          // A failed heartbeat is emitted as 'error'; unhandled, it would throw.
          lock.on('error', (e) => warnings.length < 20 && warnings.push(`heartbeat: ${e.message}`));
          if (signal?.aborted) return void release(lock).catch(() => undefined);
          held.add(lock);
          resolve({ release: () => release(lock) });
        });
      });
    },
    async close() {
      await Promise.allSettled([...held].map(release));
      closed = true;
    },
  };
}

/** nestjs-dynamo-lock, as built in dist/ (the library's public API only). */
import { LockManager } from '../../dist/index.js';

export function open({ client, table, owner, leaseMs, heartbeatMs }) {
  const warnings = [];
  const keep = (message) => warnings.length < 20 && warnings.push(String(message));
  const manager = new LockManager({
    tableName: table,
    client,
    ownerName: owner,
    leaseDuration: leaseMs,
    heartbeatInterval: heartbeatMs,
    verifyTable: false,
    logger: { log() {}, warn: keep, error: keep, debug() {}, verbose() {} },
  });
  return {
    warnings,
    async acquire(key, { signal } = {}) {
      const lock = await manager.acquire(key, { wait: true, signal, leaseDuration: leaseMs });
      return { release: () => lock.release() };
    },
    /** Graceful stop: releases every held lock (what SIGTERM → app shutdown does). */
    close: () => manager.close(),
  };
}

import type { LockRecord } from './lock-record';
import type { AcquireWrite, QueueWrite, StoreHealth, WriteResult } from './lock-store.protocol';

/**
 * Where lock records live. The DynamoDB store is the product; an in-memory store with the same
 * semantics backs tests of applications. Every write is conditional and atomic on one record;
 * both implementations pass one contract suite.
 */
export interface LockStorePort {
  /** Takes the lock when `write.condition` holds (and dequeues the writer when `queuedAt` is set). */
  acquire(write: AcquireWrite): Promise<WriteResult>;
  /** Appends a waiter to the record's queue while the lock is held or others are queued. */
  enqueue(waiter: QueueWrite): Promise<WriteResult>;
  /** Removes a waiter from the queue at `index` if it is still there. */
  leave(key: string, token: string, index: number): Promise<WriteResult>;
  /** Renews a held lock (new record version; new lease unless `undefined`; the holder's data when given). */
  heartbeat(key: string, token: string, leaseMs: number | undefined, ttlLeaseMs?: number, data?: string): Promise<WriteResult>;
  /** Releases a held lock, keeping the fencing counter; `false` when the token did not hold it. `heldMs` is recorded for waiters. */
  release(key: string, token: string, leaseMs: number, heldMs?: number): Promise<boolean>;
  /** Releases straight to the head of the queue. `heldMs` is recorded for waiters. */
  promote(key: string, token: string, leaseMs: number, heldMs?: number): Promise<WriteResult>;
  /** Reads one record (strongly consistent). */
  read(key: string): Promise<LockRecord | undefined>;
  /** Every held record whose key starts with `prefix`. */
  scanHeld(prefix: string): AsyncGenerator<LockRecord>;
  /** Checks (or creates) whatever the store needs before use, e.g. the DynamoDB table. */
  prepare(create: boolean): Promise<void>;
  /**
   * Answers the health indicator (`nestjs-dynamo-lock/health`). Never rejects for an unhealthy
   * store: it reports it. Settles as soon as `signal` aborts (the check's timeout). Optional: a
   * store without it is reported as `store: 'custom'`, not checked.
   */
  health?(signal: AbortSignal): Promise<StoreHealth>;
}

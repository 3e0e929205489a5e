import type { ReadConsistency } from '../store.protocol';
import type { LeftRun, LockRecord } from './mutex.record';
import type {
  AcquireAllResult,
  AcquireAllWrite,
  AcquireWrite,
  HeartbeatWrite,
  Holding,
  ReleaseFire,
  SkipWrite,
  TicketWrite,
  WriteResult,
} from './mutex-store.protocol';

/**
 * Where mutex items live: one item per key, with its holder, its line of tickets and its fencing
 * counter. The DynamoDB store is the product; an in-memory store with the same semantics backs tests
 * of applications. Every write is conditional and atomic on one item; both implementations pass one
 * contract suite (`test/store/lock-store.contract.ts`).
 */
export interface MutexStorePort {
  /** Takes the lock when `write.condition` holds: free, or handed over by its holder. */
  acquire(write: AcquireWrite): Promise<WriteResult>;
  /**
   * Takes several free keys at once, all or none, each as a free {@link acquire} takes it (on
   * DynamoDB, one `TransactWriteItems`). Absent, or answering `unsupported`, where the store has
   * no transactions: callers then take the keys one by one.
   */
  acquireAll?(write: AcquireAllWrite): Promise<AcquireAllResult>;
  /** Takes the next ticket for a waiter (the answer is the item as written: its ticket is `tail - 1`). */
  enqueue(write: TicketWrite): Promise<WriteResult>;
  /** Passes a holder whose record version stayed unchanged for its whole lease. */
  skip(write: SkipWrite): Promise<WriteResult>;
  /** Answers the roll call of a stalled head with a live waiter's ticket. */
  markAlive(key: string, rvn: string, ticket: number): Promise<WriteResult>;
  /** Leaves the line: records a ticket still waiting as left (see `ATTR.left`). */
  leave(key: string, ticket: number): Promise<WriteResult>;
  /** Passes the run of left tickets at the head of the line (nobody held them); the fencing counter stays. */
  passLeft(key: string, run: LeftRun): Promise<WriteResult>;
  /** Renews a held lock (new record version; new lease unless `undefined`; the holder's data when given). */
  heartbeat(write: HeartbeatWrite): Promise<WriteResult>;
  /**
   * Releases a held lock, serving the next ticket (and passing at once the tickets served next whose
   * waiters left, in a second write); `false` when `holding` did not hold it. `heldMs`
   * is recorded for waiters; `fire` ends the scheduled fire the holder claimed (kept in the item).
   */
  release(key: string, holding: Holding, leaseMs: number, heldMs?: number, fire?: ReleaseFire): Promise<boolean>;
  /**
   * Reads one record: strongly consistent, or `'eventual'` (half the price on DynamoDB, possibly
   * a little old: only for timing reads, never for deciding who holds).
   */
  read(key: string, consistency?: ReadConsistency): Promise<LockRecord | undefined>;
  /** Every held record whose key starts with `prefix`. */
  scanHeld(prefix: string): AsyncGenerator<LockRecord>;
}

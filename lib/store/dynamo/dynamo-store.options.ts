import type { LockEntryPoint } from '../../errors/entry-point';
import type { LockLogger } from '../../interfaces/lock-logger.interface';

/** What every DynamoDB item store of a table needs: the table, the TTL rule, the request limit. */
export interface DynamoStoreOptions {
  tableName: string;
  /** Days after the last write before DynamoDB TTL may delete the item; 0 writes no TTL attribute. */
  ttlDays: number;
  /** Where table creation is reported. */
  logger?: LockLogger;
  /** Time limit of each request in ms (SDK retries included); none when absent. */
  requestTimeoutMs?: number;
  /** Whether the lock options create a missing table at start-up: a missing table's error says what to do. */
  createTable?: boolean;
  /** What the lock options were written for: a missing table's error names it. */
  entryPoint?: LockEntryPoint;
}

import type { LockEntryPoint } from '../../errors/entry-point';
import type { LockLogger } from '../../interfaces/lock-logger.interface';
import type { LockTableKeys } from '../../interfaces/lock-table-keys.interface';

/** What every DynamoDB item store of a table needs: the table and its key attributes, the TTL rule, the request limit. */
export interface DynamoStoreOptions {
  tableName: string;
  /** Where lock items sit in the table: its key attributes (default: partition key `key`, no sort key). */
  keys?: LockTableKeys;
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

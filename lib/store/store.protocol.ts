/**
 * What every store of lock items says, whatever the primitive: how a read sees the item, and what a
 * place for lock items (a DynamoDB table, or memory) answers to a health check.
 */
import type { EndpointInfo } from '../errors/endpoint-info';

/**
 * What a store answers to a health check (`LockStores.health`): the in-memory store has
 * nothing to contact; the DynamoDB store reports its table.
 */
export type StoreHealth = { store: 'memory' } | TableHealth;

/** The DynamoDB store's health: its lock table as one `DescribeTable` found it. */
export interface TableHealth {
  store: 'dynamodb';
  /** The lock table. */
  table: string;
  /** The table's status as DynamoDB reported it (`'UNKNOWN'` when it did not say); absent when the check failed. */
  tableStatus?: string;
  /** Milliseconds from the request to its answer, or to the check's failure, rounded. */
  latencyMs: number;
  /**
   * Why the check failed: the table does not exist, the caller's signal aborted the check, or
   * another error (`error`: no connection, no credentials, access denied, ...).
   */
  failure?: 'missing' | 'aborted' | 'failed';
  /** The error of a `'failed'` check. */
  error?: unknown;
  /** Where the table was looked for, when it is `'missing'`. */
  endpoint?: EndpointInfo;
}

/** How a read sees the item: as of the last write (`'strong'`), or possibly a little earlier (`'eventual'`). */
export type ReadConsistency = 'strong' | 'eventual';

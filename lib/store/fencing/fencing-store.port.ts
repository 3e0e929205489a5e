/**
 * The words of fenced writes between the engine and a store ({@link FencingStorePort}): the writes
 * of `lock.transact()` and `lock.fencedWrite()`, always in the attribute-value form here.
 */
import type { AttributeValue, ConsumedCapacity, ReturnConsumedCapacity, ReturnValue, TransactWriteItem } from '@aws-sdk/client-dynamodb';
import type { TransactionCancellation } from '../../errors/lock.errors';
import type { FencedWriteItem } from '../../interfaces/fenced-write.interface';
import type { LockRecord } from '../mutex/mutex.record';
import type { Holding } from '../mutex/mutex-store.protocol';

/** The caller's items, written only while `holding` still holds the lock item `lockKey`. */
export interface TransactRequest {
  /** The lock's stored key (its item in the lock table). */
  lockKey: string;
  holding: Holding;
  /** The lock's fencing token (for the memory store's hook). */
  fencingToken: number;
  items: TransactWriteItem[];
  returnConsumedCapacity?: ReturnConsumedCapacity;
  clientRequestToken?: string;
}

/** What a transaction came to. */
export type TransactOutcome =
  | { ok: true; consumedCapacity?: ConsumedCapacity[] }
  /** The lock's check failed: nothing written; `current` is the lock item when the server returned it. */
  | { ok: false; lockHeld: false; current: LockRecord | undefined }
  /** The caller's items were the cause (one reason per item, in order): nothing written. */
  | { ok: false; lockHeld: true; reasons: (Omit<TransactionCancellation, 'item'> & { item?: Record<string, AttributeValue> })[] };

/** One write stamped with the fencing token and conditioned on no newer one being there. */
export interface FencedWriteRequest {
  lockKey: string;
  item: FencedWriteItem;
  token: number;
  /** The attribute the token is written to. */
  attribute: string;
  returnValues?: ReturnValue;
  returnConsumedCapacity?: ReturnConsumedCapacity;
}

/** What a fenced write came to (a failure of the caller's own condition is thrown as the server threw it). */
export type FencedWriteOutcome =
  | { ok: true; attributes?: Record<string, AttributeValue>; consumedCapacity?: ConsumedCapacity }
  /** A newer token is on the item: nothing written. */
  | { ok: false; newerToken: number; tableName: string };

/** Where fenced writes go: the DynamoDB client of the lock table, or the memory store's hook. */
export interface FencingStorePort {
  /**
   * The items and a check of the lock item in one transaction.
   * @throws LockConfigurationError when the server has no transactions.
   */
  transact(request: TransactRequest): Promise<TransactOutcome>;
  /** One Put, Update or Delete carrying the fencing token. */
  fencedWrite(request: FencedWriteRequest): Promise<FencedWriteOutcome>;
}

import type { AttributeValue, TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { LockConfigurationError } from '../../errors/lock.errors';
import { MEMORY_PUT_KEY_UNKNOWN } from '../../errors/lock.messages';
import type { FencedWriteItem } from '../../interfaces/fenced-write.interface';
import type { MemoryMutexStore } from '../mutex/mutex.memory-store';
import { hasLeft } from '../mutex/mutex.record';
import { fencedOperation, type FencedOperation, operationOf } from './fenced-request';
import type { FencedWriteOutcome, FencedWriteRequest, FencingStorePort, TransactOutcome, TransactRequest } from './fencing-store.port';

/**
 * A fenced write that `MemoryLockStore` let through, handed to its `onWrite` hook: always in the
 * attribute-value form (document-form items arrive marshalled).
 */
export type MemoryWrite =
  /** `lock.transact()`: the caller's items, once the lock was checked as DynamoDB would (still this holder's). */
  | { kind: 'transact'; key: string; fencingToken: number; items: TransactWriteItem[] }
  /**
   * `lock.fencedWrite()`: the write as it would be sent (token stamped, conditions joined), once no
   * newer token was found for its item.
   */
  | { kind: 'fencedWrite'; key: string; fencingToken: number; item: FencedWriteItem };

/** Options of `MemoryLockStore`: where its fenced writes go. */
export interface MemoryLockStoreOptions {
  /**
   * Receives each fenced write the store let through, to apply it to the test's own data or to
   * assert on it. Throwing (e.g. a `LockTransactionError` or a `ConditionalCheckFailedException`
   * of the test's making) fails the call with that error, and nothing is recorded.
   */
  onWrite?: (write: MemoryWrite) => void | Promise<void>;
  /** Key attribute names per table, for `fencedWrite()` Puts (Updates and Deletes name their key). */
  tableKeys?: Record<string, readonly string[]>;
  /**
   * Whether the store has transactions, as DynamoDB has (default `true`): a multi-key lock whose
   * keys are free is then taken in one all-or-none write. `false` behaves like dynalite: the keys
   * are taken one by one in their order, so tests can run both paths.
   */
  transactions?: boolean;
}

/**
 * Fenced writes in memory: `transact()` checks the lock item of the memory mutex store as the
 * `ConditionCheck` would; `fencedWrite()` keeps the last token written per item (table and key)
 * and refuses an older one as the fence condition would. Neither evaluates the caller's own
 * conditions (there are no tables here): the hook does whatever the test wants with the writes.
 */
export class MemoryFencingStore implements FencingStorePort {
  /** The token last written per item: `table` + key JSON. */
  private readonly fences = new Map<string, number>();
  private readonly tableKeys = new Map<string, readonly string[]>();

  constructor(
    private readonly locks: MemoryMutexStore,
    private readonly options: MemoryLockStoreOptions = {},
  ) {
    for (const [table, names] of Object.entries(options.tableKeys ?? {})) this.tableKeys.set(table, names);
  }

  async transact(request: TransactRequest): Promise<TransactOutcome> {
    await tick();
    const current = this.locks.peek(request.lockKey);
    const { token, ticket } = request.holding;
    const holds =
      current?.token === token ||
      (ticket !== undefined && current?.token === undefined && current?.head === ticket && !hasLeft(current, ticket));
    if (!holds) return { ok: false, lockHeld: false, current };
    await this.options.onWrite?.({ kind: 'transact', key: request.lockKey, fencingToken: request.fencingToken, items: request.items });
    return { ok: true };
  }

  async fencedWrite(request: FencedWriteRequest): Promise<FencedWriteOutcome> {
    const operation = fencedOperation(operationOf(request.item), request.token, request.attribute);
    await tick();
    const id = this.itemId(operation);
    const newer = this.fences.get(id);
    if (newer !== undefined && newer > request.token) return { ok: false, newerToken: newer, tableName: operation.body.TableName ?? '' };
    // Recorded at once, as the write would be applied: a write that follows sees it. A deleted
    // item takes its token with it, as on DynamoDB.
    if (operation.kind === 'Delete') this.fences.delete(id);
    else this.fences.set(id, request.token);
    const item = { [operation.kind]: operation.body } as FencedWriteItem;
    try {
      await this.options.onWrite?.({ kind: 'fencedWrite', key: request.lockKey, fencingToken: request.token, item });
    } catch (error) {
      // The hook refused it: nothing was written (unless a newer write landed meanwhile: keep it).
      if (this.fences.get(id) === request.token) {
        if (newer === undefined) this.fences.delete(id);
        else this.fences.set(id, newer);
      }
      throw error;
    }
    return { ok: true };
  }

  /** Forgets every item's token. */
  clear(): void {
    this.fences.clear();
  }

  private itemId(operation: FencedOperation): string {
    const table = operation.body.TableName ?? '';
    let key: Record<string, AttributeValue> | undefined;
    if (operation.kind === 'Put') {
      const names = this.tableKeys.get(table);
      if (!names) throw new LockConfigurationError(MEMORY_PUT_KEY_UNKNOWN(table));
      const item = operation.body.Item ?? {};
      key = Object.fromEntries(names.map((name) => [name, item[name]]));
    } else {
      key = operation.body.Key ?? {};
      // An Update or Delete names its key: a later Put to the table finds it by the same names.
      if (!this.tableKeys.has(table)) this.tableKeys.set(table, Object.keys(key).sort());
    }
    const sorted = Object.keys(key)
      .sort()
      .map((name) => [name, key[name]]);
    return `${table}\u0000${JSON.stringify(sorted)}`;
  }
}

/** Answers after a microtask, as the other memory stores do. */
function tick(): Promise<void> {
  return Promise.resolve();
}

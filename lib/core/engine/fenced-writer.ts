import {
  LockConfigurationError,
  LockFencedError,
  LockLostError,
  LockTransactionError,
  LockValidationError,
} from '../../errors/lock.errors';
import {
  FENCE_ATTRIBUTE_INVALID,
  FENCED_WRITE_ITEM_INVALID,
  FENCED_WRITES_UNSUPPORTED,
  STORE_HAS_NO_FENCE,
  TRANSACT_CANCELLED,
  TRANSACT_LOCK_LOST,
  TRANSACT_TOO_MANY,
  WRITE_FENCED,
} from '../../errors/lock.messages';
import {
  type AnyFencedWriteItem,
  type AnyTransactItem,
  DEFAULT_FENCE_ATTRIBUTE,
  type FencedWriteOptions,
  type FencedWriteResult,
  type TransactOptions,
  type TransactResult,
} from '../../interfaces/fenced-write.interface';
import { checkForm, inForm, toAttributeValueItems, toAttributeValueWrite } from '../../store/fencing/document-form';
import { checkTransactItems, MAX_TRANSACT_ITEMS, operationOf } from '../../store/fencing/fenced-request';
import type { FencingStorePort } from '../../store/fencing/fencing-store.port';
import type { LockStores } from '../../store/lock-stores';
import { isHeld, type LockRecord } from '../../store/mutex/mutex.record';
import type { LeaseKeeper } from './lease.keeper';
import type { Lock } from './lock';
import type { HeldLease } from './lock-state';

/**
 * The engine's side of fenced writes (`lock.transact()`, `lock.fencedWrite()`) for a primitive
 * whose holder is alone: checks the call, refuses a lock known lost before any request, sends
 * through the stores, and turns a refusal into the error that says why (a lost lock, the caller's
 * own conditions, a newer token). A lock found lost is marked lost, so its signal aborts.
 */
export class FencedWriter {
  constructor(
    private readonly stores: LockStores,
    private readonly keeper: LeaseKeeper,
  ) {}

  /** The caller's items and a check of the lock item in one transaction. */
  async transact(lock: Lock, items: readonly AnyTransactItem[], options: TransactOptions = {}): Promise<TransactResult> {
    const form = checkForm(options.form);
    if (!Array.isArray(items)) throw new LockValidationError(FENCED_WRITE_ITEM_INVALID('lock.transact()', items));
    if (items.length > MAX_TRANSACT_ITEMS) throw new LockValidationError(TRANSACT_TOO_MANY(items.length, MAX_TRANSACT_ITEMS));
    const written = await toAttributeValueItems(items, form);
    checkTransactItems(written);
    const fencing = this.fencing(lock);
    const lease = this.heldLease(lock);
    // After this lease's other writes (heartbeats): DynamoDB would cancel a transaction that meets
    // a write of the same item in flight.
    const outcome = await this.keeper.serial(lease, () =>
      fencing.transact({
        lockKey: lease.storedKey,
        holding: { token: lease.token, ticket: lease.ticket },
        fencingToken: lock.fencingToken,
        items: written,
        returnConsumedCapacity: options.returnConsumedCapacity,
        clientRequestToken: options.clientRequestToken,
      }),
    );
    if (outcome.ok) return outcome.consumedCapacity === undefined ? {} : { consumedCapacity: outcome.consumedCapacity };
    if (!outcome.lockHeld) throw await this.lost(lease, outcome.current);
    const reasons = await Promise.all(
      outcome.reasons.map(async ({ item, ...reason }) => {
        const shown = await inForm(item, form);
        return shown === undefined ? reason : { ...reason, item: shown };
      }),
    );
    const causes = reasons.filter((r) => r.code !== 'None').map((r) => `item ${r.index}: ${r.code}${r.message ? ` (${r.message})` : ''}`);
    throw new LockTransactionError(TRANSACT_CANCELLED(lock.key, causes), lock.key, reasons);
  }

  /** One write stamped with the lock's fencing token, refused when the item carries a newer one. */
  async fencedWrite(lock: Lock, item: AnyFencedWriteItem, options: FencedWriteOptions = {}): Promise<FencedWriteResult> {
    const form = checkForm(options.form);
    const attribute = options.fenceAttribute ?? DEFAULT_FENCE_ATTRIBUTE;
    if (typeof attribute !== 'string' || attribute.length === 0) throw new LockValidationError(FENCE_ATTRIBUTE_INVALID(attribute));
    const write = await toAttributeValueWrite(item, form);
    operationOf(write);
    const fencing = this.fencing(lock);
    const lease = this.heldLease(lock);
    const outcome = await fencing.fencedWrite({
      lockKey: lease.storedKey,
      item: write,
      token: lock.fencingToken,
      attribute,
      returnValues: options.returnValues,
      returnConsumedCapacity: options.returnConsumedCapacity,
    });
    if (outcome.ok) {
      const attributes = await inForm(outcome.attributes, form);
      return { ...(attributes && { attributes }), ...(outcome.consumedCapacity && { consumedCapacity: outcome.consumedCapacity }) };
    }
    // A newer token on the item: a later holder wrote it. Not proof that this lock is lost (a holder
    // of another key, or of the same key in another table, may have the higher token): the lock's
    // own heartbeats say that; this write is refused either way.
    throw new LockFencedError(
      WRITE_FENCED(lock.key, outcome.tableName, lock.fencingToken, outcome.newerToken),
      lock.key,
      lock.fencingToken,
      outcome.newerToken,
      outcome.tableName,
    );
  }

  private fencing(lock: Lock): FencingStorePort {
    const { fencing } = this.stores;
    if (!fencing) throw new LockConfigurationError(FENCED_WRITES_UNSUPPORTED(lock.key, STORE_HAS_NO_FENCE));
    return fencing;
  }

  /** The lease of a lock still held; for one known lost (or released), the reason its signal carries. */
  private heldLease(lock: Lock): HeldLease {
    const lease = this.keeper.get(lock);
    if (lease && this.keeper.checkHeld(lock)) return lease;
    const signal = lease?.controller.signal ?? lock.signal;
    if (signal.aborted) throw signal.reason;
    throw new LockLostError(TRANSACT_LOCK_LOST(lock.key, undefined), lock.key, 'gone');
  }

  /**
   * The error of a transaction whose lock check failed: the signal's reason when it aborted
   * already; otherwise the item tells (read when the server did not return it): another holder
   * means `taken`, a free or missing item `gone`, and the lease is marked lost with that reason.
   */
  private async lost(lease: HeldLease, current: LockRecord | undefined): Promise<unknown> {
    const { signal } = lease.controller;
    if (signal.aborted) return signal.reason;
    const record = current ?? (await this.stores.mutex.read(lease.storedKey).catch(() => undefined));
    const taken = isHeld(record);
    this.keeper.markLost(lease.lock, taken ? 'taken' : 'gone', taken ? record?.owner : undefined);
    if (signal.aborted) return signal.reason;
    return new LockLostError(TRANSACT_LOCK_LOST(lease.lock.key, record?.owner), lease.lock.key, taken ? 'taken' : 'gone');
  }
}

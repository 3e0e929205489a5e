import type { TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { LockLostError, LockValidationError } from '../../errors/lock.errors';
import { MULTI_KEY_NOT_IN_SET, RELEASE_FAILED, UPGRADE_UNSUPPORTED } from '../../errors/lock.messages';
import type { LockLogger } from '../../interfaces/lock-logger.interface';
import type {
  AnyFencedWriteItem,
  AnyTransactItem,
  DocumentFencedWriteItem,
  DocumentTransactItem,
  FencedWriteItem,
  FencedWriteOptions,
  FencedWriteResult,
  TransactOptions,
  TransactResult,
} from '../../interfaces/fenced-write.interface';
import { type Duration } from '../../utils/duration';

/**
 * How a `release()` ended: `released` — held until this call, and given up (to DynamoDB or to the
 * next caller of this process); `expired` — its lease had run out before, and nobody had taken the
 * lock, so this call freed it (work done after the lease ran out was not protected); `not-held` —
 * another owner had taken it, it was gone, or released before (or its lease had run out and DynamoDB
 * did not answer the write that would have freed it); `reentrant` — a nested handle, whose outer
 * holder releases.
 */
export type ReleaseOutcome = 'released' | 'expired' | 'not-held' | 'reentrant';

/** Options of {@link Lock.release}. */
export interface ReleaseOptions {
  /** Resolve with the {@link ReleaseOutcome} instead of a boolean. */
  outcome: true;
}

/** The part of the lock manager a {@link Lock} handle calls back into. */
export interface LockHost {
  release(lock: Lock): Promise<ReleaseOutcome>;
  extend(lock: Lock, leaseDuration?: Duration): Promise<void>;
  /** Whether the lock is still held; aborts its signal first if its lease ran out. */
  checkHeld(lock: Lock): boolean;
  /** The caller's items and a check of the lock in one transaction (or a clear refusal). */
  transact(lock: Lock, items: readonly AnyTransactItem[], options: TransactOptions): Promise<TransactResult>;
  /** One write stamped with the fencing token (or a clear refusal). */
  fencedWrite(lock: Lock, item: AnyFencedWriteItem, options: FencedWriteOptions): Promise<FencedWriteResult>;
  /** Turns an upgradeable read lock into a write lock (absent: the lock cannot be upgraded). */
  upgrade?(lock: Lock, options: UpgradeOptions): Promise<Lock>;
}

/** Options of `lock.upgrade()`. */
export interface UpgradeOptions {
  /**
   * How long to wait for the other readers to leave: a duration, `true` without limit, or `false`
   * for a single attempt. Default: the module's `wait`.
   */
  wait?: Duration | boolean;
  /** Cancels the wait; `upgrade()` then rejects with the signal's reason (the lock stays a read lock). */
  signal?: AbortSignal;
}

/** Fields a {@link Lock} is created with. */
export interface LockFields {
  key: string;
  owner: string;
  fencingToken: number;
  acquiredAt: Date;
  leaseId: string;
  /** Aborts the handle's signal: an `AbortController`, or one that makes the signal only when read. */
  controller: Pick<AbortController, 'signal'>;
  host: LockHost;
  /** For a nested acquisition of a key the async context already holds: the outer lock. */
  outer?: Lock;
  /** A multi-key lock: its keys in the global order (`key` is the first), and each key's token. */
  keys?: readonly string[];
  tokens?: readonly number[];
  /** A multi-key handle over locks the async context held already: its release leaves them to their holders. */
  reentrant?: boolean;
}

let create: (fields: LockFields) => Lock;
let nest: (lock: Lock) => Lock;
let root: (lock: Lock) => Lock;

/** Creates a lock handle (for the lock manager). */
export function createLock(fields: LockFields): Lock {
  return create(fields);
}

/** The outermost handle of a lock: itself, or the lock a nested handle was made from. */
export function rootLock(lock: Lock): Lock {
  return root(lock);
}

/** Releases a lock, logging (not throwing) a failure: the work is done, and the lease runs out on its own. */
export async function releaseQuietly(lock: Lock, logger: LockLogger): Promise<void> {
  try {
    await lock.release();
  } catch (error) {
    logger.warn?.(RELEASE_FAILED(lock.key, error));
  }
}

/** A handle for a nested (re-entrant) acquisition of `lock`, sharing its lease. */
export function nestedLock(lock: Lock): Lock {
  return nest(lock);
}

/**
 * A held lock. Returned by `acquire()`; passed to `withLock()` callbacks; available inside a
 * locked section through `current()`.
 *
 * @example
 * ```ts
 * await using lock = await locks.acquire(`invoice-${id}`);
 * await db.saveInvoice(invoice, { fencingToken: lock.fencingToken, signal: lock.signal });
 * ```
 */
export class Lock implements AsyncDisposable {
  /**
   * The key as passed to `acquire()`; on a multi-key handle, the first of {@link keys} (each key's
   * own lock: `current(key)`).
   */
  readonly key: string;
  /** Owner name stored with the lock. */
  readonly owner: string;
  /**
   * Fencing token: larger than the token of every earlier holder of this key. Pass it to the
   * resource you protect and have it reject writes with a smaller token than it has seen. On a
   * multi-key handle, the first key's: each key's is `fencingTokenOf(key)`.
   */
  readonly fencingToken: number;
  /** When this holder acquired the lock (local wall clock). */
  readonly acquiredAt: Date;
  /**
   * The secret owner token of this holder. With it, `renewLease()` and `releaseLease()` act on
   * the lock from another process (the CLI prints it). Treat it like a password. On a multi-key
   * handle, the first key's lease (each key is a lease of its own).
   */
  readonly leaseId: string;
  /**
   * Every key this handle holds, in the global order (UTF-8 bytes of the stored key): one for a
   * lock of one key, the deduplicated set for `acquire([...])`.
   */
  readonly keys: readonly string[];
  readonly #tokens: readonly number[];
  readonly #reentrant: boolean;
  readonly #controller: Pick<AbortController, 'signal'>;
  readonly #host: LockHost;
  readonly #outer: Lock | undefined;

  static {
    create = (fields) => new Lock(fields);
    nest = (lock) => new Lock({ ...lock.#fields(), outer: lock.#outer ?? lock });
    root = (lock) => lock.#outer ?? lock;
  }

  /** Locks are created by the lock manager only. */
  private constructor(fields: LockFields) {
    this.key = fields.key;
    this.owner = fields.owner;
    this.fencingToken = fields.fencingToken;
    this.acquiredAt = fields.acquiredAt;
    this.leaseId = fields.leaseId;
    this.keys = Object.freeze([...(fields.keys ?? [fields.key])]);
    this.#tokens = fields.tokens ?? [fields.fencingToken];
    this.#reentrant = fields.reentrant ?? false;
    this.#controller = fields.controller;
    this.#host = fields.host;
    this.#outer = fields.outer;
  }

  /**
   * Aborts when the lock is lost (taken over, deleted, or its lease ran out without a
   * heartbeat), with a `LockLostError` as `reason`. Reading it checks the lease on the local
   * clock first, so `lock.signal.throwIfAborted()` right before a protected write is exact.
   */
  get signal(): AbortSignal {
    this.#host.checkHeld(this.#outer ?? this);
    return this.#controller.signal;
  }

  /** Whether this handle still holds the lock: not released, not lost, lease not run out. */
  get isHeld(): boolean {
    return this.#host.checkHeld(this.#outer ?? this);
  }

  /** Whether this is a nested (re-entrant) acquisition; its `release()` leaves the lock to the outer holder. */
  get isReentrant(): boolean {
    return this.#outer !== undefined || this.#reentrant;
  }

  /**
   * The fencing token of one of this lock's {@link keys} (for a lock of one key, its `fencingToken`).
   * @example
   * ```ts
   * await locks.withLock(['account-1', 'account-2'], async (lock) => {
   *   await debit('account-1', { fence: lock.fencingTokenOf('account-1') });
   * });
   * ```
   * @throws LockValidationError when `key` is not one of its keys.
   */
  fencingTokenOf(key: string): number {
    const index = this.keys.indexOf(key);
    if (index < 0) throw new LockValidationError(MULTI_KEY_NOT_IN_SET(key, this.keys));
    return this.#tokens[index];
  }

  /**
   * Releases the lock (one conditional write). Never affects another owner's lock. A lock whose lease
   * ran out unnoticed (no heartbeats, a pause) is still freed when nobody took it meanwhile. A
   * multi-key lock releases every key (one write each, in parallel), and says `true` only if each was.
   * @returns `true` if it was held until this call and released; `false` otherwise (its lease had
   * run out, another owner took it, it was released already, or this is a re-entrant handle).
   */
  release(): Promise<boolean>;
  /**
   * Releases the lock, as {@link Lock.release} does, and says how it ended.
   * @returns `released`, `expired` (its lease had run out, nobody had taken it: this call freed
   * it), `not-held` or `reentrant` (see {@link ReleaseOutcome}).
   */
  release(options: ReleaseOptions): Promise<ReleaseOutcome>;
  release(options?: ReleaseOptions): Promise<boolean | ReleaseOutcome> {
    const outcome: Promise<ReleaseOutcome> = this.isReentrant ? Promise.resolve('reentrant') : this.#host.release(this);
    return options?.outcome ? outcome : outcome.then((ended) => ended === 'released');
  }

  /**
   * Renews the lease now (one conditional write), optionally with a new lease duration that
   * later heartbeats keep.
   * @throws LockLostError if the lock is no longer held: for a lost lock, the one its `signal`
   *   carries, whose `reason` tells why (`expired`, `taken`, `gone`, `shutdown`, or `released`
   *   after `release()`).
   */
  async extend(leaseDuration?: Duration): Promise<void> {
    try {
      await this.#host.extend(this.#outer ?? this, leaseDuration);
    } catch (error) {
      // The host forgets a lost lease; the handle's signal still says why it was lost.
      if (error instanceof LockLostError && this.#controller.signal.aborted) throw this.#controller.signal.reason;
      throw error;
    }
  }

  /**
   * Writes `items` (Put / Update / Delete / ConditionCheck on any table, at most 99) only while
   * this lock is held: they and a check of the lock item (still this holder's) go in one
   * `TransactWriteItems`, so either all land under the lock or none does. A nested handle writes
   * under its outer lock. Needs a server with transactions (DynamoDB, DynamoDB Local); elsewhere
   * use {@link fencedWrite}. DynamoDB bills each transactional write twice.
   *
   * @example
   * ```ts
   * await lock.transact([{ Update: { TableName: 'invoices', Key: { id: { S: id } }, UpdateExpression: 'SET paid = :t', ExpressionAttributeValues: { ':t': { BOOL: true } } } }]);
   * await lock.transact([{ Put: { TableName: 'invoices', Item: { id, paid: true } } }], { form: 'document' });
   * ```
   * @throws LockLostError (reason `taken`, `gone`, `expired`...: the one its `signal` carries) when
   *   the lock was no longer held, before any request when that was known; nothing was written.
   * @throws LockTransactionError when DynamoDB cancelled it for the items' own conditions (`reasons`, one per item).
   * @throws LockConfigurationError on a server without transactions (dynalite).
   * @throws LockValidationError for more than 99 items or an item of another shape.
   */
  transact(items: readonly TransactWriteItem[], options?: TransactOptions & { form?: 'attribute-value' }): Promise<TransactResult>;
  /**
   * The same as the attribute-value form (see above), for items with plain values
   * (`@aws-sdk/lib-dynamodb`'s form), converted with `@aws-sdk/util-dynamodb`.
   */
  transact(items: readonly DocumentTransactItem[], options: TransactOptions & { form: 'document' }): Promise<TransactResult>;
  transact(items: readonly AnyTransactItem[], options: TransactOptions = {}): Promise<TransactResult> {
    return this.#host.transact(this.#outer ?? this, items, options);
  }

  /**
   * Writes one item (Put / Update / Delete) stamped with this lock's fencing token, on condition
   * that the item carries no newer token (`attribute_not_exists(f) OR f <= token`, joined to the
   * item's own condition): a holder whose successor already wrote the item writes nothing. Works on
   * every server, without transactions. The token goes to the attribute `fenceAttribute` (default
   * `lockFence`); a Delete removes the item and its token, so prefer an Update marking it deleted
   * where stale holders may still write.
   *
   * @example
   * ```ts
   * await lock.fencedWrite({ Update: { TableName: 'invoices', Key: { id }, UpdateExpression: 'SET paid = :t', ExpressionAttributeValues: { ':t': true } } }, { form: 'document' });
   * ```
   * @returns what the write returned (`attributes` for `returnValues`, `consumedCapacity`).
   * @throws LockFencedError when the item carries a newer token (`newerToken`): nothing was written.
   * @throws LockLostError, before any request, when the lock is known lost (its `signal` aborted).
   * @throws the server's `ConditionalCheckFailedException`, as it is, when the item's own condition failed.
   */
  fencedWrite(item: FencedWriteItem, options?: FencedWriteOptions & { form?: 'attribute-value' }): Promise<FencedWriteResult>;
  /**
   * The same as the attribute-value form (see above), for an item with plain values, converted with
   * `@aws-sdk/util-dynamodb`.
   */
  fencedWrite(item: DocumentFencedWriteItem, options: FencedWriteOptions & { form: 'document' }): Promise<FencedWriteResult>;
  fencedWrite(item: AnyFencedWriteItem, options: FencedWriteOptions = {}): Promise<FencedWriteResult> {
    return this.#host.fencedWrite(this.#outer ?? this, item, options);
  }

  /**
   * Turns this upgradeable read lock (`mode: 'upgradeable'`) into a write lock without letting a
   * writer in between: new readers are stopped, the other readers are waited for (a silent one is
   * passed after its lease), then one write makes this reader the key's holder, with a new, larger
   * fencing token. This read lock ends then (its signal aborts, reason `released`); release the
   * returned lock when done. On a busy error (the wait ran out) or the signal's abort the lock
   * stays a read lock and readers may join again.
   * @throws LockValidationError for a lock that is not upgradeable (a plain read lock, a writer, a
   *   nested handle).
   * @throws LockBusyError when the other readers stay for the whole wait.
   * @throws LockLostError when this read lock was lost.
   */
  upgrade(options: UpgradeOptions = {}): Promise<Lock> {
    if (this.#outer !== undefined || !this.#host.upgrade) return Promise.reject(new LockValidationError(UPGRADE_UNSUPPORTED(this.key)));
    return this.#host.upgrade(this, options);
  }

  /** Releases the lock at the end of an `await using` block. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }

  #fields(): LockFields {
    return {
      key: this.key,
      owner: this.owner,
      fencingToken: this.fencingToken,
      acquiredAt: this.acquiredAt,
      leaseId: this.leaseId,
      keys: this.keys,
      tokens: this.#tokens,
      reentrant: this.#reentrant,
      controller: this.#controller,
      host: this.#host,
    };
  }
}

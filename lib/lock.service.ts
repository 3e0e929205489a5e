import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Lock } from './core/engine/lock';
import { exposeInternals, internalsOf } from './core/engine/lock.internals';
import { LockManager } from './core/lock.manager';
import { entryPointOf, type ResolvedLockOptions, withEntryPoint } from './core/engine/lock-options.resolver';
import { LockConfigurationError } from './errors/lock.errors';
import { OPTIONS_NOT_OBJECT } from './errors/lock.messages';
import { DYNAMO_LOCK_OPTIONS } from './dynamo-lock.module-definition';
import type { AcquireOptions } from './interfaces/acquire-options.interface';
import type { DynamoLockOptions } from './interfaces/dynamo-lock-options.interface';
import type { LockEventListener } from './interfaces/lock-event.interface';
import type { JobFire } from './interfaces/job-fire.interface';
import type { LockInfo } from './interfaces/lock-info.interface';
import type { Duration } from './utils/duration';
import type { LeadOptions } from './core/leadership/lead-options';
import type { Leadership } from './core/leadership/leadership';

/**
 * The lock service of `DynamoLockModule`: acquire, tryAcquire, withLock, inspect, current, and lead
 * (leader election).
 * Checks (or creates) the table at start-up, so a missing or wrong table fails the app's boot,
 * and releases every held lock on application shutdown. It is the {@link LockManager} API
 * without `init()` and `close()`, which the module runs at boot and shutdown: app code cannot
 * stop locking for the whole app.
 *
 * @example
 * ```ts
 * constructor(private readonly locks: LockService) {}
 *
 * payInvoice(id: string) {
 *   return this.locks.withLock(`invoice-${id}`, async (lock) => {
 *     await this.payments.charge(id, { fencingToken: lock.fencingToken });
 *   });
 * }
 * ```
 */
@Injectable()
export class LockService implements OnModuleInit, OnApplicationShutdown {
  readonly #manager: LockManager;

  /** @throws LockConfigurationError when an option is invalid, naming `forRoot()`, `forRootAsync()` or `forTesting()`. */
  constructor(@Inject(DYNAMO_LOCK_OPTIONS) options: DynamoLockOptions) {
    // The module's methods note themselves on the options; without them, the module is named.
    const entry = entryPointOf(options) ?? 'module';
    const given: unknown = options;
    if (given !== undefined && (given === null || typeof given !== 'object')) {
      throw new LockConfigurationError(OPTIONS_NOT_OBJECT(given, entry));
    }
    this.#manager = new LockManager(
      withEntryPoint(options === undefined ? {} : { ...options, logger: options.logger ?? new Logger('DynamoLock') }, entry),
    );
    exposeInternals(this, internalsOf(this.#manager));
  }

  /** {@inheritDoc LockManager.options} */
  get options(): ResolvedLockOptions {
    return this.#manager.options;
  }

  /** {@inheritDoc LockManager.client} */
  get client(): DynamoDBClient {
    return this.#manager.client;
  }

  /** {@inheritDoc LockManager.acquire} */
  acquire(key: string | readonly string[], options?: AcquireOptions): Promise<Lock> {
    return this.#manager.acquire(key, options);
  }

  /** {@inheritDoc LockManager.tryAcquire} */
  tryAcquire(key: string | readonly string[], options?: Omit<AcquireOptions, 'wait'>): Promise<Lock | null> {
    return this.#manager.tryAcquire(key, options);
  }

  /** {@inheritDoc LockManager.withLock} */
  withLock<T>(key: string | readonly string[], fn: (lock: Lock) => T | Promise<T>, options?: AcquireOptions): Promise<T> {
    return this.#manager.withLock(key, fn, options);
  }

  /** {@inheritDoc LockManager.current} */
  current(key?: string): Lock | undefined {
    return this.#manager.current(key);
  }

  /** {@inheritDoc LockManager.renewLease} */
  renewLease(key: string, leaseId: string, leaseDuration?: Duration): Promise<void> {
    return this.#manager.renewLease(key, leaseId, leaseDuration);
  }

  /** {@inheritDoc LockManager.releaseLease} */
  releaseLease(key: string, leaseId: string): Promise<boolean> {
    return this.#manager.releaseLease(key, leaseId);
  }

  /** {@inheritDoc LockManager.lead} */
  lead(name: string, options?: LeadOptions): Leadership {
    return this.#manager.lead(name, options);
  }

  /** {@inheritDoc LockManager.inspect} */
  inspect(key: string): Promise<LockInfo | null> {
    return this.#manager.inspect(key);
  }

  /** {@inheritDoc LockManager.lastFire} */
  lastFire(key: string): Promise<JobFire | null> {
    return this.#manager.lastFire(key);
  }

  /** {@inheritDoc LockManager.list} */
  list(prefix?: string): Promise<LockInfo[]> {
    return this.#manager.list(prefix);
  }

  /** {@inheritDoc LockManager.subscribe} */
  subscribe(listener: LockEventListener): () => void {
    return this.#manager.subscribe(listener);
  }

  /** {@inheritDoc LockManager.heldCount} */
  get heldCount(): number {
    return this.#manager.heldCount;
  }

  /** @internal Nest lifecycle: verifies or creates the table. */
  async onModuleInit(): Promise<void> {
    await this.#manager.init();
  }

  /** @internal Nest lifecycle: rejects waiters, releases held locks and stops timers. */
  async onApplicationShutdown(): Promise<void> {
    await this.#manager.close();
  }
}

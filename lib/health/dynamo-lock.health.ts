import { Injectable } from '@nestjs/common';
import { type HealthIndicatorResult, HealthIndicatorService } from '@nestjs/terminus';
import { LockService } from '../lock.service';
import { internalsOf } from '../core/engine/lock.internals';
import type { LockStores } from '../store/lock-stores';
import type { StoreHealth, TableHealth } from '../store/store.protocol';
import { type Duration, parseDuration } from '../utils/duration';
import { HEALTH_NOT_ACTIVE, HEALTH_TABLE_MISSING, HEALTH_TIMEOUT, HEALTH_UNREACHABLE } from '../errors/lock.messages';

/** How long {@link DynamoLockHealthIndicator.isHealthy} waits for DynamoDB by default. */
export const DEFAULT_HEALTH_TIMEOUT_MS = 2_000;

/** Options of {@link DynamoLockHealthIndicator.isHealthy}. */
export interface DynamoLockHealthOptions {
  /**
   * How long to wait for DynamoDB's answer before reporting the indicator down, SDK retries
   * included: milliseconds or a duration string such as `'500ms'`. Default 2 s.
   */
  timeout?: Duration;
}

/**
 * What the indicator reports next to `status`:
 * - `store`: `'dynamodb'`, or `'memory'` under `DynamoLockModule.forTesting()` (always up,
 *   nothing to contact), or `'custom'` for a store of your own (not checked).
 * - `table`, `tableStatus`, `latencyMs`: the lock table, its status as DynamoDB reported it,
 *   and how long the `DescribeTable` request took (all for the DynamoDB store).
 * - `message`: why the indicator is down.
 */
export interface DynamoLockHealthDetails {
  [detail: string]: unknown;
  store: 'dynamodb' | 'memory' | 'custom';
  table?: string;
  tableStatus?: string;
  latencyMs?: number;
  message?: string;
}

/**
 * A `@nestjs/terminus` health indicator for the lock table: up when DynamoDB answers a
 * `DescribeTable` of the table in time and the table is `ACTIVE`; down, with a message, when the
 * table is missing, not `ACTIVE`, or DynamoDB cannot be reached. One request per check, through
 * the client of `LockService`; reports the table, its status and the latency in milliseconds.
 *
 * Needs `@nestjs/terminus` 11 or later (an optional peer dependency) and `DynamoLockModule` in
 * the app. Import it from the `nestjs-dynamo-lock/health` entry point, so that apps without
 * Terminus never load it.
 *
 * The permission it needs is `dynamodb:DescribeTable` on the lock table.
 *
 * @example
 * ```ts
 * import { Controller, Get, Module } from '@nestjs/common';
 * import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
 * import { DynamoLockModule } from 'nestjs-dynamo-lock';
 * import { DynamoLockHealthIndicator } from 'nestjs-dynamo-lock/health';
 *
 * @Controller('health')
 * class HealthController {
 *   constructor(
 *     private readonly health: HealthCheckService,
 *     private readonly locks: DynamoLockHealthIndicator,
 *   ) {}
 *
 *   @Get()
 *   @HealthCheck()
 *   check() {
 *     return this.health.check([() => this.locks.isHealthy('lock-table')]);
 *   }
 * }
 *
 * @Module({
 *   imports: [TerminusModule, DynamoLockModule.forRoot({ tableName: 'locks' })],
 *   controllers: [HealthController],
 *   providers: [DynamoLockHealthIndicator],
 * })
 * export class AppModule {}
 * ```
 * A healthy answer then holds
 * `"lock-table": { "status": "up", "store": "dynamodb", "table": "locks", "tableStatus": "ACTIVE", "latencyMs": 12 }`.
 */
@Injectable()
export class DynamoLockHealthIndicator {
  constructor(
    private readonly healthIndicatorService: HealthIndicatorService,
    private readonly lockService: LockService,
  ) {}

  /**
   * Checks the lock table (one `DescribeTable` request) and reports it under `key`.
   * Never throws for an unhealthy table: Terminus turns a `down` result into HTTP 503.
   * @param key the name of the indicator in the health report (default `'dynamo-lock'`).
   * @throws LockValidationError when `options.timeout` is not a valid duration.
   */
  async isHealthy<const Key extends string = 'dynamo-lock'>(
    key: Key = 'dynamo-lock' as Key,
    options: DynamoLockHealthOptions = {},
  ): Promise<HealthIndicatorResult<Key>> {
    const timeoutMs = options.timeout === undefined ? DEFAULT_HEALTH_TIMEOUT_MS : parseDuration(options.timeout, 'timeout');
    const indicator = this.healthIndicatorService.check(key);
    const health = await askStore(internalsOf(this.lockService).stores, timeoutMs);
    const details = detailsOf(health, timeoutMs, this.lockService.options.createTable);
    return details.message === undefined ? indicator.up(details) : indicator.down(details);
  }
}

/**
 * The store's answer to a health check within `timeoutMs` (its signal aborts then), or
 * `{ store: 'custom' }` for a store that does not answer health checks.
 */
async function askStore(store: LockStores, timeoutMs: number): Promise<StoreHealth | { store: 'custom' }> {
  if (!store.health) return { store: 'custom' };
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  try {
    return await store.health(controller.signal);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * What the indicator reports for the store's `health`: with a `message` when it is down.
 * `createTable`: whether the app created (or found) the table at start-up, so a missing one was deleted since.
 */
function detailsOf(health: StoreHealth | { store: 'custom' }, timeoutMs: number, createTable: boolean): DynamoLockHealthDetails {
  if (health.store !== 'dynamodb') return { store: health.store };
  const { table, tableStatus, latencyMs } = health;
  if (tableStatus === undefined) return { store: 'dynamodb', table, latencyMs, message: failureMessage(health, timeoutMs, createTable) };
  const details: DynamoLockHealthDetails = { store: 'dynamodb', table, tableStatus, latencyMs };
  return tableStatus === 'ACTIVE' ? details : { ...details, message: HEALTH_NOT_ACTIVE(table, tableStatus) };
}

/** Why the table could not be checked, in words. */
function failureMessage(health: TableHealth, timeoutMs: number, createTable: boolean): string {
  switch (health.failure) {
    case 'aborted':
      return HEALTH_TIMEOUT(health.table, timeoutMs);
    case 'missing':
      return HEALTH_TABLE_MISSING(health.table, health.endpoint, createTable);
    default:
      return HEALTH_UNREACHABLE(health.table, health.error);
  }
}

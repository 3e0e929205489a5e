import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { Injectable } from '@nestjs/common';
import { type HealthIndicatorResult, HealthIndicatorService } from '@nestjs/terminus';
import { LockService } from '../lock.service';
import { internalsOf } from '../core/lock.internals';
import { LockStore } from '../store/lock.store';
import { MemoryLockStore } from '../store/memory-lock.store';
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
 * `"locks": { "status": "up", "store": "dynamodb", "table": "locks", "tableStatus": "ACTIVE", "latencyMs": 12 }`.
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
    const store = internalsOf(this.lockService).store;
    if (!(store instanceof LockStore)) {
      const details: DynamoLockHealthDetails = { store: store instanceof MemoryLockStore ? 'memory' : 'custom' };
      return indicator.up(details);
    }

    const table = store.tableName;
    const started = performance.now();
    const latency = () => Math.round(performance.now() - started);
    try {
      const answer = await withTimeout(timeoutMs, (signal) =>
        this.lockService.client.send(new DescribeTableCommand({ TableName: table }), { abortSignal: signal }),
      );
      const tableStatus = answer.Table?.TableStatus ?? 'UNKNOWN';
      const details: DynamoLockHealthDetails = { store: 'dynamodb', table, tableStatus, latencyMs: latency() };
      if (tableStatus === 'ACTIVE') return indicator.up(details);
      return indicator.down({ ...details, message: HEALTH_NOT_ACTIVE(table, tableStatus) });
    } catch (error) {
      const details: DynamoLockHealthDetails = { store: 'dynamodb', table, latencyMs: latency() };
      if (error instanceof HealthTimeoutError) return indicator.down({ ...details, message: HEALTH_TIMEOUT(table, timeoutMs) });
      if (errorName(error) === 'ResourceNotFoundException') return indicator.down({ ...details, message: HEALTH_TABLE_MISSING(table) });
      return indicator.down({ ...details, message: HEALTH_UNREACHABLE(table, error) });
    }
  }
}

class HealthTimeoutError extends Error {}

/**
 * Runs `fn` with a signal that aborts after `ms`, and rejects with {@link HealthTimeoutError}
 * at that moment even if `fn` ignores the signal (e.g. while the SDK waits between retries).
 */
async function withTimeout<T>(ms: number, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const reason = new HealthTimeoutError(`timed out after ${ms} ms`);
      controller.abort(reason);
      reject(reason);
    }, ms);
  });
  const work = fn(controller.signal);
  // Once the timeout won, the aborted request's own rejection is expected: do not report it as unhandled.
  work.catch(() => undefined);
  try {
    return await Promise.race([work, expired]);
  } finally {
    clearTimeout(timer);
  }
}

function errorName(error: unknown): string | undefined {
  return error instanceof Error ? error.name : undefined;
}

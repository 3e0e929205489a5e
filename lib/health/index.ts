/**
 * The `nestjs-dynamo-lock/health` entry point: a `@nestjs/terminus` health indicator for the
 * lock table. A separate entry point so that `nestjs-dynamo-lock` itself never loads
 * `@nestjs/terminus`, an optional peer dependency needed only here.
 *
 * @example
 * ```ts
 * import { DynamoLockHealthIndicator } from 'nestjs-dynamo-lock/health';
 * ```
 * @module nestjs-dynamo-lock/health
 */
export {
  DynamoLockHealthIndicator,
  DEFAULT_HEALTH_TIMEOUT_MS,
  type DynamoLockHealthDetails,
  type DynamoLockHealthOptions,
} from './dynamo-lock.health';

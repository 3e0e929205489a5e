import type { DynamoDBClient, DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import type { LockLogger } from './lock-logger.interface';
import type { LockItemStore } from './lock-item-store.interface';
import type { LockEventListener } from './lock-event.interface';
import type { LockSortKey } from './lock-table-keys.interface';
import type { Duration } from '../utils/duration';

/** Options of `DynamoLockModule.forRoot()` and of a standalone `LockManager`. */
export interface DynamoLockOptions {
  /** Lock table name. Default: env `DYNAMO_LOCK_TABLE`, else `'nestjs-dynamo-lock'`. */
  tableName?: string;
  /** How long a lock stays valid without a heartbeat. Default `'30s'`. */
  leaseDuration?: Duration;
  /** How often a held lock is renewed. Must be shorter than the lease. Default: a third of the lease. */
  heartbeatInterval?: Duration;
  /** Default for `acquire({ wait })`: `true` waits without limit, `false` tries once. Default: two leases. */
  wait?: Duration | boolean;
  /**
   * Longest pause between two reads of a waiter in another process than the holder's: the knob
   * between cost and hand-over latency. Waiters poll when a release is due (from the key's usual
   * hold time) and back off up to this. Lower = faster notice of unexpected releases (graceful
   * shutdowns), more reads. Default `'1s'`.
   */
  maxPollInterval?: Duration;
  /**
   * Time limit of each DynamoDB request the library sends (SDK retries included), with its own
   * client or yours: a request without an answer by then is aborted and counts as a transient
   * failure. A wait therefore ends by `wait` plus one request limit, and `tryAcquire()` within
   * one. Default: a third of `leaseDuration`, at most `'3s'` (3 s at the default lease).
   */
  requestTimeout?: Duration;
  /** Days after its last write before DynamoDB TTL may delete an idle lock item; `0` disables. Default 2. */
  ttlDays?: number;
  /** The DynamoDB client to use. The library never destroys a client it was given. */
  client?: DynamoDBClient;
  /**
   * Configuration for a client the library creates (and destroys on shutdown). Without an
   * `endpoint`, env `DYNAMODB_ENDPOINT` sets it, else the AWS SDK's own `AWS_ENDPOINT_URL_DYNAMODB`.
   */
  clientConfig?: DynamoDBClientConfig;
  /** Create the table (on-demand, TTL on) at start-up when it is missing. Default `false`. */
  createTable?: boolean;
  /** Check at start-up that the table exists with the right schema (one DescribeTable). Default `true`. */
  verifyTable?: boolean;
  /** Human-readable owner name stored with each lock. Default `<host name>:<pid>`. */
  ownerName?: string;
  /**
   * Prefix added to every key, to share one table between apps, or to keep lock partitions apart
   * from your items' in a table shared with them (`'LOCK#'`). Default `''`.
   */
  keyPrefix?: string;
  /**
   * Name of the table's partition key attribute (String), for a table shared with the app's own
   * items (`'PK'`, `'pk'`): it holds `keyPrefix` + the lock's key. Default `'key'`, the library's
   * own table. The start-up check fails when the table's key schema differs.
   */
  partitionKey?: string;
  /**
   * The table's sort key and the fixed value every lock item has in it, for a table with one:
   * `{ name: 'SK', value: 'LOCK' }`. Lock items are then `{ PK: keyPrefix + key, SK: 'LOCK' }`, and
   * `list()` reads only items with that value. Default: no sort key.
   */
  sortKey?: LockSortKey;
  /**
   * Where lock items live, instead of DynamoDB: a `MemoryLockStore`, for tests (see
   * `DynamoLockModule.forTesting()`). When set, `client`, `clientConfig` and the table options
   * (`tableName`, `partitionKey`, `sortKey`, `createTable`, `verifyTable`) are not used; they are still checked.
   */
  store?: LockItemStore;
  /**
   * Called with every lock event (waiting, takeover, acquired, busy, extended, released, lost,
   * retry), in order. Must not throw (a throw is logged and ignored); keep it fast, it runs on
   * the lock's path. More listeners can be added with `subscribe()`.
   */
  onEvent?: LockEventListener;
  /**
   * Emit every lock event on the app's `EventEmitter2` as `dynamo-lock.<type>` (see
   * `LOCK_EVENT_NAMES`). `'auto'` (default): when `@nestjs/event-emitter` is installed and its
   * module imported; `true`: the same, failing the start-up when it is not; `false`: never.
   * Only `DynamoLockModule` reads it.
   */
  eventEmitter?: boolean | 'auto';
  /**
   * Record OpenTelemetry spans (`dynamo_lock.acquire`, `dynamo_lock.hold`) and metrics through
   * the global providers of `@opentelemetry/api`, when that package is installed. Default `true`;
   * without a registered SDK the API's no-op providers make it free.
   */
  telemetry?: boolean;
  /** Logger; default a Nest `Logger` with context `DynamoLock` in `LockService`, warnings on stderr for a standalone `LockManager`. */
  logger?: LockLogger;
}

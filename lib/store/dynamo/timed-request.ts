import type {
  DeleteItemCommand,
  DeleteItemCommandOutput,
  DescribeTableCommand,
  DescribeTableCommandOutput,
  DynamoDBClient,
  GetItemCommand,
  GetItemCommandOutput,
  PutItemCommand,
  PutItemCommandOutput,
  ScanCommand,
  ScanCommandOutput,
  TransactWriteItemsCommand,
  TransactWriteItemsCommandOutput,
  UpdateItemCommand,
  UpdateItemCommandOutput,
} from '@aws-sdk/client-dynamodb';
import type { LockTableKeys } from '../../interfaces/lock-table-keys.interface';
import type { LockEntryPoint } from '../../errors/entry-point';
import { REQUEST_TIMED_OUT } from '../../errors/lock.messages';
import { missingTableError } from './lock-table';

/** The requests sent with a time limit: the lock table's, and the fenced writes to the caller's tables. */
export type TimedCommand =
  UpdateItemCommand | GetItemCommand | ScanCommand | PutItemCommand | DeleteItemCommand | TransactWriteItemsCommand | DescribeTableCommand;

/** The answer of each {@link TimedCommand}. */
export type TimedOutput =
  | UpdateItemCommandOutput
  | GetItemCommandOutput
  | ScanCommandOutput
  | PutItemCommandOutput
  | DeleteItemCommandOutput
  | TransactWriteItemsCommandOutput
  | DescribeTableCommandOutput;

/**
 * The abort signal a request is sent with, in the minimal form the SDK takes beside the platform's
 * (`aborted`, `onabort`; older SDK versions knew only this one). A platform `AbortSignal` costs an
 * `EventTarget`, and listeners the SDK adds and removes on every attempt: about 7% of the client's
 * CPU for an acquire and a release, measured against sending the same requests without a signal.
 * The SDK keeps one `onabort` handler, the attempt in flight's, which destroys its HTTP request;
 * an attempt that starts after the abort is refused at once.
 */
class RequestAbort {
  aborted = false;
  reason: unknown;
  onabort: ((this: RequestAbort) => void) | null = null;

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.onabort?.();
  }
}

/** The SDK's Node.js handlers, which take the minimal signal; any other (`fetch`, a custom one) gets a platform `AbortSignal`. */
const MINIMAL_SIGNAL_HANDLERS = new Set(['NodeHttpHandler', 'NodeHttp2Handler']);
const takesMinimal = new WeakMap<DynamoDBClient, boolean>();

/**
 * Whether the client's HTTP handler is one of the SDK's Node.js handlers, which look at `aborted`
 * and `onabort` when a signal has no `addEventListener` ({@link RequestAbort}). A `fetch` handler
 * passes the signal on to `fetch`, which takes a platform `AbortSignal` only; so does any handler
 * not known here (checked once per client).
 */
function takesMinimalSignal(client: DynamoDBClient): boolean {
  let known = takesMinimal.get(client);
  if (known === undefined) {
    const handler: unknown = (client.config as { requestHandler?: unknown } | undefined)?.requestHandler;
    const name = typeof handler === 'object' && handler !== null ? handler.constructor?.name : undefined;
    known = name !== undefined && MINIMAL_SIGNAL_HANDLERS.has(name);
    takesMinimal.set(client, known);
  }
  return known;
}

/** A request's abort: the minimal signal where the client's handler takes it, else a platform one. */
function requestAbort(client: DynamoDBClient): {
  signal: RequestAbort | AbortSignal;
  abort(reason: unknown): void;
  aborted(): boolean;
  reason(): unknown;
} {
  if (takesMinimalSignal(client)) {
    const abort = new RequestAbort();
    return { signal: abort, abort: (reason) => abort.abort(reason), aborted: () => abort.aborted, reason: () => abort.reason };
  }
  const controller = new AbortController();
  return {
    signal: controller.signal,
    abort: (reason) => controller.abort(reason),
    aborted: () => controller.signal.aborted,
    reason: () => controller.signal.reason as unknown,
  };
}

/**
 * Sends one request within `limitMs` (none when `undefined`). The SDK gets an abort signal, and a
 * timer also races it, because the SDK may not look at the signal between its own retries. When
 * the limit runs out, the request rejects with an error named `TimeoutError` (transient for the
 * engine) whose message is `timeoutMessage(lastAttempt)` and whose cause is the error of the SDK's
 * last failed attempt, when it was retrying. `O` is the answer of `command` (the SDK's
 * overloads name it per command; the caller names it once here).
 */
export async function sendWithinLimit<O extends TimedOutput>(
  client: DynamoDBClient,
  command: TimedCommand,
  limitMs: number | undefined,
  timeoutMessage: (lastAttempt: unknown) => string,
): Promise<O> {
  const abort = requestAbort(client);
  let timer: NodeJS.Timeout | undefined;
  // The error of the SDK's last failed attempt: the time-out's cause when the SDK was retrying.
  let lastAttempt: unknown;
  const timedOut = new Promise<never>((_, reject) => {
    if (limitMs === undefined || !Number.isFinite(limitMs)) return;
    timer = setTimeout(() => {
      const error = Object.assign(new Error(timeoutMessage(lastAttempt), lastAttempt === undefined ? undefined : { cause: lastAttempt }), {
        name: 'TimeoutError',
      });
      abort.abort(error);
      reject(error);
    }, limitMs);
  });
  // The client and the middleware stack have one overload per command, and none for the union.
  const sdkCommand = command as UpdateItemCommand;
  // Inside the SDK's retry loop, so it sees each attempt (on this command only).
  sdkCommand.middlewareStack.add(
    (next) => async (args) => {
      try {
        return await next(args);
      } catch (error) {
        lastAttempt = error;
        throw error;
      }
    },
    { step: 'finalizeRequest', priority: 'normal', name: 'dynamoLockLastAttempt' },
  );
  try {
    const sent = client.send(sdkCommand, { abortSignal: abort.signal }) as Promise<unknown> as Promise<O>;
    return await Promise.race([sent, timedOut]);
  } catch (error) {
    // The SDK's own abort error, when it noticed the signal first, is our timeout.
    if (abort.aborted()) throw abort.reason();
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Sends one request to the lock table within `requestTimeoutMs` ({@link sendWithinLimit}): a hung
 * server yields a `TimeoutError` (transient, so retried or reported as an outage, never as a busy
 * lock). A table deleted under a running app becomes a `LockTableError`.
 */
export function sendToTable(
  client: DynamoDBClient,
  operation: 'UpdateItem',
  command: UpdateItemCommand,
  table: TableTarget,
): Promise<UpdateItemCommandOutput>;
export function sendToTable(
  client: DynamoDBClient,
  operation: 'GetItem',
  command: GetItemCommand,
  table: TableTarget,
): Promise<GetItemCommandOutput>;
export function sendToTable(
  client: DynamoDBClient,
  operation: 'Scan',
  command: ScanCommand,
  table: TableTarget,
): Promise<ScanCommandOutput>;
export function sendToTable(
  client: DynamoDBClient,
  operation: 'TransactWriteItems',
  command: TransactWriteItemsCommand,
  table: TableTarget,
): Promise<TransactWriteItemsCommandOutput>;
export async function sendToTable(
  client: DynamoDBClient,
  operation: string,
  command: UpdateItemCommand | GetItemCommand | ScanCommand | TransactWriteItemsCommand,
  { tableName, requestTimeoutMs, keys, createTable = false, entryPoint = 'LockManager' }: TableTarget,
): Promise<UpdateItemCommandOutput | GetItemCommandOutput | ScanCommandOutput | TransactWriteItemsCommandOutput> {
  try {
    return await sendWithinLimit(client, command, requestTimeoutMs, (lastAttempt) =>
      REQUEST_TIMED_OUT(operation, tableName, requestTimeoutMs ?? 0, lastAttempt),
    );
  } catch (error) {
    if (error instanceof Error && error.name === 'ResourceNotFoundException') {
      throw await missingTableError(client, tableName, entryPoint, createTable ? 'gone' : 'missing', keys);
    }
    throw error;
  }
}

/**
 * The table a request goes to, its time limit in ms (none when absent), and where lock items sit in
 * it; and, for the error of a missing table, whether the options create it at start-up and what
 * they were written for.
 */
export interface TableTarget {
  tableName: string;
  requestTimeoutMs?: number;
  /** The table's key attributes (default: partition key `key`, no sort key). */
  keys?: LockTableKeys;
  createTable?: boolean;
  entryPoint?: LockEntryPoint;
}

import {
  type DynamoDBClient,
  InternalServerError,
  ProvisionedThroughputExceededException,
  ThrottlingException,
} from '@aws-sdk/client-dynamodb';
import { commandName } from './command-name';

/**
 * Kinds of injected failure, each shaped so the SDK's standard retry strategy
 * classifies it as retryable (see `@smithy/core/retry` service-error-classification):
 *
 * - `lost-response`: the request reaches the server and is applied, then the
 *   client sees a `TimeoutError` (transient) instead of the response.
 * - `network-error`: an `ECONNRESET` error (transient) before anything is sent.
 * - `throttling`: a modeled `ThrottlingException` (throttling, HTTP 400).
 * - `throughput-exceeded`: a modeled `ProvisionedThroughputExceededException` (throttling).
 * - `server-error`: a modeled `InternalServerError` with HTTP 500 (transient).
 * - `slow-response`: no failure: the request reaches the server `delayMs` late (a slow network), and
 *   its real answer comes back.
 *
 * Note the SDK backs off before each retry: up to 50·2^n ms for transient
 * errors, up to 1000·2^n ms for throttling errors.
 */
export type FaultKind = 'lost-response' | 'network-error' | 'throttling' | 'throughput-exceeded' | 'server-error' | 'slow-response';

/** One queued fault. */
export interface FaultSpec {
  readonly kind: FaultKind;
  /** How many consecutive matching attempts fail (default 1). */
  readonly times?: number;
  /**
   * Send the request to the server before failing (default: true only for
   * `lost-response`); models a server error after the write was applied.
   */
  readonly reachServer?: boolean;
  /** Wait this long before the failure surfaces (default 0): a response lost after a long silence. */
  readonly delayMs?: number;
}

/** A fault that was injected. */
export interface InjectedFault {
  readonly command: string;
  readonly kind: FaultKind;
  /** Whether the request reached the server first. */
  readonly reachedServer: boolean;
}

/** Controls the faults of one client; see {@link injectFaults}. */
export interface FaultInjector {
  /**
   * Makes the next `times` attempts of `command` (`'UpdateItem'`,
   * `'UpdateItemCommand'`, or `'*'` for any) fail. Queued specs apply in order.
   */
  failNext(command: string, fault: FaultSpec): this;
  /** Attempts still set to fail. */
  pending(): number;
  /** Faults injected so far, oldest first. */
  readonly injected: readonly InjectedFault[];
  /** Drops queued faults and the injected history. */
  clear(): void;
  /** Removes the middleware from the client. */
  detach(): void;
}

interface QueuedFault {
  readonly command: string;
  readonly kind: FaultKind;
  readonly reachServer: boolean;
  readonly delayMs: number;
  remaining: number;
}

let nextId = 0;

/**
 * Adds a middleware to `client`, inside the SDK's retry loop, that fails
 * chosen attempts. Each failed attempt is then retried (or not) by the SDK
 * exactly as a real failure would be.
 */
export function injectFaults(client: DynamoDBClient): FaultInjector {
  const queue: QueuedFault[] = [];
  const injected: InjectedFault[] = [];
  const name = `testFaultInjection-${++nextId}`;

  const take = (command: string): QueuedFault | undefined => {
    const fault = queue.find((queued) => queued.command === command || queued.command === '*');
    if (fault === undefined) return undefined;
    if (--fault.remaining === 0) queue.splice(queue.indexOf(fault), 1);
    return fault;
  };

  client.middlewareStack.add(
    (next, context) => async (args) => {
      const command = context.commandName ?? 'UnknownCommand';
      const fault = take(command);
      if (fault === undefined) return next(args);
      injected.push({ command, kind: fault.kind, reachedServer: fault.reachServer || fault.kind === 'slow-response' });
      if (fault.kind === 'slow-response') {
        // Not a failure: the request goes out `delayMs` late, and its real answer comes back.
        await new Promise((resolve) => setTimeout(resolve, fault.delayMs));
        return next(args);
      }
      if (fault.reachServer) {
        // Whatever the server answered is lost.
        await next(args).catch(() => undefined);
      }
      if (fault.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, fault.delayMs));
      throw faultError(fault.kind, command);
    },
    // The retry middleware is in `finalizeRequest` with high priority; low runs inside it.
    { step: 'finalizeRequest', priority: 'low', name },
  );

  const injector: FaultInjector = {
    failNext(command, { kind, times = 1, reachServer = kind === 'lost-response', delayMs = 0 }) {
      if (!Number.isInteger(times) || times < 1) throw new Error(`failNext: times must be a positive integer, got ${times}`);
      queue.push({ command: commandName(command), kind, reachServer, delayMs, remaining: times });
      return this;
    },
    pending: () => queue.reduce((sum, queued) => sum + queued.remaining, 0),
    injected,
    clear: () => {
      queue.length = 0;
      injected.length = 0;
    },
    detach: () => {
      client.middlewareStack.remove(name);
    },
  };
  return injector;
}

/** Builds the error for one injected fault. */
export function faultError(kind: FaultKind, command: string): Error {
  const message = `Injected fault (${kind}) on ${command}`;
  switch (kind) {
    case 'lost-response':
      // What the Node HTTP handler throws when a response does not arrive in time.
      return Object.assign(new Error(`${message}: request sent, response lost`), { name: 'TimeoutError' });
    case 'network-error':
      return Object.assign(new Error(`${message}: socket hang up`), { code: 'ECONNRESET' });
    case 'throttling':
      return new ThrottlingException({ message, $metadata: { httpStatusCode: 400 } });
    case 'throughput-exceeded':
      return new ProvisionedThroughputExceededException({ message, $metadata: { httpStatusCode: 400 } });
    case 'server-error':
      return new InternalServerError({ message, $metadata: { httpStatusCode: 500 } });
    case 'slow-response':
      throw new Error('slow-response is not a failure');
  }
}

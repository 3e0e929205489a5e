import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { commandName } from './command-name';

/** Counts per command name (`PutItemCommand`) and outcome (`ok` or an error name). */
export type RequestCounts = Record<string, Record<string, number>>;

/** What {@link countRequests} counts. */
export interface RequestCounterOptions {
  /**
   * `command` (default): one count per `client.send()`, with its final outcome
   * after SDK retries. `attempt`: one count per HTTP exchange that reached the
   * server, with the server's answer (injected faults before sending are not
   * counted; a lost response counts with the server's real outcome).
   */
  readonly level?: 'command' | 'attempt';
}

/** Live counts of a client's requests; see {@link countRequests}. */
export interface RequestCounter {
  /** A copy of the counts so far, e.g. `{ PutItemCommand: { ok: 1 } }`. */
  snapshot(): RequestCounts;
  /** Count for one command (`'PutItem'` or `'PutItemCommand'`), optionally one outcome. */
  count(command: string, outcome?: string): number;
  /** Count over all commands. */
  total(): number;
  /** Sets every count back to zero. */
  reset(): void;
  /** Removes the middleware from the client. */
  detach(): void;
}

let nextId = 0;

/**
 * Attaches a middleware to `client` that counts its requests by command and
 * outcome (`ok`, `ConditionalCheckFailedException`, any other error name).
 */
export function countRequests(client: DynamoDBClient, { level = 'command' }: RequestCounterOptions = {}): RequestCounter {
  let counts: RequestCounts = {};
  const record = (command: string, outcome: string): void => {
    const byOutcome = (counts[command] ??= {});
    byOutcome[outcome] = (byOutcome[outcome] ?? 0) + 1;
  };
  const name = `testRequestCounter-${level}-${++nextId}`;
  const count = async <T>(command: string | undefined, send: () => Promise<T>): Promise<T> => {
    try {
      const result = await send();
      record(command ?? 'UnknownCommand', 'ok');
      return result;
    } catch (error) {
      record(command ?? 'UnknownCommand', error instanceof Error ? error.name : 'UnknownError');
      throw error;
    }
  };
  if (level === 'command') {
    // Outermost step: wraps the retry loop, sees each send()'s final outcome.
    client.middlewareStack.add((next, context) => (args) => count(context.commandName, () => next(args)), {
      step: 'initialize',
      priority: 'high',
      name,
    });
  } else {
    // Inside the retry loop and fault injection, right outside the response
    // parser: sees each attempt that reached the server, with its parsed outcome.
    client.middlewareStack.add((next, context) => (args) => count(context.commandName, () => next(args)), {
      step: 'deserialize',
      priority: 'high',
      name,
    });
  }

  return {
    snapshot: () => structuredClone(counts),
    count: (command, outcome) => {
      const byOutcome = counts[commandName(command)] ?? {};
      if (outcome !== undefined) return byOutcome[outcome] ?? 0;
      return Object.values(byOutcome).reduce((sum, n) => sum + n, 0);
    },
    total: () =>
      Object.values(counts)
        .flatMap((byOutcome) => Object.values(byOutcome))
        .reduce((sum, n) => sum + n, 0),
    reset: () => {
      counts = {};
    },
    detach: () => {
      client.middlewareStack.remove(name);
    },
  };
}

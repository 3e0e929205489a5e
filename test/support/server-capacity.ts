import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * A server of limited capacity in front of a store or a client: `workers` requests are worked on at
 * once, `serviceMs` each, first come first served; the rest wait their turn (as on a busy server,
 * where a request's time limit runs while it waits). Off until {@link ServerCapacity.on} is set.
 */
export class ServerCapacity {
  /** Whether requests are held to the capacity now. */
  on = false;
  /** Requests waiting or worked on now, and the most at once since the last {@link reset}. */
  inFlight = 0;
  maxInFlight = 0;
  /** Requests answered since the last {@link reset}. */
  answered = 0;
  private readonly freeAt: number[];

  constructor(
    workers: number,
    private readonly serviceMs: number,
  ) {
    this.freeAt = new Array<number>(workers).fill(0);
  }

  /** Runs `request` once its turn came and its service time passed. */
  async through<T>(request: () => Promise<T>): Promise<T> {
    if (!this.on) return request();
    this.maxInFlight = Math.max(this.maxInFlight, ++this.inFlight);
    try {
      const now = performance.now();
      const worker = this.freeAt.indexOf(Math.min(...this.freeAt));
      this.freeAt[worker] = Math.max(now, this.freeAt[worker]) + this.serviceMs;
      await sleep(this.freeAt[worker] - now);
      const result = await request();
      this.answered++;
      return result;
    } finally {
      this.inFlight--;
    }
  }

  /** Starts counting anew. */
  reset(): void {
    this.maxInFlight = this.inFlight;
    this.answered = 0;
  }

  /** Holds the `UpdateItem` requests of `client` (heartbeats, among others) to this capacity. */
  gateUpdates(client: DynamoDBClient): void {
    client.middlewareStack.add(
      (next, context) => (args) => (context.commandName === 'UpdateItemCommand' ? this.through(() => next(args)) : next(args)),
      { step: 'initialize', priority: 'low', name: 'testServerCapacity' },
    );
  }
}

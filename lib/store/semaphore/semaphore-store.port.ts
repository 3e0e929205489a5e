/**
 * The words a semaphore store and its callers speak ({@link SemaphoreStorePort}), next to the
 * mutex's (`store/mutex/mutex-store.protocol.ts`). Both semaphore stores and the engine import them from here.
 *
 * One item per semaphore key: the holders (a bounded map), their count, a fencing counter and a
 * line of tickets (`lineHead`, `lineTail`). Every write is one conditional `UpdateItem`.
 */
import type { SemaphoreRecord } from './semaphore.record';

/** Result of a conditional semaphore write. `current` is the item that blocked it, when the server returned it. */
export type SemaphoreWriteResult = { ok: true; record: SemaphoreRecord } | { ok: false; current: SemaphoreRecord | undefined };

/** A grant of one slot: the writer becomes a holder, with the fencing counter plus one as its token. */
export interface SemaphoreGrant {
  key: string;
  limit: number;
  token: string;
  owner: string;
  leaseMs: number;
  /** Creates the item (it must not exist yet), with the writer as its first holder. */
  create?: boolean;
  /**
   * Absent: a free grant, only while nobody waits (`lineHead` = `lineTail`), so a caller that
   * just released never jumps ahead of the line. Present: the writer's ticket, admitted when
   * `lineHead` is `seenHead` and every ticket from there to it was given up (or it is `seenHead`).
   */
  line?: { ticket: number; seenHead: number };
}

/** The store of semaphore items. The DynamoDB store is the product; the in-memory one mirrors it for tests. */
export interface SemaphoreStorePort {
  /** Grants a slot when the semaphore has one free (see {@link SemaphoreGrant}). */
  grant(write: SemaphoreGrant): Promise<SemaphoreWriteResult>;
  /** Takes the next ticket in line; the answer is the item as written (the ticket is `tail - 1`). */
  enqueue(key: string, limit: number, token: string): Promise<SemaphoreWriteResult>;
  /** Marks a ticket given up, so the line skips it at once. */
  abandon(key: string, ticket: number): Promise<SemaphoreWriteResult>;
  /** Passes the ticket at the head of the line, whose waiter stayed silent while a slot was free. */
  passHead(key: string, seenHead: number): Promise<SemaphoreWriteResult>;
  /** Renews a holder: a new version of its entry only; a new lease unless `undefined`. */
  heartbeat(key: string, token: string, leaseMs: number | undefined): Promise<SemaphoreWriteResult>;
  /** Frees the slot of `token`; `false` when it did not hold one. `heldMs` is recorded for waiters. */
  release(key: string, token: string, leaseMs: number, heldMs?: number): Promise<boolean>;
  /** Frees the slot of a holder whose version `seenVersion` stayed unchanged for its whole lease. */
  pass(key: string, token: string, seenVersion: string): Promise<SemaphoreWriteResult>;
  /** Reads one semaphore item (strongly consistent). */
  read(key: string): Promise<SemaphoreRecord | undefined>;
  /**
   * Every semaphore item with at least one holder whose key starts with `prefix` (for `list()`).
   * Optional: with a store that lacks it, `list()` reports mutexes only (no semaphore).
   */
  scanHeld?(prefix: string): AsyncGenerator<SemaphoreRecord>;
}

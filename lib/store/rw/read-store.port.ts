import type { WriteResult } from '../mutex/mutex-store.protocol';
import type { ReaderEntry } from './read.record';

/** A reader's write of its own entry. */
export interface ReaderWrite {
  /** The mutex item's key. */
  key: string;
  /** The entry as written (a new version on every write). */
  entry: ReaderEntry;
  /** An upgradeable reader's start or join: it takes the group's one upgrader slot. */
  upgradeable?: boolean;
}

/** The write lock an upgrading reader becomes: a mutex holder by token. */
export interface UpgradeHolder {
  token: string;
  owner: string;
  leaseMs: number;
}

/**
 * A join: the line as the reader last saw it, which the write requires unchanged, with every
 * ticket between `head` and `tail` left (nobody waits behind the group).
 */
export interface JoinWrite extends ReaderWrite {
  /** The ticket served as the reader saw it (the group's). */
  head: number;
  /** The next ticket as the reader saw it. */
  tail: number;
}

/**
 * The writes of readers on mutex items (see `read.record.ts`): each one conditional write on the
 * item, as the mutex's own. The DynamoDB store is the product; the memory store mirrors it.
 */
export interface ReadStorePort {
  /** Starts a read group on a free item (the mutex's free condition): the reader takes ticket `tail`, served at once. */
  start(write: ReaderWrite): Promise<WriteResult>;
  /**
   * Joins the read group holding the item while nobody waits behind it (`head`, `tail` as seen) and
   * it has room. A writer's ticket in line refuses every join: writers are not starved.
   */
  join(write: JoinWrite): Promise<WriteResult>;
  /** Renews a reader's entry (a new version; the group's lease raised to it when longer). Refused: the reader lost the key. */
  heartbeat(write: ReaderWrite): Promise<WriteResult>;
  /**
   * Removes a reader's entry; the last reader's release ends the group as a mutex release does
   * (the next ticket served, the fencing counter raised). `heldMs` is recorded for waiters.
   * @returns `false` when the entry was not there (passed, or the group passed).
   */
  release(key: string, id: string, leaseMs: number, heldMs?: number): Promise<boolean>;
  /** Removes the entry `seen`, unchanged since it was seen for its whole lease (its reader is gone); the last one ends the group. */
  pass(key: string, seen: ReaderEntry): Promise<WriteResult>;
  /** The upgradeable reader `id` starts upgrading: from now no reader joins the group (writers stay in line). */
  claimUpgrade(key: string, id: string): Promise<WriteResult>;
  /**
   * The upgrading reader, the group's only one now, becomes a write lock in one write: the group's
   * ticket stays served (no writer in line gets in between), the fencing counter rises by one.
   */
  convert(key: string, id: string, holder: UpgradeHolder): Promise<WriteResult>;
  /** The upgrading reader gives up upgrading (it stays a reader): readers may join again. */
  abandonUpgrade(key: string, id: string): Promise<WriteResult>;
}

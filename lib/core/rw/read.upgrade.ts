import { LockBusyError, LockLostError } from '../../errors/lock.errors';
import { UPGRADE_BUSY, UPGRADE_LOST } from '../../errors/lock.messages';
import type { LockRecord } from '../../store/mutex/mutex.record';
import type { MutexStorePort } from '../../store/mutex/mutex-store.port';
import type { WriteResult } from '../../store/mutex/mutex-store.protocol';
import { readerIdOf, readerOf, readersOf } from '../../store/rw/read.record';
import type { ReadStorePort, UpgradeHolder } from '../../store/rw/read-store.port';
import { isTransientError } from '../../store/dynamo/transient-error';
import { jitter, monotonicNow, sleep } from '../../utils/clock';
import type { KeyHistory } from '../engine/key-history';
import { silentReaders } from './reader.watch';

/** Shortest and longest pause between reads while the other readers leave. */
const POLL_MIN_MS = 5;
const POLL_GROWTH = 1.5;

/** What an upgrade needs from its primitive. */
export interface UpgradeHost {
  readonly store: ReadStorePort;
  readonly mutex: Pick<MutexStorePort, 'read' | 'release'>;
  /** Entry versions as first seen, per key, across calls (the readers' watch of silent entries). */
  readonly history: KeyHistory;
  readonly maxPollMs: number;
  /** Runs a write in the background after the upgrade ended; shutdown waits for it. */
  later(task: () => Promise<void>): void;
}

/** One upgrade: the reader's key and token, the write lock it becomes, and until when it waits. */
export interface UpgradeRequest {
  key: string;
  storedKey: string;
  /** The upgradeable reader's owner token. */
  token: string;
  holder: UpgradeHolder;
  /** Monotonic start and deadline of the wait for the other readers (equal: one attempt). */
  startedAt: number;
  deadline: number;
  signal: AbortSignal | undefined;
}

/** The write lock an upgrade made: the item as its converting write left it, and when that write was sent. */
export interface Upgraded {
  record: LockRecord;
  sentAt: number;
}

/**
 * Turns an upgradeable read lock into a write lock: marks the group upgrading (no reader joins
 * from then on; writers in line stay behind the group's ticket), waits until this reader is the
 * group's only one (passing readers silent for their lease, as waiting readers do), then converts
 * the group into this reader's write lock in one write. Every turn checks the wait and the signal,
 * and marks the group again if the mark went. A request without an answer (a timeout, a network
 * error) is retried until the deadline; a conversion whose answer was lost is recognised by this
 * caller's write token in the item, its lease counted from the first conversion sent. Given up
 * (the wait ran out, the signal aborted), the mark goes (`abandon`, retried in the background)
 * and the lock stays a read lock.
 * @throws LockBusyError when other readers stay for the whole wait; LockLostError when the read lock is gone.
 */
export async function upgradeReader(host: UpgradeHost, request: UpgradeRequest): Promise<Upgraded> {
  const { store, mutex } = host;
  const id = readerIdOf(request.token);
  let current: LockRecord | undefined;
  let claimed = false;
  let firstConvertAt: number | undefined;
  let streak = 0;
  try {
    for (;;) {
      request.signal?.throwIfAborted();
      try {
        if (!claimed || current?.upgrading !== id) {
          // Set before the claim is sent: a claim that lands without an answer must be abandoned too.
          claimed = true;
          const claim = await store.claimUpgrade(request.storedKey, id);
          current = await answerOf(host, request.storedKey, claim);
        }
        if (!readerOf(current, id)) {
          // Converted by a write whose answer was lost: this caller's write token holds the item.
          if (firstConvertAt !== undefined && current?.token === request.holder.token) return adopt(host, request, current, firstConvertAt);
          throw lost(request.key);
        }
        // Marked just now if it was not: still not marked, the slot is no longer this reader's.
        if (current?.upgrading !== id) throw lost(request.key);
        const others = readersOf(current).filter((entry) => entry.id !== id);
        if (others.length === 0) {
          const sentAt = monotonicNow();
          firstConvertAt ??= sentAt;
          const result = await store.convert(request.storedKey, id, request.holder);
          if (result.ok) return { record: result.record, sentAt: firstConvertAt };
          current = await answerOf(host, request.storedKey, result);
          if (current?.token === request.holder.token) return adopt(host, request, current, firstConvertAt);
        } else {
          const dead = silentReaders(host.history, request.storedKey, others, monotonicNow())[0];
          if (dead) {
            current = await answerOf(host, request.storedKey, await store.pass(request.storedKey, dead));
            continue;
          }
        }
      } catch (error) {
        // No answer: tried again (a conversion may have landed: the next read shows it), until the deadline.
        if (!isTransientError(error)) throw error;
        current = undefined;
      }
      const now = monotonicNow();
      if (now >= request.deadline) {
        const waited = Math.round(now - request.startedAt);
        const single = request.deadline <= request.startedAt;
        const others = Math.max(0, readersOf(current).length - 1);
        throw new LockBusyError(UPGRADE_BUSY(request.key, others, single ? undefined : waited), request.key, undefined, waited);
      }
      const pause = jitter(Math.min(host.maxPollMs, POLL_MIN_MS * POLL_GROWTH ** Math.min(streak++, 30)), 0.1);
      await sleep(Math.min(pause, request.deadline - now), request.signal);
      current = await mutex.read(request.storedKey).catch((error: unknown) => {
        if (!isTransientError(error)) throw error;
        return undefined;
      });
    }
  } catch (error) {
    // A conversion sent whose answer never came may have landed: one read tells (the write lock is
    // this caller's then, or given back when too little of its lease is left).
    if (firstConvertAt !== undefined) {
      const after = await mutex.read(request.storedKey).catch(() => undefined);
      if (after?.token === request.holder.token) return adopt(host, request, after, firstConvertAt);
    }
    // Given up: readers may join again. The mark goes now, or, without an answer, in the background
    // (retried: the upgrader's read lock keeps the group, so a mark left behind would keep readers out).
    if (claimed) {
      await store.abandonUpgrade(request.storedKey, id).catch(() => host.later(() => abandonUntilDone(store, request.storedKey, id)));
    }
    throw error;
  }
}

/**
 * A conversion recognised late (its answer was lost): the write lock is this caller's, its lease
 * counted from the first conversion sent. With less than half of it left, it is given back (one
 * mutex release) and the upgrade reported lost, rather than handed over nearly expired.
 */
async function adopt(host: UpgradeHost, request: UpgradeRequest, record: LockRecord, sentAt: number): Promise<Upgraded> {
  if (sentAt + request.holder.leaseMs / 2 > monotonicNow()) return { record, sentAt };
  await host.mutex.release(request.storedKey, { token: request.holder.token }, request.holder.leaseMs).catch(() => false);
  throw lost(request.key);
}

/** Removes the upgrade mark: a few tries with backoff while DynamoDB does not answer. */
async function abandonUntilDone(store: ReadStorePort, storedKey: string, id: string): Promise<void> {
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      await store.abandonUpgrade(storedKey, id);
      return;
    } catch {
      await sleep(100 * 2 ** attempt);
    }
  }
}

/** The item a write's answer showed, or (a server that returns none) one read of it. */
async function answerOf(host: UpgradeHost, storedKey: string, result: WriteResult): Promise<LockRecord | undefined> {
  if (result.ok) return result.record;
  return result.current ?? (await host.mutex.read(storedKey));
}

function lost(key: string): LockLostError {
  return new LockLostError(UPGRADE_LOST(key), key, 'gone');
}

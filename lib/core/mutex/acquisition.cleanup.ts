import { hasLeft } from '../../store/mutex/mutex.record';
import type { WriteResult } from '../../store/mutex/mutex-store.protocol';
import { monotonicNow, sleep } from '../../utils/clock';
import type { HeldLease, Waiter } from '../engine/lock-state';
import { RetryBackoff } from '../waiting/retry.backoff';
import type { AcquisitionHost } from './acquisition.host';
import type { LineView } from './line.view';

/**
 * What an acquisition that ends without its lock may leave behind, cleaned up: its place in another
 * process's line (left at once, so the next waiter is served without a claim lease), and the lock
 * that a write of it took while the answer was lost (released). One strongly consistent read tells
 * which; when DynamoDB does not answer, the clean-up goes on in the background, retried within the
 * lease such a write may hold, and each outcome is a `cleanup` event.
 * @returns the lease when the read shows this waiter holding with enough of it left to hand on (the
 *   manager gives it to a later caller of this process, or releases it).
 */
export async function cleanUpAcquisition(
  host: AcquisitionHost,
  waiter: Waiter,
  line: LineView,
  uncertain: boolean,
): Promise<HeldLease | undefined> {
  if (line.ticket === undefined && !uncertain) return undefined;
  // The token may hold the lock while no caller waits for it.
  host.history.addOrphan(waiter.storedKey, waiter.token);
  try {
    return await settle(host, waiter, line, true);
  } catch {
    host.later(() => retryInBackground(host, waiter, line));
    return undefined;
  }
}

/** Reads the item, then leaves the line, releases the lock, or returns it (when `mayHold`). */
async function settle(host: AcquisitionHost, waiter: Waiter, line: LineView, mayHold: boolean): Promise<HeldLease | undefined> {
  const { store } = host;
  const sentAt = monotonicNow();
  const record = await store.read(waiter.storedKey);
  line.current = record;
  line.known = true;
  // A ticket taken by an enqueue whose answer was lost: the item names it while it is the last one.
  if (line.ticket === undefined && line.enqueued && record?.tailToken === waiter.token && record.tail !== undefined) {
    line.ticket = record.tail - 1;
  }
  const mine = line.heldByMe(waiter.token);
  if (!mine) {
    line.lastNotMineAt = sentAt;
    const { ticket } = line;
    if (ticket === undefined || record?.head === undefined || record.head >= ticket) return undefined;
    // Still in line (shutdown, or a leave whose answer was lost): leave it, unless it left already.
    const left: WriteResult = hasLeft(record, ticket) ? { ok: true, record } : await store.leave(waiter.storedKey, ticket);
    const current = left.ok ? undefined : (left.current ?? (await store.read(waiter.storedKey)));
    if (left.ok || hasLeft(current, ticket)) {
      host.history.dropOrphan(waiter.storedKey, waiter.token);
      emit(host, waiter, 'left');
    }
    // Refused: served meanwhile (then released, or handed back), passed, or the set is full (passed
    // after a claim lease, as a crashed waiter's ticket is).
    else if (current?.head === ticket) return settle(host, waiter, line, mayHold);
    return undefined;
  }
  const leaseMs = mine === 'ticket' ? line.claimMs(waiter.leaseMs) : Math.min(record?.leaseMs ?? waiter.leaseMs, waiter.leaseMs);
  const from = line.validFrom(waiter.uncertainSince);
  if (mayHold && (waiter.settled || from + leaseMs / 2 > monotonicNow())) return host.hold(waiter, record!, from, 'promotion', leaseMs);
  // A scheduled fire claimed by a write whose caller is gone did not run: it ended `failed`.
  const fire = waiter.fire === undefined ? undefined : 'failed';
  if (await store.release(waiter.storedKey, { token: waiter.token, ticket: line.ticket }, waiter.leaseMs, undefined, fire)) {
    host.history.dropOrphan(waiter.storedKey, waiter.token);
    emit(host, waiter, 'released');
  }
  return undefined;
}

/**
 * Retries {@link settle} with backoff while the lease a lost write of this waiter may hold lasts
 * (after it, the others pass the item as they pass a crashed process), or until shutdown.
 */
async function retryInBackground(host: AcquisitionHost, waiter: Waiter, line: LineView): Promise<void> {
  const until = line.validFrom(waiter.uncertainSince) + Math.max(waiter.leaseMs, line.claimMs(waiter.leaseMs));
  const backoff = new RetryBackoff();
  while (monotonicNow() < until && !host.closing.aborted) {
    try {
      // Unref'd: a process that ends without closing its manager is not kept alive for it.
      await sleep(backoff.next(Math.max(0, until - monotonicNow())), host.closing, true);
    } catch {
      break;
    }
    try {
      await settle(host, waiter, line, false);
      return;
    } catch {
      // No answer again: the next pause is longer.
    }
  }
  emit(host, waiter, 'failed');
}

/** The `cleanup` event of what `waiter` left behind. */
function emit(host: AcquisitionHost, waiter: Waiter, outcome: 'left' | 'released' | 'failed'): void {
  host.emit({ type: 'cleanup', key: waiter.key, owner: waiter.owner, outcome });
}

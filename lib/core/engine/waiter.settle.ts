import { LockBusyError } from '../../errors/lock.errors';
import { Lock } from './lock';
import type { LockEvents } from './lock.events';
import type { Waiter } from './lock-state';

/**
 * Settles a caller of any primitive once: resolves it with its lock, or rejects it (a busy answer
 * emits the `busy` event; any other error ends its trace). A settled caller is left as it is.
 */
export function settleWaiter(events: LockEvents, waiter: Waiter, outcome: unknown): void {
  if (waiter.settled) return;
  waiter.settled = true;
  if (outcome instanceof Lock) {
    waiter.cancel.abort();
    waiter.resolve(outcome);
    return;
  }
  if (outcome instanceof LockBusyError) {
    if (waiter.fire !== undefined) {
      const { fireClaimed, holder } = outcome;
      const reason = !fireClaimed ? 'previous-run' : fireClaimed.scheduledAt.getTime() > waiter.fire ? 'superseded' : 'ran-elsewhere';
      const by = fireClaimed ? fireClaimed.owner : holder?.owner;
      events.emit(
        { type: 'fire', key: waiter.key, owner: waiter.owner, scheduledAt: new Date(waiter.fire), outcome: 'skipped', reason, by },
        waiter.trace,
      );
    }
    events.emit({ type: 'busy', key: waiter.key, owner: waiter.owner, holder: outcome.holder, waitedMs: outcome.waitedMs }, waiter.trace);
  } else waiter.trace?.fail(outcome);
  waiter.cancel.abort(outcome);
  waiter.reject(outcome);
}

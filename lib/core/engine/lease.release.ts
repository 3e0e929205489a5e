import { LockLostError } from '../../errors/lock.errors';
import { RELEASE_NOT_HELD, RELEASED_AT_SHUTDOWN } from '../../errors/lock.messages';
import type { LeaseKeeper } from './lease.keeper';
import type { Lock, ReleaseOutcome } from './lock';
import type { HeldLease } from './lock-state';
import type { PrimitiveContext } from './primitive.interface';

/**
 * Sends the release write of a lease the keeper has let go (after its other writes, in order) and
 * tells of it: `released` when the write freed it, `release-failed` (and a warning) when the store
 * no longer knew it as held, `release-failed` with the error, rethrown, when the write failed.
 * @param write the store's release; `true` when it freed the lease.
 */
export function releaseWithEvents(
  { events, options }: Pick<PrimitiveContext, 'events' | 'options'>,
  keeper: LeaseKeeper,
  lock: Lock,
  lease: HeldLease,
  heldMs: number,
  write: () => Promise<boolean>,
): Promise<ReleaseOutcome> {
  const base = { key: lock.key, owner: lock.owner, fencingToken: lock.fencingToken, heldMs: Math.round(heldMs) };
  return keeper.serial(lease, async () => {
    let done: boolean;
    try {
      done = await write();
    } catch (error) {
      events.emitFor(lease, { type: 'release-failed', ...base, outcome: 'error', error });
      throw error;
    }
    if (done) events.emitFor(lease, { type: 'released', ...base, handedOver: false });
    else {
      options.logger.warn?.(RELEASE_NOT_HELD(lock.key));
      events.emitFor(lease, { type: 'release-failed', ...base, outcome: 'not-held' });
    }
    return done ? 'released' : 'not-held';
  });
}

/**
 * At shutdown: every lease the keeper holds is told it is lost to the shutdown (its signal aborts
 * first, so work under it stops), then released; resolves once the releases have settled.
 */
export async function releaseAllAtShutdown(keeper: LeaseKeeper, release: (lock: Lock) => Promise<ReleaseOutcome>): Promise<void> {
  const held = keeper.all();
  for (const lease of held) lease.controller.abort(new LockLostError(RELEASED_AT_SHUTDOWN(lease.lock.key), lease.lock.key, 'shutdown'));
  await Promise.allSettled(held.map((lease) => release(lease.lock)));
}

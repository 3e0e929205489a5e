import { MutexPrimitive } from './mutex/mutex.primitive';
import { type Lock, rootLock } from './engine/lock';
import type { ReleaseFire } from '../store/mutex/mutex-store.protocol';
import type { HeldLease } from './engine/lock-state';
import type { LockPrimitive, PrimitiveContext } from './engine/primitive.interface';
import { SemaphorePrimitive } from './semaphore/semaphore.primitive';
import { ReadPrimitive } from './rw/read.primitive';

/** The primitives of a manager: the mutex (the default, and leadership's), and every other kind. */
export interface Primitives {
  readonly mutex: MutexPrimitive;
  /** Read locks on mutex items (`mode: 'read'`). */
  readonly read: ReadPrimitive;
  /** Every primitive, the mutex first (the order `inspect()` asks them in). */
  readonly all: readonly LockPrimitive[];
  /** The lease behind a lock, from the primitive that holds it. */
  leaseOf(lock: Lock): HeldLease | undefined;
  /** Says how the run of the scheduled fire a lock (or a nested handle of it) claimed ended. */
  endRun(lock: Lock, result: ReleaseFire): void;
}

/** Creates the primitives of a manager. A new primitive is listed here. */
export function createPrimitives(context: PrimitiveContext): Primitives {
  const mutex = new MutexPrimitive(context);
  const read = new ReadPrimitive(context);
  // Read before semaphore: a call with both `mode: 'read'` and `limit` is refused by the reader's checks.
  const all = [mutex, read, new SemaphorePrimitive(context)];
  const leaseOf = (lock: Lock): HeldLease | undefined => {
    for (const primitive of all) {
      const lease = primitive.lease(lock);
      if (lease) return lease;
    }
    return undefined;
  };
  return {
    mutex,
    read,
    all,
    leaseOf,
    endRun: (lock, result) => {
      const lease = leaseOf(rootLock(lock));
      if (lease?.fire !== undefined) lease.fireOutcome = result;
    },
  };
}

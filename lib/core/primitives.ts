import { MutexPrimitive } from './mutex/mutex.primitive';
import type { LockPrimitive, PrimitiveContext } from './engine/primitive.interface';
import { SemaphorePrimitive } from './semaphore/semaphore.primitive';

/** The primitives of a manager: the mutex (the default, and leadership's), and every other kind. */
export interface Primitives {
  readonly mutex: MutexPrimitive;
  /** Every primitive, the mutex first (the order `inspect()` asks them in). */
  readonly all: readonly LockPrimitive[];
}

/** Creates the primitives of a manager. A new primitive is listed here. */
export function createPrimitives(context: PrimitiveContext): Primitives {
  const mutex = new MutexPrimitive(context);
  return { mutex, all: [mutex, new SemaphorePrimitive(context)] };
}

import type { LockBusyError, LockUnavailableError } from '../../errors/lock.errors';
import type { AcquiredVia, LockEvent } from '../../interfaces/lock-event.interface';
import type { LockLogger } from '../../interfaces/lock-logger.interface';
import type { LockTrace } from '../../observability/lock.telemetry';
import type { LeftRun, LockRecord } from '../../store/mutex/mutex.record';
import type { MutexStorePort } from '../../store/mutex/mutex-store.port';
import type { KeyHistory } from '../engine/key-history';
import type { HeldLease, Waiter } from '../engine/lock-state';
import type { SkipTarget } from './head.watch';

/** What a remote acquisition needs from the manager. */
export interface AcquisitionHost {
  readonly store: MutexStorePort;
  readonly history: KeyHistory;
  readonly options: { readonly logger: LockLogger; readonly leaseMs: number; readonly maxPollMs: number };
  /** Aborts at shutdown: a place in line kept for a caller that gave up is dropped then. */
  readonly closing: AbortSignal;
  /** Starts holding the lock described by `record`, for `leaseMs` from monotonic time `validFrom`. */
  hold(waiter: Waiter, record: LockRecord, validFrom: number, via: AcquiredVia, leaseMs: number): HeldLease;
  emit(event: LockEvent, trace?: LockTrace): void;
  /** Emits the `waiting` event of a waiter, once. */
  noteWaiting(waiter: Waiter): void;
  busyError(waiter: Waiter): LockBusyError;
  /** The error of a wait that ended: busy when a holder was seen, else unavailable (an outage). */
  deadlineError(waiter: Waiter): LockBusyError | LockUnavailableError;
  /** The first caller of this process still waiting for `storedKey`, to take over a ticket. */
  nextWaiter(storedKey: string): Waiter | undefined;
  /** Runs a clean-up in the background after the acquisition ended; shutdown waits for it (`closing` aborts it). */
  later(task: () => Promise<void>): void;
}

export type Step =
  | { kind: 'free' }
  /** Read the item first: a write got no answer before any view of it (a burst of first asks timing out). */
  | { kind: 'read' }
  /** Take back a token of this process that no caller holds (an orphan). */
  | { kind: 'handover'; from: string }
  /** Pass the holder of `seen`, silent for its whole lease; `mine`: the target is this waiter's own ticket. */
  | ({ kind: 'skip' } & SkipTarget)
  | { kind: 'enqueue' }
  /** Pass the tickets at the head of the line whose waiters left (nobody holds them). */
  | { kind: 'pass-left'; run: LeftRun }
  /** Leave the line: the caller gave up, and no later caller of this process took the ticket over. */
  | { kind: 'leave' }
  | { kind: 'mark-alive' }
  | { kind: 'wait' };

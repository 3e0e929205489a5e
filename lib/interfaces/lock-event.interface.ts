import type { LockHolder, LockLostReason } from '../errors/lock.errors';
import type { JobFireOutcome } from './job-fire.interface';

/** How a lock was obtained. */
export type AcquiredVia =
  /** It was free: one write. */
  | 'free'
  /** A local holder handed it over on release (same process). */
  | 'handover'
  /** A holder in another process released it to this waiter, next in line (the release served its ticket). */
  | 'promotion'
  /**
   * The previous holder stopped renewing it for a whole lease and was taken over; or its lease
   * was one of this process that ran out (or whose release failed), taken back at once.
   */
  | 'takeover'
  /** An upgradeable read lock of this caller became this write lock (`lock.upgrade()`). */
  | 'upgrade';

/**
 * Why an instance did not run a scheduled fire: another instance claimed it (`ran-elsewhere`), a
 * later fire was claimed already (`superseded`: this one is past, whether it ran or not), or the
 * previous run still holds the job (`previous-run`).
 */
export type FireSkipReason = 'ran-elsewhere' | 'superseded' | 'previous-run';

/** What every event carries. */
export interface LockEventBase {
  /** The key as given to `acquire()`. */
  key: string;
  /** Owner name of this service. */
  owner: string;
}

/**
 * A lock event, passed to `onEvent` listeners and to `@nestjs/event-emitter`: for metrics,
 * tracing and audit logs. `waitedMs`/`heldMs` are measured on the local monotonic clock.
 *
 * One acquisition emits, in order: `waiting` (only when the key was busy and the call waits),
 * `takeover` (only when the previous holder's lease ran out), then `acquired` or `busy`;
 * while held, `extended` and `retry`; at the end `released`, `release-failed` or `lost`.
 * A leadership campaign (`lead()`, `@WhenLeader`) adds `elected` after its term's `acquired`, and
 * `revoked` as soon as the term's signal aborts (a `released` event follows once the release is written).
 * An acquisition that fails with an error (DynamoDB, the caller's signal, shutdown) emits
 * no outcome: the caller gets the error.
 */
export type LockEvent =
  | (LockEventBase & { type: 'waiting'; holder?: LockHolder })
  | (LockEventBase & { type: 'takeover'; fencingToken: number; previousHolder?: LockHolder })
  | (LockEventBase & { type: 'acquired'; fencingToken: number; waitedMs: number; via: AcquiredVia })
  | (LockEventBase & { type: 'busy'; holder?: LockHolder; waitedMs: number })
  | (LockEventBase & { type: 'extended'; fencingToken: number; leaseMs: number })
  | (LockEventBase & { type: 'released'; fencingToken: number; heldMs: number; handedOver: boolean })
  | (LockEventBase & { type: 'lost'; fencingToken: number; heldMs: number; reason: Exclude<LockLostReason, 'released'> })
  /**
   * `release()` did not release the lock: `not-held` — this owner no longer held it (its lease ran
   * out unnoticed and another owner may hold it); `error` — the write failed, and the lease runs out
   * on its own.
   */
  | (LockEventBase & { type: 'release-failed'; fencingToken: number; heldMs: number; outcome: 'not-held' | 'error'; error?: unknown })
  /**
   * What a caller that stopped left behind was cleaned up: `left` — its place in another process's
   * line was given up (it gave up, its `wait` ran out, shutdown), so the next waiter is served at
   * once; `released` — a lock granted while its caller was gone (it gave up while the write was in
   * flight, or the answer was lost and it got an error), or whose lease had run out before
   * `release()` while nobody took it, was freed; `failed` — DynamoDB did not answer within the lease
   * (or the manager shut down first): the others pass it then, as they pass a crashed process.
   */
  | (LockEventBase & { type: 'cleanup'; outcome: 'left' | 'released' | 'failed' })
  | (LockEventBase & { type: 'retry'; operation: 'acquire' | 'heartbeat'; error: unknown; delayMs: number })
  /** This process was elected leader of `key` (a `lead()` or `@WhenLeader` campaign), with the term's lock. */
  | (LockEventBase & { type: 'elected'; fencingToken: number })
  /**
   * A term of this process as leader of `key` ended: lost (`expired`, `taken`, `gone`), resigned
   * (`released`) or shut down (`shutdown`). Unless resigned or shut down, the campaign goes on.
   */
  | (LockEventBase & { type: 'revoked'; fencingToken: number; reason: LockLostReason })
  /**
   * A scheduled fire of a job (`fireTime`, `@Cron` with `@WithLock`): this instance `ran` it
   * (`result`: how its run ended), `skipped` it (`reason`; `by`: the instance that claimed it or
   * holds the job), or found at start-up that no instance ran it (`missed`; `count`: fires missed
   * since the last one claimed). A run passed as dead by a watching instance is reported there as
   * `lost`, with `by` the instance that ran it.
   */
  | (LockEventBase & {
      type: 'fire';
      scheduledAt: Date;
      outcome: 'ran' | 'skipped' | 'missed' | 'lost';
      result?: Exclude<JobFireOutcome, 'running' | 'lost'>;
      reason?: FireSkipReason;
      by?: string;
      count?: number;
    });

/** The `type` of a {@link LockEvent}. */
export type LockEventType = LockEvent['type'];

/** A listener of lock events. Must not throw (a throw is logged and ignored); it runs on the lock's path. */
export type LockEventListener = (event: LockEvent) => void;

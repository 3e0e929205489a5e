/** Messages for a held lock: lost (taken over, gone, expired), released, extended, heartbeats. */

import { errorText } from './message.format';

export const LOCK_TAKEN = (key: string, holder: string | undefined) =>
  `Lock "${key}" was lost: it is now held by ${holder ? `"${holder}"` : 'another owner'}, who took it over after this holder's lease ran out without a heartbeat.`;

export const LOCK_GONE = (key: string) => `Lock "${key}" was lost: its record was released or deleted by someone else.`;

/** What made a lease run out, as {@link LOCK_EXPIRED} tells it. */
export type ExpiryCause =
  /** Acquired with `heartbeat: false` and not renewed in time. */
  | { kind: 'no-heartbeat' }
  /** Heartbeats were throttled by DynamoDB. */
  | { kind: 'throttled'; error: unknown }
  /** Heartbeats got no answer within the request limit. */
  | { kind: 'timed-out'; error: unknown }
  /** Heartbeats failed with another error. */
  | { kind: 'failed'; error: unknown }
  /** A heartbeat was answered, but later than the lease it renewed. */
  | { kind: 'late-answer'; answeredAfterMs: number }
  /** A heartbeat was still waiting for its answer. */
  | { kind: 'unanswered' }
  /** No heartbeat was due or failing: the process did not run. */
  | { kind: 'paused' };

const EXPIRY_TEXT: { [K in ExpiryCause['kind']]: (cause: Extract<ExpiryCause, { kind: K }>) => string } = {
  'no-heartbeat': () =>
    'it was acquired with heartbeat: false and not renewed in time: call lock.extend() (or renewLease()) more often than the lease, or let heartbeats renew it',
  throttled: (c) =>
    `heartbeats were throttled by DynamoDB (${errorText(c.error)}): give the table more capacity (or on-demand mode), or hold fewer locks at once`,
  'timed-out': (c) =>
    `heartbeats got no answer from DynamoDB in time (${errorText(c.error)}): DynamoDB or the network is slow or unreachable`,
  failed: (c) => `heartbeats failed (${errorText(c.error)}): DynamoDB may be unreachable`,
  'late-answer': (c) =>
    `a heartbeat was answered ${c.answeredAfterMs} ms after it was sent, too late to renew the lease: DynamoDB or the network is slow`,
  unanswered: () => 'a heartbeat was still waiting for an answer from DynamoDB: DynamoDB or the network is slow or unreachable',
  paused: () => 'no heartbeat ran: the process was paused or its event loop blocked for longer than the lease',
};

export const LOCK_EXPIRED = (key: string, overdueMs: number, cause: ExpiryCause) =>
  `Lock "${key}" was lost: its lease ran out ${overdueMs} ms ago on the local clock; ${(EXPIRY_TEXT[cause.kind] as (c: ExpiryCause) => string)(cause)}. Another owner may hold it now; stop work protected by it.`;

export const LOCK_RELEASED = (key: string) =>
  `Lock "${key}" was released by its holder; work started under it must not go on (another owner may hold it now).`;

export const RELEASED_AT_SHUTDOWN = (key: string) =>
  `Lock "${key}" was released because the lock service is shutting down; stop work protected by it.`;

export const NOT_HELD_FOR_EXTEND = (key: string) => `Cannot extend lock "${key}": this handle no longer holds it.`;

export const RELEASE_NOT_HELD = (key: string) =>
  `Release of lock "${key}" did nothing: this handle no longer held it (it expired or was taken over).`;

export const RELEASE_FAILED = (key: string, error: unknown) =>
  `Release of lock "${key}" failed (${errorText(error)}); it will expire after its lease.`;

export const HEARTBEAT_FAILED = (key: string, error: unknown, remainingMs: number) =>
  `Heartbeat for lock "${key}" failed (${errorText(error)}); retrying, ${remainingMs} ms of lease left.`;

export const HEARTBEATS_BEHIND = (held: number, neededPerSecond: number, answeredPerSecond: number, inFlight: number, lateMs: number) =>
  `Heartbeats are falling behind: this process holds ${held} locks, whose heartbeats need about ${neededPerSecond} writes per second, and the lock store answers about ${answeredPerSecond} per second (with up to ${inFlight} in flight); a heartbeat now starts ${lateMs} ms after it was due. A lock stays held while its heartbeat is late by less than its lease duration minus its heartbeat interval; one whose lease runs out first is reported lost. Hold fewer locks per process, give them a longer heartbeatInterval (with a longer leaseDuration), or give the store more capacity (for DynamoDB, the table's write capacity). (Said once, until heartbeats are on time again.)`;

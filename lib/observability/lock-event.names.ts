import type { LockEvent, LockEventType } from '../interfaces/lock-event.interface';

/**
 * The names lock events carry on `@nestjs/event-emitter`: `dynamo-lock.<type>`.
 *
 * @example
 * ```ts
 * @OnEvent(LOCK_EVENT_NAMES.lost)
 * onLockLost(event: LockEventOf<'lost'>) {
 *   this.alerts.page(`lock ${event.key} lost: ${event.reason}`);
 * }
 * ```
 */
export const LOCK_EVENT_NAMES = {
  waiting: 'dynamo-lock.waiting',
  takeover: 'dynamo-lock.takeover',
  acquired: 'dynamo-lock.acquired',
  busy: 'dynamo-lock.busy',
  extended: 'dynamo-lock.extended',
  released: 'dynamo-lock.released',
  lost: 'dynamo-lock.lost',
  'release-failed': 'dynamo-lock.release-failed',
  cleanup: 'dynamo-lock.cleanup',
  retry: 'dynamo-lock.retry',
  elected: 'dynamo-lock.elected',
  revoked: 'dynamo-lock.revoked',
  fire: 'dynamo-lock.fire',
} as const satisfies Record<LockEventType, `dynamo-lock.${LockEventType}`>;

/** The lock event of one type, for typed listeners. */
export type LockEventOf<T extends LockEventType> = Extract<LockEvent, { type: T }>;

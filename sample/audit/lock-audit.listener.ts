import { Inject, Injectable, Logger } from '@nestjs/common';
import { OnEvent } from '@nestjs/event-emitter';
import { LOCK_EVENT_NAMES, type LockEventOf } from 'nestjs-dynamo-lock';
import { INSTANCE_NAME } from '../support/instance-name';

/**
 * Lock events through `@nestjs/event-emitter`: the rare ones worth a warning in the logs — a
 * lock lost while held, taken over from a holder that stopped renewing, or not released.
 */
@Injectable()
export class LockAuditListener {
  private readonly logger: Logger;

  constructor(@Inject(INSTANCE_NAME) instance: string) {
    this.logger = new Logger(`LockAudit ${instance}`);
  }

  @OnEvent(LOCK_EVENT_NAMES.lost)
  onLost(event: LockEventOf<'lost'>): void {
    this.logger.warn(`Lost "${event.key}" (fencing token ${event.fencingToken}) after ${event.heldMs} ms: ${event.reason}`);
  }

  @OnEvent(LOCK_EVENT_NAMES.takeover)
  onTakeover(event: LockEventOf<'takeover'>): void {
    this.logger.warn(`Took "${event.key}" over from ${event.previousHolder?.owner ?? 'a holder that stopped renewing'}`);
  }

  @OnEvent(LOCK_EVENT_NAMES['release-failed'])
  onReleaseFailed(event: LockEventOf<'release-failed'>): void {
    this.logger.warn(`Release of "${event.key}" failed (${event.outcome}); its lease runs out on its own`);
  }
}

import { Injectable, type OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { LockConfigurationError } from '../errors/lock.errors';
import { EVENT_EMITTER_MISSING } from '../errors/lock.messages';
import { LockService } from '../lock.service';
import { LOCK_EVENT_NAMES } from './lock-event.names';

/** The part of `EventEmitter2` used here (`@nestjs/event-emitter` is an optional peer). */
interface Emitter {
  emit(event: string, ...values: unknown[]): boolean;
}

/**
 * Emits every lock event of `LockService` on the app's `EventEmitter2` (see `LOCK_EVENT_NAMES`),
 * when `@nestjs/event-emitter` is installed and `EventEmitterModule.forRoot()` imported.
 * Controlled by the `eventEmitter` option.
 * @internal
 */
@Injectable()
export class EventEmitterBridge implements OnModuleInit {
  constructor(
    private readonly locks: LockService,
    private readonly moduleRef: ModuleRef,
  ) {}

  /** @internal Nest lifecycle: finds the emitter and subscribes to lock events. */
  async onModuleInit(): Promise<void> {
    const mode = this.locks.options.eventEmitter;
    if (mode === false) return;
    const emitter = await this.findEmitter();
    if (!emitter) {
      if (mode === true) throw new LockConfigurationError(EVENT_EMITTER_MISSING());
      return;
    }
    // Lives as long as the service: the releases at shutdown are emitted too.
    this.locks.subscribe((event) => emitter.emit(LOCK_EVENT_NAMES[event.type], event));
  }

  private async findEmitter(): Promise<Emitter | undefined> {
    let token: unknown;
    try {
      ({ EventEmitter2: token } = await import('@nestjs/event-emitter'));
    } catch {
      return undefined; // not installed
    }
    try {
      return this.moduleRef.get<unknown, Emitter>(token as never, { strict: false });
    } catch {
      return undefined; // installed, EventEmitterModule not imported
    }
  }
}

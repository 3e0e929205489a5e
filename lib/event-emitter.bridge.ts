import { Injectable, type OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { LockConfigurationError } from './errors/lock.errors';
import { EVENT_EMITTER_MISSING, EVENT_EMITTER_UNAVAILABLE } from './errors/lock.messages';
import { LockService } from './lock.service';
import { loadOptionalPeer } from './utils/optional-peer';
import { LOCK_EVENT_NAMES } from './observability/lock-event.names';

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
    let emitter: Emitter | undefined;
    try {
      emitter = await this.findEmitter();
    } catch (error) {
      // Installed, but it failed to load.
      if (mode === true) throw new LockConfigurationError(EVENT_EMITTER_UNAVAILABLE(error), { cause: error });
      this.locks.options.logger.warn?.(EVENT_EMITTER_UNAVAILABLE(error));
      return;
    }
    if (!emitter) {
      if (mode === true) throw new LockConfigurationError(EVENT_EMITTER_MISSING());
      return;
    }
    // Lives as long as the service: the releases at shutdown are emitted too.
    this.locks.subscribe((event) => emitter.emit(LOCK_EVENT_NAMES[event.type], event));
  }

  /** The app's `EventEmitter2`; `undefined` when the package is not installed or its module not imported. */
  private async findEmitter(): Promise<Emitter | undefined> {
    const module = await loadOptionalPeer<{ EventEmitter2: object }>('@nestjs/event-emitter');
    if (!module) return undefined;
    try {
      return this.moduleRef.get<unknown, Emitter>(module.EventEmitter2 as never, { strict: false });
    } catch {
      return undefined; // EventEmitterModule not imported
    }
  }
}

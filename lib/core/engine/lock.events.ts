import { EVENT_LISTENER_FAILED, TELEMETRY_UNAVAILABLE } from '../../errors/lock.messages';
import type { LockEvent, LockEventListener } from '../../interfaces/lock-event.interface';
import type { LockLogger } from '../../interfaces/lock-logger.interface';
import { type AcquireTrace, LockTelemetry, type LockTrace } from '../../observability/lock.telemetry';
import type { HeldLease, Waiter } from './lock-state';

/**
 * The lock events of one manager: its listeners (`onEvent`, `subscribe()`, the event-emitter
 * bridge) and OpenTelemetry traces. A listener that throws or rejects is logged, never allowed
 * to break a lock.
 */
export class LockEvents {
  private readonly listeners = new Set<LockEventListener>();
  private telemetry: LockTelemetry | undefined;
  /** Settles once OpenTelemetry is loaded, or known to be absent (at once when not asked for). */
  readonly ready: Promise<void> = Promise.resolve();

  constructor(
    private readonly logger: LockLogger,
    options: { readonly onEvent: LockEventListener | undefined; readonly telemetry: boolean },
  ) {
    if (options.onEvent) this.listeners.add(options.onEvent);
    if (options.telemetry) this.ready = this.loadTelemetry();
  }

  /** Adds a listener; returns the function that removes it. */
  subscribe(listener: LockEventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Starts the trace of an acquisition, when OpenTelemetry is in use. */
  startAcquire(key: string, owner: string, waitMs: number): AcquireTrace | undefined {
    return this.telemetry?.startAcquire(key, owner, waitMs);
  }

  /** Passes an event to the trace of its acquisition or hold and to the listeners, never letting one break the lock. */
  emit(event: LockEvent, trace?: LockTrace): void {
    const failed = (error: unknown) => {
      this.logger.warn?.(EVENT_LISTENER_FAILED(event.type, error));
    };
    for (const listener of trace ? [trace.onEvent.bind(trace), ...this.listeners] : this.listeners) {
      try {
        const result: unknown = listener(event);
        // An async listener: its rejection is logged too, never left unhandled.
        if (typeof (result as PromiseLike<unknown> | undefined)?.then === 'function') Promise.resolve(result).catch(failed);
      } catch (error) {
        failed(error);
      }
    }
  }

  /** Emits an event of a held lease, unless no caller ever saw that lease (see `LeaseKeeper.hold()`). */
  emitFor(lease: HeldLease, event: LockEvent): void {
    if (!lease.quiet) this.emit(event, lease.trace);
  }

  /** Emits the `waiting` event of a waiter, once: the key is busy and the call waits. */
  noteWaiting(waiter: Waiter): void {
    if (waiter.waiting) return;
    waiter.waiting = true;
    this.emit({ type: 'waiting', key: waiter.key, owner: waiter.owner, holder: waiter.holder }, waiter.trace);
  }

  /** Uses OpenTelemetry when `@opentelemetry/api` is installed: at once, or (ES module) by `init()`. */
  private loadTelemetry(): Promise<void> {
    const use = (telemetry: LockTelemetry | undefined) => {
      this.telemetry = telemetry;
      if (telemetry) this.listeners.add((event) => telemetry.record(event));
    };
    const failed = (error: unknown) => {
      this.logger.warn?.(TELEMETRY_UNAVAILABLE(error));
    };
    try {
      const loaded = LockTelemetry.load();
      if (loaded instanceof Promise) return loaded.then(use, failed);
      use(loaded);
    } catch (error) {
      failed(error);
    }
    return Promise.resolve();
  }
}

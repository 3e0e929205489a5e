import type { LockHolder } from '../errors/lock.errors';
import type { LockEvent } from '../interfaces/lock-event.interface';
import { loadOptionalPeer } from '../utils/optional-peer';
import type { OtelApi, OtelAttributes, OtelContext, OtelMeter, OtelSpan } from './otel-api.types';

/** Instrumentation scope of the spans and metrics. */
export const TELEMETRY_SCOPE = 'nestjs-dynamo-lock';

/** Names of the spans the library records. */
export const SPAN_NAMES = { acquire: 'dynamo_lock.acquire', hold: 'dynamo_lock.hold' } as const;

/** Receives the events of one acquisition or one hold, in order. @internal */
export interface LockTrace {
  onEvent(event: LockEvent): void;
}

/**
 * OpenTelemetry spans and metrics for lock events, through the global providers of
 * `@opentelemetry/api` (an optional peer: without it, {@link LockTelemetry.load} yields nothing).
 *
 * Spans: `dynamo_lock.acquire` from the call to the outcome, with `waiting`, `takeover` and
 * `retry` span events; `dynamo_lock.hold` from acquisition to release or loss, active while a
 * `withLock()` callback or `@WithLock` method runs. Both are children of the span active when
 * `acquire()` was called. Metrics carry no lock key (unbounded cardinality); spans do.
 * No method throws: a failing SDK (a span processor that throws) must not break a lock.
 */
export class LockTelemetry {
  private meterProvider: object | undefined;
  private instruments: Instruments | undefined;

  private constructor(private readonly api: OtelApi) {}

  /**
   * The telemetry, or `undefined` when `@opentelemetry/api` is not installed (at once in the
   * CommonJS build; a promise where the library runs as an ES module).
   * @throws what loading an installed but broken `@opentelemetry/api` threw.
   */
  static load(): LockTelemetry | undefined | Promise<LockTelemetry | undefined> {
    const create = (api: OtelApi | undefined) => (api ? new LockTelemetry(api) : undefined);
    const api = loadOptionalPeer<OtelApi>('@opentelemetry/api');
    return api instanceof Promise ? api.then(create) : create(api);
  }

  /** Starts the acquire span of a call, in the caller's context; `undefined` if the SDK failed. */
  startAcquire(key: string, owner: string, waitMs: number): AcquireTrace | undefined {
    return guarded(() => {
      const parent = this.api.context.active();
      const attributes: OtelAttributes = {
        'dynamo_lock.key': key,
        'dynamo_lock.owner': owner,
        'dynamo_lock.wait_ms': Number.isFinite(waitMs) ? waitMs : -1,
      };
      const span = this.tracer().startSpan(SPAN_NAMES.acquire, { kind: this.api.SpanKind.INTERNAL, attributes }, parent);
      return new AcquireTrace(this, span, parent);
    });
  }

  /** @internal Starts the hold span of an acquisition; `undefined` if the SDK failed. */
  startHold(parent: OtelContext, key: string, owner: string, fencingToken: number): HoldTrace | undefined {
    return guarded(() => {
      const attributes: OtelAttributes = { 'dynamo_lock.key': key, 'dynamo_lock.owner': owner, 'dynamo_lock.fencing_token': fencingToken };
      const span = this.tracer().startSpan(SPAN_NAMES.hold, { kind: this.api.SpanKind.INTERNAL, attributes }, parent);
      return new HoldTrace(this.api, span);
    });
  }

  /** @internal */
  get errorCode(): number {
    return this.api.SpanStatusCode.ERROR;
  }

  /** Records the metrics of one event. */
  record(event: LockEvent): void {
    guarded(() => this.recordMetrics(event));
  }

  private recordMetrics(event: LockEvent): void {
    const m = this.meters();
    switch (event.type) {
      case 'waiting':
        m.waits.add(1);
        break;
      case 'takeover':
        m.takeovers.add(1);
        break;
      case 'acquired':
        m.acquisitions.add(1, { 'dynamo_lock.outcome': 'acquired', 'dynamo_lock.acquired_via': event.via });
        m.waitDuration.record(event.waitedMs / 1000, { 'dynamo_lock.outcome': 'acquired' });
        m.held.add(1);
        break;
      case 'busy':
        m.acquisitions.add(1, { 'dynamo_lock.outcome': 'busy' });
        m.waitDuration.record(event.waitedMs / 1000, { 'dynamo_lock.outcome': 'busy' });
        break;
      case 'extended':
        m.extensions.add(1);
        break;
      case 'released':
        m.held.add(-1);
        m.holdDuration.record(event.heldMs / 1000, { 'dynamo_lock.outcome': 'released' });
        break;
      case 'lost':
        m.held.add(-1);
        m.holdDuration.record(event.heldMs / 1000, { 'dynamo_lock.outcome': 'lost' });
        m.lost.add(1, { 'dynamo_lock.lost_reason': event.reason });
        break;
      case 'release-failed':
        m.held.add(-1);
        m.holdDuration.record(event.heldMs / 1000, { 'dynamo_lock.outcome': 'release_failed' });
        m.releaseFailures.add(1, { 'dynamo_lock.release_outcome': event.outcome });
        break;
      case 'cleanup':
        m.cleanups.add(1, { 'dynamo_lock.cleanup_outcome': event.outcome });
        break;
      case 'retry':
        m.retries.add(1, { 'dynamo_lock.operation': event.operation });
        break;
      case 'elected':
        m.elections.add(1);
        break;
      case 'revoked':
        m.revocations.add(1, { 'dynamo_lock.revoked_reason': event.reason });
        break;
      case 'fire':
        m.fires.add(1, fireAttributes(event));
        break;
      default:
        // Every event type has its metrics: a new one fails to compile here.
        event satisfies never;
    }
  }

  private tracer() {
    return this.api.trace.getTracer(TELEMETRY_SCOPE);
  }

  /** The instruments of the meter provider registered now (an SDK may be registered after start-up). */
  private meters(): Instruments {
    const provider = this.api.metrics.getMeterProvider();
    if (provider !== this.meterProvider || !this.instruments) {
      this.meterProvider = provider;
      this.instruments = createInstruments(this.api.metrics.getMeter(TELEMETRY_SCOPE));
    }
    return this.instruments;
  }
}

/** A span that takes in the events of its part of a lock's life, and ends once. */
abstract class SpanTrace implements LockTrace {
  protected ended = false;

  constructor(protected readonly span: OtelSpan) {}

  onEvent(event: LockEvent): void {
    if (!this.ended) guarded(() => this.take(event));
  }

  /** Records one event on the span. */
  protected abstract take(event: LockEvent): void;

  protected end(): void {
    this.ended = true;
    guarded(() => this.span.end());
  }
}

/** The acquire span of one call. @internal */
export class AcquireTrace extends SpanTrace {
  constructor(
    private readonly telemetry: LockTelemetry,
    span: OtelSpan,
    private readonly parent: OtelContext,
  ) {
    super(span);
  }

  protected take(event: LockEvent): void {
    switch (event.type) {
      case 'waiting':
        this.span.addEvent('waiting', holderAttributes('dynamo_lock.holder', event.holder));
        break;
      case 'takeover':
        this.span.addEvent('takeover', holderAttributes('dynamo_lock.previous_holder', event.previousHolder));
        break;
      case 'retry':
        this.span.addEvent('retry', retryAttributes(event));
        break;
      case 'acquired':
        this.span.setAttributes({
          'dynamo_lock.outcome': 'acquired',
          'dynamo_lock.fencing_token': event.fencingToken,
          'dynamo_lock.acquired_via': event.via,
          'dynamo_lock.waited_ms': event.waitedMs,
        });
        this.end();
        break;
      case 'fire':
        this.span.setAttributes(fireAttributes(event));
        break;
      case 'busy':
        this.span.setAttributes({
          'dynamo_lock.outcome': 'busy',
          'dynamo_lock.waited_ms': event.waitedMs,
          ...holderAttributes('dynamo_lock.holder', event.holder),
        });
        this.end();
        break;
    }
  }

  /** Ends the span with an error other than a busy lock (DynamoDB, cancellation, shutdown). */
  fail(error: unknown): void {
    if (this.ended) return;
    guarded(() => {
      this.span.recordException(error instanceof Error ? error : String(error));
      this.span.setAttributes({ 'dynamo_lock.outcome': 'error' });
      this.span.setStatus({ code: this.telemetry.errorCode, message: error instanceof Error ? error.message : String(error) });
    });
    this.end();
  }

  /**
   * Ends the span of one key of a multi-key set tried in one write that did not end with this
   * key's own answer: `ordered` (the set goes one key at a time, each in an acquisition, and a
   * span, of its own), `set-busy` (another key of the set was busy).
   */
  endWith(outcome: 'ordered' | 'set-busy'): void {
    if (this.ended) return;
    guarded(() => this.span.setAttributes({ 'dynamo_lock.outcome': outcome }));
    this.end();
  }

  /** Starts the hold span, a sibling of this one. */
  startHold(key: string, owner: string, fencingToken: number): HoldTrace | undefined {
    return this.telemetry.startHold(this.parent, key, owner, fencingToken);
  }
}

/** The hold span of one acquisition. @internal */
export class HoldTrace extends SpanTrace {
  constructor(
    private readonly api: OtelApi,
    span: OtelSpan,
  ) {
    super(span);
  }

  protected take(event: LockEvent): void {
    switch (event.type) {
      case 'fire':
        this.span.setAttributes(fireAttributes(event));
        break;
      case 'extended':
        this.span.addEvent('extended', { 'dynamo_lock.lease_ms': event.leaseMs });
        break;
      case 'retry':
        this.span.addEvent('retry', retryAttributes(event));
        break;
      case 'released':
        this.span.setAttributes({
          'dynamo_lock.outcome': 'released',
          'dynamo_lock.held_ms': event.heldMs,
          'dynamo_lock.handed_over': event.handedOver,
        });
        this.end();
        break;
      case 'lost':
        this.span.setAttributes({
          'dynamo_lock.outcome': 'lost',
          'dynamo_lock.held_ms': event.heldMs,
          'dynamo_lock.lost_reason': event.reason,
        });
        this.span.setStatus({ code: this.api.SpanStatusCode.ERROR, message: `lock lost (${event.reason})` });
        this.end();
        break;
      case 'release-failed':
        this.span.setAttributes({ 'dynamo_lock.outcome': 'release_failed', 'dynamo_lock.held_ms': event.heldMs });
        this.span.setStatus({ code: this.api.SpanStatusCode.ERROR, message: `release failed (${event.outcome})` });
        this.end();
        break;
    }
  }

  /** Runs `fn` with the hold span active, so spans of the protected work become its children. */
  run<T>(fn: () => T): T {
    const active = guarded(() => this.api.trace.setSpan(this.api.context.active(), this.span));
    return active ? this.api.context.with(active, fn) : fn();
  }
}

type Instruments = ReturnType<typeof createInstruments>;

function createInstruments(meter: OtelMeter) {
  return {
    acquisitions: meter.createCounter('dynamo_lock.acquisitions', {
      description: 'Acquire calls that ended, by outcome (acquired or busy) and how the lock was obtained.',
    }),
    waitDuration: meter.createHistogram('dynamo_lock.wait.duration', { description: 'Time from acquire() to its outcome.', unit: 's' }),
    holdDuration: meter.createHistogram('dynamo_lock.hold.duration', {
      description: 'Time a lock was held, by outcome (released or lost).',
      unit: 's',
    }),
    held: meter.createUpDownCounter('dynamo_lock.held', { description: 'Locks held by this process now.' }),
    waits: meter.createCounter('dynamo_lock.waits', { description: 'Acquire calls that found the key busy and waited.' }),
    takeovers: meter.createCounter('dynamo_lock.takeovers', { description: 'Locks taken over after the holder stopped renewing.' }),
    extensions: meter.createCounter('dynamo_lock.extensions', { description: 'Explicit extend() calls that succeeded.' }),
    lost: meter.createCounter('dynamo_lock.lost', { description: 'Locks lost while held, by reason.' }),
    retries: meter.createCounter('dynamo_lock.retries', {
      description: 'DynamoDB requests retried after a transient error, by operation.',
    }),
    elections: meter.createCounter('dynamo_lock.leadership.elections', { description: 'Terms this process was elected leader.' }),
    revocations: meter.createCounter('dynamo_lock.leadership.revocations', {
      description: 'Terms of this process as leader that ended, by reason (expired, taken, gone, released, shutdown).',
    }),
    fires: meter.createCounter('dynamo_lock.job.fires', {
      description: 'Scheduled fires of jobs, by outcome (ran, skipped, missed, lost), skip reason and run result.',
    }),
    releaseFailures: meter.createCounter('dynamo_lock.release_failures', {
      description: 'Releases that did not release: the lock was no longer held (not-held) or the write failed (error).',
    }),
    cleanups: meter.createCounter('dynamo_lock.cleanups', {
      description: 'What callers that stopped left behind, cleaned up: a place in line left, a lock released, or neither in time (failed).',
    }),
  };
}

/** Runs a call into the OpenTelemetry SDK; what it throws is dropped (telemetry never breaks a lock). */
function guarded<T>(call: () => T): T | undefined {
  try {
    return call();
  } catch {
    return undefined;
  }
}

function holderAttributes(prefix: string, holder: LockHolder | undefined): OtelAttributes {
  const attributes: OtelAttributes = {};
  if (holder?.owner !== undefined) attributes[`${prefix}.owner`] = holder.owner;
  if (holder?.fencingToken !== undefined) attributes[`${prefix}.fencing_token`] = holder.fencingToken;
  return attributes;
}

function retryAttributes(event: Extract<LockEvent, { type: 'retry' }>): OtelAttributes {
  const error = event.error instanceof Error ? `${event.error.name}: ${event.error.message}` : String(event.error);
  return { 'dynamo_lock.operation': event.operation, 'dynamo_lock.delay_ms': event.delayMs, 'dynamo_lock.error': error };
}

/** The attributes of a scheduled fire, on its spans and its metric. */
function fireAttributes(event: Extract<LockEvent, { type: 'fire' }>): OtelAttributes {
  const attributes: OtelAttributes = {
    'dynamo_lock.fire.scheduled_at': event.scheduledAt.toISOString(),
    'dynamo_lock.fire.outcome': event.outcome,
  };
  if (event.reason) attributes['dynamo_lock.fire.skip_reason'] = event.reason;
  if (event.result) attributes['dynamo_lock.fire.result'] = event.result;
  return attributes;
}

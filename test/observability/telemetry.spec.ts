/**
 * OpenTelemetry: spans and metrics recorded through the global providers of `@opentelemetry/api`,
 * with the real SDK (in-memory span exporter, a pull metric reader) and locks on a real server.
 * Spans must nest under the caller's span, the protected work under the hold span, and the
 * metrics must add up to what happened.
 */
import { afterAll, afterEach, beforeAll, expect, it } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import * as otelApi from '@opentelemetry/api';
import { context, metrics, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { type DataPoint, type Histogram, MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { LockManager } from '../../lib';
import type { OtelApi } from '../../lib/observability/otel-api.types';
import { injectFaults } from '../support/fault-injection';
import { LockFixture } from '../support/lock-fixture';
import { describeEachServer } from '../support/servers';

/** A reader that exports nothing: the test collects from it. */
class PullReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

/** Passes spans on, or throws from `onStart` while `broken` is set: an SDK failing under the library. */
class FlakyProcessor extends SimpleSpanProcessor {
  broken = false;
  override onStart(...args: Parameters<SimpleSpanProcessor['onStart']>): void {
    if (this.broken) throw new Error('span processor bug');
    super.onStart(...args);
  }
}

const exporter = new InMemorySpanExporter();
const processor = new FlakyProcessor(exporter);
const reader = new PullReader();
const contextManager = new AsyncLocalStorageContextManager().enable();
context.setGlobalContextManager(contextManager);
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [processor] }));
metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));

let seq = 0;
const newKey = (name: string) => `${name}-${++seq}`;
const tracer = trace.getTracer('test');

/** The finished spans of one lock key. */
function spansOf(key: string): ReadableSpan[] {
  return exporter.getFinishedSpans().filter((span) => span.attributes['dynamo_lock.key'] === key);
}

function only(spans: ReadableSpan[], name: string): ReadableSpan {
  const found = spans.filter((span) => span.name === name);
  expect(found).toHaveLength(1);
  return found[0];
}

/** Data points of one metric, summed per attribute set (JSON of the attributes). */
async function metricPoints(name: string): Promise<Map<string, number | Histogram>> {
  const { resourceMetrics } = await reader.collect();
  const points = new Map<string, number | Histogram>();
  for (const scope of resourceMetrics.scopeMetrics) {
    if (scope.scope.name !== 'nestjs-dynamo-lock') continue;
    for (const metric of scope.metrics) {
      if (metric.descriptor.name !== name) continue;
      for (const point of metric.dataPoints as DataPoint<number | Histogram>[]) points.set(JSON.stringify(point.attributes), point.value);
    }
  }
  return points;
}

describeEachServer('OpenTelemetry spans and metrics', (server) => {
  const fixture = new LockFixture(server);
  beforeAll(() => fixture.setup());
  afterAll(() => fixture.close());
  afterEach(() => exporter.reset());

  async function ready(manager: LockManager): Promise<LockManager> {
    await manager.init(); // loads @opentelemetry/api
    return manager;
  }

  it('a multi-key lock (one transaction where the server has them): an acquire and a hold span per key', async () => {
    const manager = await ready(fixture.manager({ ownerName: 'otel-set' }));
    const [a, b] = [newKey('set-a'), newKey('set-b')];
    const lock = await manager.acquire([a, b]);
    await lock.release();
    for (const key of [a, b]) {
      const spans = spansOf(key);
      const outcomes = spans.filter((span) => span.name === 'dynamo_lock.acquire').map((span) => span.attributes['dynamo_lock.outcome']);
      // dynalite learns at the first send that it has no transactions: that span ends 'ordered'.
      expect(outcomes).toEqual(server.name === 'dynalite' ? ['ordered', 'acquired'] : ['acquired']);
      only(spans, 'dynamo_lock.hold');
    }
  });

  it('records acquire and hold spans under the caller, and the work under the hold span', async () => {
    const manager = await ready(fixture.manager({ ownerName: 'otel' }));
    const key = newKey('nested');
    let token = 0;
    await tracer.startActiveSpan('request', async (request) => {
      await manager.withLock(key, async (lock) => {
        token = lock.fencingToken;
        tracer.startSpan('charge').end();
      });
      request.end();
    });
    const spans = spansOf(key);
    const acquire = only(spans, 'dynamo_lock.acquire');
    const hold = only(spans, 'dynamo_lock.hold');
    const request = exporter.getFinishedSpans().find((span) => span.name === 'request')!;
    const charge = exporter.getFinishedSpans().find((span) => span.name === 'charge')!;
    expect(acquire.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
    expect(hold.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
    expect(charge.parentSpanContext?.spanId).toBe(hold.spanContext().spanId);
    expect(acquire.attributes).toMatchObject({
      'dynamo_lock.owner': 'otel',
      'dynamo_lock.outcome': 'acquired',
      'dynamo_lock.acquired_via': 'free',
      'dynamo_lock.fencing_token': token,
    });
    expect(hold.attributes).toMatchObject({
      'dynamo_lock.outcome': 'released',
      'dynamo_lock.handed_over': false,
      'dynamo_lock.fencing_token': token,
    });
    expect(acquire.status.code).toBe(SpanStatusCode.UNSET);
    expect(hold.status.code).toBe(SpanStatusCode.UNSET);
  });

  it('marks a waited acquisition with the holder, and a busy one with its outcome', async () => {
    const holder = await ready(fixture.manager({ ownerName: 'holder' }));
    const waiter = await ready(fixture.manager({ ownerName: 'waiter' }));
    const key = newKey('contended');
    const held = await holder.acquire(key);
    expect(await waiter.tryAcquire(key)).toBeNull();
    const waiting = waiter.acquire(key, { wait: '10s' });
    await sleep(100);
    await held.release();
    await (await waiting).release();
    const acquires = spansOf(key).filter(
      (span) => span.name === 'dynamo_lock.acquire' && span.attributes['dynamo_lock.owner'] === 'waiter',
    );
    expect(acquires.map((span) => span.attributes['dynamo_lock.outcome'])).toEqual(['busy', 'acquired']);
    const [busy, waited] = acquires;
    expect(busy.attributes).toMatchObject({ 'dynamo_lock.holder.owner': 'holder', 'dynamo_lock.holder.fencing_token': held.fencingToken });
    expect(busy.status.code).toBe(SpanStatusCode.UNSET);
    expect(waited.events.map((event) => event.name)).toEqual(['waiting']);
    expect(waited.events[0].attributes).toMatchObject({ 'dynamo_lock.holder.owner': 'holder' });
    expect(waited.attributes['dynamo_lock.waited_ms']).toBeGreaterThanOrEqual(90);
  });

  it('ends the hold span with an error when the lock is lost, and the acquire span when the wait is cancelled', async () => {
    const manager = await ready(fixture.manager());
    const key = newKey('lost');
    const lock = await manager.acquire(key, { leaseDuration: 300, heartbeat: false });
    await sleep(350);
    expect(lock.isHeld).toBe(false);
    const hold = only(spansOf(key), 'dynamo_lock.hold');
    expect(hold.status).toMatchObject({ code: SpanStatusCode.ERROR });
    expect(hold.attributes).toMatchObject({ 'dynamo_lock.outcome': 'lost', 'dynamo_lock.lost_reason': 'expired' });

    const other = await ready(fixture.manager());
    const blocker = await other.acquire(newKey('cancel'));
    const controller = new AbortController();
    const waiting = new Promise<void>((resolve) => {
      const stop = manager.subscribe((event) => {
        if (event.type !== 'waiting' || event.key !== blocker.key) return;
        stop();
        resolve();
      });
    });
    const cancelled = manager.acquire(blocker.key, { wait: '10s', signal: controller.signal });
    // Cancelled once it waits (its `waiting` span event recorded), however slow the machine.
    await waiting;
    controller.abort(new Error('caller gave up'));
    await expect(cancelled).rejects.toThrow('caller gave up');
    const acquire = only(
      spansOf(blocker.key).filter((span) => span.attributes['dynamo_lock.outcome'] === 'error'),
      'dynamo_lock.acquire',
    );
    expect(acquire.status).toMatchObject({ code: SpanStatusCode.ERROR, message: 'caller gave up' });
    expect(acquire.events.map((event) => event.name)).toEqual(['waiting', 'exception']);
    await blocker.release();
  });

  it('counts acquisitions, busy attempts, holds and losses; the held gauge returns to its start', async () => {
    const before = {
      acquired: await counter('dynamo_lock.acquisitions', { 'dynamo_lock.outcome': 'acquired', 'dynamo_lock.acquired_via': 'free' }),
      busy: await counter('dynamo_lock.acquisitions', { 'dynamo_lock.outcome': 'busy' }),
      held: await counter('dynamo_lock.held', {}),
      holds: await histogramCount('dynamo_lock.hold.duration', { 'dynamo_lock.outcome': 'released' }),
    };
    const manager = await ready(fixture.manager());
    const other = await ready(fixture.manager());
    const key = newKey('metrics');
    for (let i = 0; i < 3; i++) {
      const lock = await manager.acquire(key);
      expect(await counter('dynamo_lock.held', {})).toBe(before.held + 1);
      expect(await other.tryAcquire(key)).toBeNull();
      await lock.release();
    }
    expect(await counter('dynamo_lock.acquisitions', { 'dynamo_lock.outcome': 'acquired', 'dynamo_lock.acquired_via': 'free' })).toBe(
      before.acquired + 3,
    );
    expect(await counter('dynamo_lock.acquisitions', { 'dynamo_lock.outcome': 'busy' })).toBe(before.busy + 3);
    expect(await histogramCount('dynamo_lock.hold.duration', { 'dynamo_lock.outcome': 'released' })).toBe(before.holds + 3);
    expect(await counter('dynamo_lock.held', {})).toBe(before.held);
  });

  it('counts leadership elections and revocations by reason', async () => {
    const revoked = { 'dynamo_lock.revoked_reason': 'released' };
    const before = {
      elected: await counter('dynamo_lock.leadership.elections', {}),
      revoked: await counter('dynamo_lock.leadership.revocations', revoked),
    };
    const manager = await ready(fixture.manager());
    const leadership = manager.lead(newKey('leader'), { leaseDuration: '2s', watchInterval: '100ms' });
    await leadership.whenLeader();
    expect(await counter('dynamo_lock.leadership.elections', {})).toBe(before.elected + 1);
    await leadership.resign();
    expect(await counter('dynamo_lock.leadership.revocations', revoked)).toBe(before.revoked + 1);
  });

  it('reports a local hand-over on both holds, and a takeover as a span event and in the metrics', async () => {
    const before = { takeovers: await counter('dynamo_lock.takeovers', {}), waits: await counter('dynamo_lock.waits', {}) };
    const manager = await ready(fixture.manager({ ownerName: 'local' }));
    const key = newKey('handover');
    const first = await manager.acquire(key);
    const second = manager.acquire(key);
    await first.release();
    await (await second).release();
    const holds = spansOf(key).filter((span) => span.name === 'dynamo_lock.hold');
    expect(holds.map((span) => span.attributes['dynamo_lock.handed_over'])).toEqual([true, false]);
    const acquires = spansOf(key).filter((span) => span.name === 'dynamo_lock.acquire');
    expect(acquires.map((span) => span.attributes['dynamo_lock.acquired_via'])).toEqual(['free', 'handover']);

    const dead = await ready(fixture.manager({ ownerName: 'dead' }));
    const heir = await ready(fixture.manager({ ownerName: 'heir' }));
    const orphaned = newKey('takeover');
    const stale = await dead.acquire(orphaned, { leaseDuration: 500, heartbeat: false });
    await (await heir.acquire(orphaned, { wait: '10s' })).release();
    const acquire = spansOf(orphaned).find(
      (span) => span.name === 'dynamo_lock.acquire' && span.attributes['dynamo_lock.owner'] === 'heir',
    )!;
    expect(acquire.attributes['dynamo_lock.acquired_via']).toBe('takeover');
    expect(acquire.events.map((event) => event.name)).toEqual(['waiting', 'takeover']);
    expect(acquire.events[1].attributes).toMatchObject({
      'dynamo_lock.previous_holder.owner': 'dead',
      'dynamo_lock.previous_holder.fencing_token': stale.fencingToken,
    });
    expect(await counter('dynamo_lock.takeovers', {})).toBe(before.takeovers + 1);
    // The local waiter behind `first`, and the heir.
    expect(await counter('dynamo_lock.waits', {})).toBe(before.waits + 2);
  });

  it('ends the hold span when the release fails, and the held gauge comes back', async () => {
    const held = await counter('dynamo_lock.held', {});
    const manager = await ready(fixture.manager());
    const key = newKey('release-fails');
    const lock = await manager.acquire(key);
    injectFaults(manager.client).failNext('UpdateItem', { kind: 'server-error', times: 20 });
    await expect(lock.release()).rejects.toThrow(/Injected fault/);
    const hold = only(spansOf(key), 'dynamo_lock.hold');
    expect(hold.status.code).toBe(SpanStatusCode.ERROR);
    expect(hold.attributes['dynamo_lock.outcome']).toBe('release_failed');
    expect(await counter('dynamo_lock.held', {})).toBe(held);
    expect(await counter('dynamo_lock.release_failures', { 'dynamo_lock.release_outcome': 'error' })).toBeGreaterThanOrEqual(1);
  });

  it('keeps locking when the SDK throws', async () => {
    const manager = await ready(fixture.manager());
    const other = await ready(fixture.manager());
    const key = newKey('broken-sdk');
    processor.broken = true;
    try {
      let ran = false;
      await manager.withLock(key, () => {
        ran = true;
      });
      expect(ran).toBe(true);
      const lock = await manager.acquire(key);
      expect(await other.tryAcquire(key)).toBeNull();
      await lock.release();
      expect(await other.tryAcquire(key)).not.toBeNull();
    } finally {
      processor.broken = false;
    }
  });

  it('records nothing with telemetry: false', async () => {
    const acquired = { 'dynamo_lock.outcome': 'acquired', 'dynamo_lock.acquired_via': 'free' };
    const before = await counter('dynamo_lock.acquisitions', acquired);
    const manager = await ready(fixture.manager({ telemetry: false }));
    const key = newKey('off');
    await manager.withLock(key, () => undefined);
    expect(spansOf(key)).toEqual([]);
    expect(await counter('dynamo_lock.acquisitions', acquired)).toBe(before);
    // The same with telemetry on counts it: the check above can fail.
    await (await ready(fixture.manager())).withLock(key, () => undefined);
    expect(await counter('dynamo_lock.acquisitions', acquired)).toBe(before + 1);
  });

  it('matches the shapes the library assumes of @opentelemetry/api', () => {
    // Compile-time: the real module fits the structural types the library is built against.
    const api: OtelApi = otelApi;
    expect(typeof api.trace.getTracer).toBe('function');
  });
});

async function counter(name: string, attributes: Record<string, string>): Promise<number> {
  const value = (await metricPoints(name)).get(JSON.stringify(attributes));
  return typeof value === 'number' ? value : 0;
}

async function histogramCount(name: string, attributes: Record<string, string>): Promise<number> {
  const value = (await metricPoints(name)).get(JSON.stringify(attributes));
  return typeof value === 'object' ? value.count : 0;
}

/**
 * The part of `@opentelemetry/api` the library uses, described structurally so that the
 * package stays an optional peer: nothing in the published types refers to it. The build
 * checks the real module against these shapes (see `lock.telemetry.ts`).
 */

/** Attribute values the library records. */
export type OtelAttributes = Record<string, string | number | boolean | undefined>;

/** An OpenTelemetry context (only passed on here). */
export interface OtelContext {
  getValue(key: symbol): unknown;
  setValue(key: symbol, value: unknown): OtelContext;
  deleteValue(key: symbol): OtelContext;
}

/** The span operations the library uses. */
export interface OtelSpan {
  setAttributes(attributes: OtelAttributes): unknown;
  addEvent(name: string, attributes?: OtelAttributes): unknown;
  setStatus(status: { code: number; message?: string }): unknown;
  recordException(exception: Error | string): void;
  end(): void;
}

interface OtelTracer {
  startSpan(name: string, options: { kind: number; attributes: OtelAttributes }, context: OtelContext): OtelSpan;
}

interface OtelCounter {
  add(value: number, attributes?: OtelAttributes): void;
}

interface OtelHistogram {
  record(value: number, attributes?: OtelAttributes): void;
}

/** A meter: the instruments the library creates. */
export interface OtelMeter {
  createCounter(name: string, options: { description: string; unit?: string }): OtelCounter;
  createUpDownCounter(name: string, options: { description: string; unit?: string }): OtelCounter;
  createHistogram(name: string, options: { description: string; unit?: string }): OtelHistogram;
}

/** The module `@opentelemetry/api`, as far as the library uses it. */
export interface OtelApi {
  trace: {
    getTracerProvider(): object;
    getTracer(name: string, version?: string): OtelTracer;
    setSpan(context: OtelContext, span: OtelSpan): OtelContext;
  };
  metrics: {
    getMeterProvider(): object;
    getMeter(name: string, version?: string): OtelMeter;
  };
  context: {
    active(): OtelContext;
    with<T>(context: OtelContext, fn: () => T): T;
  };
  SpanKind: { INTERNAL: number };
  SpanStatusCode: { OK: number; ERROR: number };
}

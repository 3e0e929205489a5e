/** Small statistics and timing helpers shared by the scenarios. */
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Wall time in ms with sub-ms resolution. `performance.timeOrigin + performance.now()` is
 * comparable across processes on one host (each process anchors its monotonic clock to the
 * wall clock at start), which hand-over and takeover times need.
 */
export const wall = () => performance.timeOrigin + performance.now();

/** The q-quantile (0..1) of numbers, nearest-rank; `null` for an empty list. */
export function quantile(values, q) {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

export const median = (values) => quantile(values, 0.5);

/** `{ n, p50, p99, mean, max }` of a list of latencies, rounded to 0.01 ms. */
export function summarize(values) {
  const mean = values.length ? values.reduce((a, b) => a + b, 0) / values.length : null;
  return {
    n: values.length,
    p50: round(quantile(values, 0.5)),
    p99: round(quantile(values, 0.99)),
    mean: round(mean),
    max: round(values.length ? Math.max(...values) : null),
  };
}

export function round(value, digits = 2) {
  if (value === null || value === undefined || !Number.isFinite(value)) return value ?? null;
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/**
 * Holds for exactly `ms`: a timer for most of it, then a short spin. A bare setTimeout
 * overshoots by ~1 ms, which alone would cost 4% of a 20 ms hold against the limit.
 */
export async function holdFor(ms) {
  const until = performance.now() + ms;
  if (ms > 3) await sleep(ms - 2);
  while (performance.now() < until) {
    // spin for the last ~2 ms
  }
}

/** Sleeps until wall time `at` (ms). */
export async function sleepUntil(at) {
  const left = at - wall();
  if (left > 0) await sleep(left);
}

/** Runs `fn(i)` for i in [0, n) with at most `limit` running at once. */
export async function pool(n, limit, fn) {
  let next = 0;
  const results = new Array(n);
  const runner = async () => {
    while (next < n) {
      const i = next++;
      results[i] = await fn(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, n) }, runner));
  return results;
}

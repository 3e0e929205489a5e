'use strict';
/**
 * Preload (`node --require chaos/support/clock-skew.cjs`) that shifts this process's wall clock
 * by `CLOCK_SKEW_MS` milliseconds (positive: ahead, negative: behind), as on a host whose clock
 * is badly set:
 *
 * - `Date.now()` and `new Date()` (no arguments) return the shifted time;
 * - `Date()` called as a function returns the shifted time as a string;
 * - `new Date(value)`, `Date.parse`, `Date.UTC` and `instanceof Date` are unchanged.
 *
 * Monotonic clocks (`performance.now()`, `process.hrtime`) are not shifted: a skewed host still
 * measures durations correctly, which is all the lock relies on. The skew in force is published
 * as `globalThis.__chaosClockSkewMs`.
 */
const skew = Number(process.env.CLOCK_SKEW_MS ?? 0);
if (!Number.isFinite(skew)) {
  throw new Error(`CLOCK_SKEW_MS must be a number of milliseconds; got ${JSON.stringify(process.env.CLOCK_SKEW_MS)}`);
}

if (skew !== 0) {
  const RealDate = Date;
  const realNow = RealDate.now.bind(RealDate);
  const skewedNow = () => realNow() + skew;
  const SkewedDate = new Proxy(RealDate, {
    construct(target, args, newTarget) {
      return Reflect.construct(target, args.length === 0 ? [skewedNow()] : args, newTarget);
    },
    apply() {
      return new RealDate(skewedNow()).toString();
    },
  });
  RealDate.now = skewedNow;
  globalThis.Date = SkewedDate;
}

Object.defineProperty(globalThis, '__chaosClockSkewMs', { value: skew, enumerable: false });

'use strict';
/**
 * Preload (`node --require test/support/clock-skew.cjs`; the process tests and `chaos/` use it) that shifts this process's wall clock by
 * `CLOCK_SKEW_MS` milliseconds (positive: ahead, negative: behind), as a host with a
 * badly set clock would see it:
 *
 * - `Date.now()` and `new Date()` (no arguments) return the shifted time;
 * - `Date()` called as a function returns the shifted time as a string;
 * - `new Date(value)`, `Date.parse`, `Date.UTC` and `instanceof Date` are unchanged.
 *
 * Monotonic clocks (`performance.now()`, `process.hrtime`) are NOT shifted: a skewed host
 * still measures durations correctly, which is what the lock relies on.
 *
 * The applied skew is published as `globalThis.__clockSkewMs` for the worker to report.
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
    // `new Date()` → shifted now; `new Date(anything)` → unchanged.
    construct(target, args, newTarget) {
      return Reflect.construct(target, args.length === 0 ? [skewedNow()] : args, newTarget);
    },
    // `Date()` as a function ignores its arguments and returns the current time as a string.
    apply() {
      return new RealDate(skewedNow()).toString();
    },
  });
  // `Date.now` is read through the proxy from the real constructor, so replacing it there
  // shifts it for both (and for any code holding the original constructor).
  RealDate.now = skewedNow;
  globalThis.Date = SkewedDate;
}

Object.defineProperty(globalThis, '__clockSkewMs', { value: skew, enumerable: false });

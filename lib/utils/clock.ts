/** The local clock: monotonic time, abortable sleeps and jitter. Never compared across hosts. */

/**
 * Resolves after `ms`, or rejects with the signal's reason as soon as it aborts. With `unref`, the
 * timer does not keep the process alive (background work that a shutdown would end anyway).
 */
export function sleep(ms: number, signal?: AbortSignal, unref = false): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(
      () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      },
      Math.max(0, ms),
    );
    if (unref) timer.unref();
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Settles as `work` does, or rejects with the signal's reason as soon as it aborts. */
export function untilAborted<T>(signal: AbortSignal, work: Promise<T>): Promise<T> {
  // Once the signal won, the work's own rejection is expected: do not report it as unhandled.
  work.catch(() => undefined);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    const settled = () => signal.removeEventListener('abort', onAbort);
    work.then(
      (value) => {
        settled();
        resolve(value);
      },
      (error: unknown) => {
        settled();
        reject(error);
      },
    );
  });
}

/** `ms` scaled by a random factor in [1 - spread, 1 + spread], so waiters do not move in lock-step. */
export function jitter(ms: number, spread = 0.25): number {
  return Math.round(ms * (1 - spread + Math.random() * 2 * spread));
}

/** The local monotonic clock in milliseconds. Never compared across hosts. */
export function monotonicNow(): number {
  return performance.now();
}

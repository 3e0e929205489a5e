/**
 * An `AbortController` whose `AbortSignal`, and whose abort reason, are made only when something
 * reads them. Every lock handle and every caller has one, and on the uncontended path nobody reads
 * either: making a signal, an `AbortError` (a stack trace) or a lost-lock error and dispatching
 * the abort cost more CPU than the rest of the engine's work for that lock. What is read behaves
 * as with an `AbortController`: the signal, made after the abort, is aborted already with the same
 * reason; made before, it aborts when this does.
 */
export class LazyAbortController {
  #controller: AbortController | undefined;
  #aborted = false;
  #reason: unknown;
  #makeReason: (() => unknown) | undefined;
  #listeners: (() => void)[] | undefined;

  /** The signal, made at the first read. */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.reason);
    }
    return this.#controller.signal;
  }

  /** Whether it was aborted, without making the signal. */
  get aborted(): boolean {
    return this.#aborted;
  }

  /** The abort reason (made at the first read), `undefined` before the abort; the signal is not made. */
  get reason(): unknown {
    if (this.#makeReason !== undefined) {
      this.#reason = this.#makeReason();
      this.#makeReason = undefined;
    }
    return this.#reason;
  }

  /** Calls `listener` once, at the abort (not when aborted already), without making the signal. */
  onAbort(listener: () => void): void {
    if (!this.#aborted) (this.#listeners ??= []).push(listener);
  }

  /** Aborts with `reason` (an `AbortError`, as `AbortController` has, when none is given); later calls do nothing. */
  abort(reason?: unknown): void {
    this.abortWith(reason === undefined ? abortError : () => reason);
  }

  /** Aborts with the reason `makeReason` makes when the reason is first read (at once when the signal exists). */
  abortWith(makeReason: () => unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#makeReason = makeReason;
    const listeners = this.#listeners;
    this.#listeners = undefined;
    this.#controller?.abort(this.reason);
    if (listeners) for (const listener of listeners) listener();
  }
}

/** The reason `AbortController.abort()` gives when called without one. */
function abortError(): DOMException {
  return new DOMException('This operation was aborted', 'AbortError');
}

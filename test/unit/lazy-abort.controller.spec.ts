import { describe, expect, it, jest } from '@jest/globals';
import { LazyAbortController } from '../../lib/utils/lazy-abort.controller';

describe('LazyAbortController', () => {
  it('a signal read before the abort aborts with the reason, once, and listeners run once', () => {
    const controller = new LazyAbortController();
    const { signal } = controller;
    const onSignal = jest.fn();
    const onAbort = jest.fn();
    signal.addEventListener('abort', onSignal);
    controller.onAbort(onAbort);
    expect(signal.aborted).toBe(false);
    expect(controller.aborted).toBe(false);
    expect(controller.reason).toBeUndefined();
    const reason = new Error('first');
    controller.abort(reason);
    controller.abort(new Error('second'));
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe(reason);
    expect(controller.reason).toBe(reason);
    expect(controller.signal).toBe(signal);
    expect(onSignal).toHaveBeenCalledTimes(1);
    expect(onAbort).toHaveBeenCalledTimes(1);
  });

  it('a signal first read after the abort is aborted already, with the same reason', () => {
    const controller = new LazyAbortController();
    const makeReason = jest.fn(() => new Error('lost'));
    controller.abortWith(makeReason);
    expect(controller.aborted).toBe(true);
    // Nothing read yet: the reason is not made.
    expect(makeReason).not.toHaveBeenCalled();
    const { signal } = controller;
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe(controller.reason);
    expect(() => signal.throwIfAborted()).toThrow('lost');
    expect(makeReason).toHaveBeenCalledTimes(1);
  });

  it('makes the reason at once when the signal exists, so its listeners see it', () => {
    const controller = new LazyAbortController();
    let seen: unknown;
    controller.signal.addEventListener('abort', () => (seen = controller.signal.reason));
    controller.abortWith(() => new Error('released'));
    expect(seen).toBeInstanceOf(Error);
    expect(seen).toBe(controller.reason);
  });

  it('without a reason aborts with an AbortError, as AbortController does', () => {
    const controller = new LazyAbortController();
    controller.abort();
    expect(controller.reason).toBeInstanceOf(DOMException);
    expect(controller.reason).toMatchObject({ name: 'AbortError' });
    expect(controller.signal.reason).toBe(controller.reason);
  });

  it('onAbort after the abort does not call the listener (as addEventListener on an aborted signal)', () => {
    const controller = new LazyAbortController();
    controller.abort('why');
    const listener = jest.fn();
    controller.onAbort(listener);
    expect(listener).not.toHaveBeenCalled();
  });
});

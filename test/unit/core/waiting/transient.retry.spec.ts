/**
 * What a waiter does with a failed request (rethrow it, or keep it as its last error and retry),
 * how a retry is told, and the error of a wait that ended without an answer showing a holder.
 */
import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { RetryBackoff } from '../../../../lib/core/waiting/retry.backoff';
import { reportRetry, stepUntilGranted, takeTransient, unavailableError } from '../../../../lib/core/waiting/transient.retry';
import { LockUnavailableError } from '../../../../lib/errors/lock.errors';
import type { AcquireOptions } from '../../../../lib/interfaces/acquire-options.interface';
import { engineOptions, namedError, newCaller } from '../support/engine.fixture';

function caller(wait: AcquireOptions['wait']) {
  const { options } = engineOptions({ requestTimeout: 700 });
  return newCaller(options, 'invoice-7', { wait }).waiter;
}

describe('takeTransient', () => {
  it.each([
    ['a plain error', new Error('boom')],
    ['a bad request', namedError('ValidationException')],
    ['access denied', namedError('AccessDeniedException')],
    ['a failed condition', namedError('ConditionalCheckFailedException')],
    ['not an error', 'boom'],
  ])('throws %s on, and leaves the waiter’s last error alone', (_, error) => {
    const waiter = caller(true);
    const earlier = namedError('ThrottlingException');
    waiter.lastError = earlier;
    expect(() => takeTransient(waiter, error)).toThrow();
    try {
      takeTransient(waiter, error);
    } catch (thrown) {
      expect(thrown).toBe(error);
    }
    expect(waiter.lastError).toBe(earlier);
  });

  it.each([
    ['throttling', namedError('ThrottlingException')],
    ['a time-out', namedError('TimeoutError')],
    ['a broken connection', Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' })],
    ['a 5xx answer', Object.assign(new Error('unavailable'), { $metadata: { httpStatusCode: 503 } })],
  ])('keeps %s as the waiter’s last error, without throwing', (_, error) => {
    const waiter = caller(true);
    expect(() => takeTransient(waiter, error)).not.toThrow();
    expect(waiter.lastError).toBe(error);
  });
});

describe('reportRetry', () => {
  it('warns and emits a retry event of the acquisition, with the error and the pause', () => {
    const { options, logger } = engineOptions();
    const waiter = newCaller(options, 'invoice-7').waiter;
    const emitted: unknown[] = [];
    const error = namedError('ThrottlingException', 'Rate exceeded');
    reportRetry({ options, emit: (event) => void emitted.push(event) }, waiter, error, 120.4);
    expect(emitted).toEqual([{ type: 'retry', key: 'invoice-7', owner: 'this-process', operation: 'acquire', error, delayMs: 120.4 }]);
    expect(logger.warn).toHaveBeenCalledTimes(1);
    const message = String(logger.warn.mock.calls[0][0]);
    expect(message).toContain('"invoice-7"');
    expect(message).toContain('ThrottlingException: Rate exceeded');
    expect(message).toContain('retrying in 120 ms');
  });
});

describe('unavailableError', () => {
  beforeEach(() => {
    jest.useFakeTimers({ now: 1_700_000_000_000 });
  });
  afterEach(() => {
    jest.useRealTimers();
  });

  it('tells a single attempt (wait: false) from a wait, and counts the time waited', () => {
    const single = caller(false);
    const waited = caller('5s');
    jest.advanceTimersByTime(1_234);
    const once = unavailableError(single, 700, undefined);
    expect(once.message).toContain('one attempt (wait: false)');
    expect(once.message).not.toContain('trying for');
    const long = unavailableError(waited, 700, undefined);
    expect(long.message).toContain('trying for 1234 ms');
    expect(long.message).not.toContain('wait: false');
    expect(long.waitedMs).toBe(1_234);
    expect(once.waitedMs).toBe(1_234);
  });

  it('says DynamoDB did not answer when nothing failed, and carries no cause', () => {
    const error = unavailableError(caller(true), 700, undefined);
    expect(error).toBeInstanceOf(LockUnavailableError);
    expect(error.message).toContain('did not answer in time');
    expect(error.message).toContain('not a busy lock');
    expect(error.key).toBe('invoice-7');
    expect(error.requestTimeoutMs).toBe(700);
    expect('cause' in error).toBe(false);
  });

  it('names the last failure and keeps it as the cause', () => {
    const cause = namedError('ThrottlingException', 'Rate exceeded');
    const error = unavailableError(caller(true), 700, cause);
    expect(error.message).toContain('failed (ThrottlingException: Rate exceeded)');
    expect(error.message).not.toContain('did not answer');
    expect(error.cause).toBe(cause);
  });
});

describe('stepUntilGranted', () => {
  function stepped(steps: Array<() => Promise<string | undefined>>, wait: AcquireOptions['wait'] = '5s') {
    const { options } = engineOptions();
    const waiter = newCaller(options, 'invoice-7', { wait }).waiter;
    const emitted: unknown[] = [];
    const calls = { failed: 0, cleanUp: 0, steps: 0 };
    const deadline = new Error('deadline');
    const run = stepUntilGranted<string>({
      waiter,
      reporter: { options, emit: (event) => void emitted.push(event) },
      backoff: new RetryBackoff(),
      single: waiter.deadline <= waiter.startedAt,
      step: () => steps[calls.steps++](),
      failed: () => void calls.failed++,
      deadlineError: () => deadline,
      cleanUp: () => {
        calls.cleanUp++;
        return Promise.resolve();
      },
    });
    return { run, waiter, emitted, calls, deadline };
  }

  it('steps until one grants, retrying a transient failure after a pause it reports', async () => {
    jest.spyOn(Math, 'random').mockReturnValue(0.5);
    const { run, emitted, calls } = stepped([
      () => Promise.resolve(undefined),
      () => Promise.reject(namedError('ThrottlingException')),
      () => Promise.resolve('granted'),
    ]);
    await expect(run).resolves.toBe('granted');
    expect(calls).toEqual({ failed: 1, cleanUp: 0, steps: 3 });
    expect(emitted).toEqual([expect.objectContaining({ type: 'retry', delayMs: 50 })]);
  });

  it('ends at once on an error that is not transient, cleaning up once and reporting no retry', async () => {
    const error = namedError('AccessDeniedException');
    const { run, emitted, calls } = stepped([() => Promise.reject(error)]);
    await expect(run).rejects.toBe(error);
    expect(calls).toEqual({ failed: 0, cleanUp: 1, steps: 1 });
    expect(emitted).toEqual([]);
  });

  it('ends a single attempt on its first transient failure with the deadline error, cleaning up once', async () => {
    const { run, calls, deadline, waiter } = stepped([() => Promise.reject(namedError('TimeoutError'))], false);
    await expect(run).rejects.toBe(deadline);
    expect(calls).toEqual({ failed: 1, cleanUp: 1, steps: 1 });
    expect(waiter.lastError).toMatchObject({ name: 'TimeoutError' });
  });

  it('cleans up when the caller gave up before the first step, and takes no step', async () => {
    const { options } = engineOptions();
    const waiter = newCaller(options, 'invoice-7', { wait: '5s' }).waiter;
    const reason = new Error('gave up');
    waiter.cancel.abort(reason);
    const cleanUp = jest.fn(() => Promise.resolve());
    const step = jest.fn(() => Promise.resolve('granted'));
    const run = stepUntilGranted<string>({
      waiter,
      reporter: { options, emit: () => undefined },
      backoff: new RetryBackoff(),
      single: false,
      step,
      failed: () => undefined,
      deadlineError: () => new Error('deadline'),
      cleanUp,
    });
    await expect(run).rejects.toBe(reason);
    expect(step).not.toHaveBeenCalled();
    expect(cleanUp).toHaveBeenCalledTimes(1);
  });
});

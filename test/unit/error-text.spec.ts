/**
 * How DynamoDB's failures read in messages: the AWS SDK names a broken connection (ECONNRESET,
 * EPIPE) `TimeoutError`, which must not read as a time-out; real time-outs keep their name.
 */
import { describe, expect, it } from '@jest/globals';
import { errorText as cliErrorText } from '../../lib/cli/cli.messages';
import { LOCK_UNAVAILABLE } from '../../lib/errors/lock.messages';
import { transientKind } from '../../lib/store/dynamo/transient-error';

/** An error as the SDK's HTTP handler rejects with. */
function sdkError(name: string, message: string, code?: string): Error {
  return Object.assign(new Error(message), { name, ...(code === undefined ? {} : { code }) });
}

describe('error text of DynamoDB failures', () => {
  const reset = sdkError('TimeoutError', 'read ECONNRESET', 'ECONNRESET');
  const hangUp = sdkError('TimeoutError', 'socket hang up', 'ECONNRESET');
  const pipe = sdkError('TimeoutError', 'write EPIPE', 'EPIPE');
  const connectTimeout = sdkError('TimeoutError', 'connect ETIMEDOUT 10.0.0.1:443', 'ETIMEDOUT');
  const ownTimeout = sdkError('TimeoutError', 'GetItem did not answer within 300 ms');

  it('shows a broken connection by what happened, with its code, not as a time-out', () => {
    expect(LOCK_UNAVAILABLE('k', undefined, reset)).toContain('DynamoDB failed (read ECONNRESET)');
    expect(LOCK_UNAVAILABLE('k', undefined, hangUp)).toContain('DynamoDB failed (socket hang up (ECONNRESET))');
    expect(LOCK_UNAVAILABLE('k', undefined, pipe)).toContain('DynamoDB failed (write EPIPE)');
    expect(cliErrorText(reset)).toBe('read ECONNRESET');
    expect(cliErrorText(hangUp)).toBe('socket hang up (ECONNRESET)');
    for (const error of [reset, hangUp, pipe]) expect(transientKind(error)).toBe('failed');
  });

  it('keeps the name of a real time-out', () => {
    expect(LOCK_UNAVAILABLE('k', undefined, connectTimeout)).toContain('DynamoDB failed (TimeoutError: connect ETIMEDOUT 10.0.0.1:443)');
    expect(LOCK_UNAVAILABLE('k', undefined, ownTimeout)).toContain('DynamoDB failed (TimeoutError: GetItem did not answer within 300 ms)');
    expect(cliErrorText(connectTimeout)).toBe('TimeoutError: connect ETIMEDOUT 10.0.0.1:443');
    for (const error of [connectTimeout, ownTimeout]) expect(transientKind(error)).toBe('timed-out');
  });
});

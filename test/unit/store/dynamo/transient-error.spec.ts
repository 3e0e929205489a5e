/**
 * Errors from another realm (Jest's VM modules, `vm`): Node's network errors are made in the main
 * realm, so under Jest the AWS SDK's retry middleware fails `instanceof Error` on them and throws a
 * wrapper that keeps only their text (`AWS SDK error wrapper for Error: connect ECONNREFUSED ...`).
 * The errors here are built in a new `vm` context and sent through a real DynamoDB client, whose
 * request handler rejects with them, so the tests see what the SDK really throws.
 */
import { runInNewContext } from 'node:vm';
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from '@jest/globals';
import { connectionProblem, isTransientError, transientKind } from '../../../../lib/store/dynamo/transient-error';

/** An error made by `source` in a realm of its own: `instanceof Error` is false here. */
function foreignError(source: string): object {
  const error: unknown = runInNewContext(source);
  if (typeof error !== 'object' || error === null || error instanceof Error) throw new Error(`not a foreign error: ${String(error)}`);
  return error;
}

/** What a `GetItem` rejects with when every attempt of the SDK fails with `error`. */
async function sdkFailure(error: object): Promise<Error & { $metadata?: Record<string, unknown> }> {
  const client = new DynamoDBClient({
    region: 'us-east-1',
    endpoint: 'http://127.0.0.1:9',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 2,
    requestHandler: {
      handle: () => Promise.reject(error),
    },
  });
  try {
    await client.send(new GetItemCommand({ TableName: 'locks', Key: { key: { S: 'k' } } }));
  } catch (thrown) {
    return thrown as Error & { $metadata?: Record<string, unknown> };
  } finally {
    client.destroy();
  }
  throw new Error('the request succeeded');
}

const refused = `Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED', errno: -111, syscall: 'connect' })`;
// What the SDK's HTTP handler makes of a reset: Node's error, renamed `TimeoutError`.
const reset = `Object.assign(new Error('socket hang up'), { code: 'ECONNRESET', name: 'TimeoutError' })`;
// Node's failed connection to every address of a host: an AggregateError without a message.
const everyAddress = `Object.assign(new AggregateError([Object.assign(new Error('connect ECONNREFUSED ::1:9'), { code: 'ECONNREFUSED' }), Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' })]), { code: 'ECONNREFUSED' })`;

describe('an SDK error wrapping an error of another realm', () => {
  it('the SDK keeps only the text of a foreign network error (the shape these tests rely on)', async () => {
    const thrown = await sdkFailure(foreignError(refused));
    expect(thrown).toBeInstanceOf(Error);
    expect(thrown.message).toBe('AWS SDK error wrapper for Error: connect ECONNREFUSED 127.0.0.1:9');
    expect(thrown).not.toHaveProperty('code');
    expect(thrown.$metadata).toMatchObject({ attempts: 2 });
    expect(thrown.$metadata).not.toHaveProperty('httpStatusCode');
    // …and is an outage, as the same error of this realm is.
    expect(isTransientError(thrown)).toBe(true);
  });

  it.each([
    ['a refused connection', refused, 'failed'],
    ['a reset connection (socket hang up)', reset, 'failed'],
    ['a connection refused at every address of a host', everyAddress, 'failed'],
  ])('%s is transient and unreachable, told as a failure', async (_, source, kind) => {
    const thrown = await sdkFailure(foreignError(source));
    expect(isTransientError(thrown)).toBe(true);
    expect(connectionProblem(thrown)).toMatchObject({ kind: 'unreachable' });
    expect(transientKind(thrown)).toBe(kind);
  });

  it('a foreign time-out is transient and told as one', async () => {
    const thrown = await sdkFailure(foreignError(`Object.assign(new Error('connect ETIMEDOUT 10.0.0.1:443'), { code: 'ETIMEDOUT' })`));
    expect(isTransientError(thrown)).toBe(true);
    expect(transientKind(thrown)).toBe('timed-out');
  });

  it('a foreign error that is no outage stays not transient, while a wrapped network error is', async () => {
    const invalidUrl = await sdkFailure(foreignError(`Object.assign(new TypeError('Invalid URL'), { code: 'ERR_INVALID_URL' })`));
    expect(invalidUrl.message).toMatch(/^AWS SDK error wrapper for TypeError: Invalid URL/);
    expect(isTransientError(invalidUrl)).toBe(false);
    expect(isTransientError(await sdkFailure(foreignError(refused)))).toBe(true);
  });

  it('the text alone is not enough: an answer of DynamoDB (an HTTP status) that quotes the wrapper is not an outage', () => {
    const answered = Object.assign(new Error('AWS SDK error wrapper for Error: connect ECONNREFUSED 127.0.0.1:9'), {
      name: 'ValidationException',
      $metadata: { httpStatusCode: 400 },
    });
    expect(isTransientError(answered)).toBe(false);
    expect(connectionProblem(answered)).toBeUndefined();
    const unanswered = Object.assign(new Error('AWS SDK error wrapper for Error: connect ECONNREFUSED 127.0.0.1:9'), {
      $metadata: { attempts: 3 },
    });
    expect(isTransientError(unanswered)).toBe(true);
  });

  it('an SDK error without an answer that keeps the foreign error as its cause is read through the cause', () => {
    const wrapper = new Error('request failed', { cause: foreignError(refused) });
    Object.assign(wrapper, { $metadata: { attempts: 3, totalRetryDelay: 150 } });
    expect(isTransientError(wrapper)).toBe(true);
    expect(connectionProblem(wrapper)).toMatchObject({ kind: 'unreachable' });
    // A cause says nothing once DynamoDB answered, nor on an error that is not the SDK's.
    expect(
      isTransientError(Object.assign(new Error('denied', { cause: foreignError(refused) }), { $metadata: { httpStatusCode: 403 } })),
    ).toBe(false);
    expect(isTransientError(new Error('failed', { cause: foreignError(refused) }))).toBe(false);
  });
});

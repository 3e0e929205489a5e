/**
 * A request that outlives its limit: rejected with a `TimeoutError`, and its HTTP request in flight
 * destroyed (the abort reaches the SDK's request handler), so a hung server keeps no socket busy.
 */
import { createServer as createHttpServer } from 'node:http';
import { createServer, type Server, type Socket } from 'node:net';
import { FetchHttpHandler } from '@smithy/fetch-http-handler';
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { sendWithinLimit } from '../../../../lib/store/dynamo/timed-request';

/** A loopback server that accepts connections and never answers; counts the ones the client closed. */
function hungServer(): Promise<{ server: Server; endpoint: string; closedByClient: () => number; open: Set<Socket> }> {
  let closed = 0;
  const open = new Set<Socket>();
  const server = createServer((socket) => {
    open.add(socket);
    socket.on('data', () => undefined);
    socket.on('error', () => undefined);
    socket.on('close', () => {
      open.delete(socket);
      closed++;
    });
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      resolve({ server, endpoint: `http://127.0.0.1:${port}`, closedByClient: () => closed, open });
    });
  });
}

describe('sendWithinLimit', () => {
  let hung: Awaited<ReturnType<typeof hungServer>>;
  let client: DynamoDBClient;

  beforeAll(async () => {
    hung = await hungServer();
    client = new DynamoDBClient({
      region: 'us-east-1',
      endpoint: hung.endpoint,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      maxAttempts: 1,
    });
  });

  afterAll(async () => {
    client.destroy();
    for (const socket of hung.open) socket.destroy();
    await new Promise((resolve) => hung.server.close(resolve));
  });

  it('rejects with a TimeoutError at the limit and destroys the request in flight', async () => {
    const command = new GetItemCommand({ TableName: 'locks', Key: { key: { S: 'k' } } });
    const started = performance.now();
    const sent = sendWithinLimit(client, command, 150, () => 'timed out');
    await expect(sent).rejects.toMatchObject({ name: 'TimeoutError', message: 'timed out' });
    expect(performance.now() - started).toBeLessThan(2_000);
    // The SDK saw the abort: its HTTP request was destroyed, which closes the connection.
    const until = performance.now() + 2_000;
    while (hung.closedByClient() === 0 && performance.now() < until) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(hung.closedByClient()).toBe(1);
  });

  it('sends with a fetch request handler too (it takes a platform AbortSignal only), and times out there as well', async () => {
    // A server that answers every request as DynamoDB answers a GetItem that finds nothing.
    const answering = createHttpServer((request, response) => {
      request.resume();
      request.on('end', () => {
        response.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' });
        response.end('{}');
      });
    });
    await new Promise<void>((resolve) => answering.listen(0, '127.0.0.1', resolve));
    const address = answering.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const options = { region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' }, maxAttempts: 1 };
    const fetching = new DynamoDBClient({ ...options, endpoint: `http://127.0.0.1:${port}`, requestHandler: new FetchHttpHandler() });
    const fetchingHung = new DynamoDBClient({ ...options, endpoint: hung.endpoint, requestHandler: new FetchHttpHandler() });
    try {
      const command = () => new GetItemCommand({ TableName: 'locks', Key: { key: { S: 'k' } } });
      await expect(sendWithinLimit(fetching, command(), 2_000, () => 'timed out')).resolves.toMatchObject({
        $metadata: { httpStatusCode: 200 },
      });
      await expect(sendWithinLimit(fetchingHung, command(), 150, () => 'timed out')).rejects.toMatchObject({ name: 'TimeoutError' });
    } finally {
      fetching.destroy();
      fetchingHung.destroy();
      await new Promise((resolve) => answering.close(resolve));
    }
  });
});

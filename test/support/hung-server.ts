import { createConnection, createServer, type Server, type Socket } from 'node:net';

/** A loopback TCP endpoint for DynamoDB clients; {@link HungServer.close} ends every connection. */
export interface HungServer {
  /** `http://127.0.0.1:<port>`, for `clientConfig.endpoint`. */
  readonly endpoint: string;
  /** Connections accepted so far. */
  readonly connections: number;
  /** Stops listening and destroys every open connection. */
  close(): Promise<void>;
}

/** What a {@link StallingProxy} does with traffic now. */
export type ProxyMode =
  /** Forward both ways. */
  | { kind: 'pass' }
  /** Forward requests at once, and hold every answer back for `ms`. */
  | { kind: 'delay'; ms: number }
  /** Accept connections and swallow requests: nothing reaches the server, nothing is answered. */
  | { kind: 'hang' }
  /** Reset each connection at its next request: every request fails at once. */
  | { kind: 'reset' };

/** A TCP proxy in front of a test server whose behaviour can be switched mid-test. */
export interface StallingProxy extends HungServer {
  mode: ProxyMode;
  /** HTTP requests passed through so far (the chunks that start one); a hung server counts none. */
  readonly requests: number;
  /** Switches to `mode` when request number `requests + 1` arrives, before handling it. */
  switchAfter(requests: number, mode: ProxyMode): void;
}

/** The start of an HTTP request line (the SDK sends POST; a keep-alive connection carries several). */
const REQUEST_LINE = /^(GET|POST|PUT|DELETE|HEAD) \S+ HTTP\/1\.1\r\n/;

/**
 * A server that accepts TCP connections and never answers: DynamoDB hung, or a black-holed
 * network path whose connections still open.
 */
export function startHungServer(): Promise<HungServer> {
  return startProxy(undefined, { kind: 'hang' });
}

/** A proxy on 127.0.0.1 in front of `target` (an `http://host:port` endpoint), starting in `mode`. */
export function startStallingProxy(target: string, mode: ProxyMode = { kind: 'pass' }): Promise<StallingProxy> {
  return startProxy(new URL(target), mode);
}

function startProxy(target: URL | undefined, initial: ProxyMode): Promise<StallingProxy> {
  const sockets = new Set<Socket>();
  let connections = 0;
  let requests = 0;
  let pending: { after: number; mode: ProxyMode } | undefined;
  let endpoint = '';
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    // A destroyed peer must not crash the test process.
    socket.on('error', () => socket.destroy());
  };
  const proxy: StallingProxy = {
    mode: initial,
    get endpoint() {
      return endpoint;
    },
    get connections() {
      return connections;
    },
    get requests() {
      return requests;
    },
    switchAfter(after, mode) {
      pending = { after, mode };
    },
    close: () =>
      new Promise<void>((done) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => done());
      }),
  };
  const server: Server = createServer((client) => {
    connections++;
    track(client);
    if (!target) return;
    const upstream = createConnection({ host: target.hostname, port: Number(target.port) });
    track(upstream);
    client.on('data', (chunk: Buffer) => {
      if (REQUEST_LINE.test(chunk.toString('latin1', 0, 256))) {
        if (pending && requests >= pending.after) {
          proxy.mode = pending.mode;
          pending = undefined;
        }
        requests++;
      }
      if (proxy.mode.kind === 'reset') return void client.resetAndDestroy();
      // A hang also swallows requests on connections that were opened before it.
      if (proxy.mode.kind !== 'hang') upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      const mode = proxy.mode;
      if (mode.kind === 'hang') return;
      if (mode.kind === 'delay') setTimeout(() => client.writable && client.write(chunk), mode.ms);
      else client.write(chunk);
    });
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      endpoint = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`;
      resolve(proxy);
    });
  });
}

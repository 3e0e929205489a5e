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
  | { kind: 'hang' };

/** A TCP proxy in front of a test server whose behaviour can be switched mid-test. */
export interface StallingProxy extends HungServer {
  mode: ProxyMode;
}

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
    client.on('data', (chunk) => {
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

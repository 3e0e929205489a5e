import type { AddressInfo } from 'node:net';
import dynalite from 'dynalite';
import type { RunningServer } from './running-server';

/** Starts an in-memory dynalite server on a free 127.0.0.1 port, in this process. */
export async function startDynalite(): Promise<RunningServer> {
  const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  let stopped: Promise<void> | undefined;
  return {
    name: 'dynalite',
    endpoint: `http://127.0.0.1:${port}`,
    stop() {
      stopped ??= new Promise<void>((resolve, reject) => {
        server.close((error?: Error) => (error ? reject(error) : resolve()));
        // Keep-alive sockets of SDK clients would otherwise delay close().
        server.closeAllConnections();
      });
      return stopped;
    },
  };
}

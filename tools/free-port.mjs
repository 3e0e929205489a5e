// @ts-check
import { createServer } from 'node:net';

/**
 * Returns a TCP port on 127.0.0.1 that was free a moment ago (bind to port 0,
 * read the port, close). Another process may still take it before use.
 * @returns {Promise<number>}
 */
export function findFreePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => (port > 0 ? resolve(port) : reject(new Error('could not read a free port'))));
    });
  });
}

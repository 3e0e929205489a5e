/**
 * Child process: an in-memory dynalite server on a free loopback port. Sends
 * `{ type: 'listening', endpoint }` over IPC and exits when the parent goes away.
 */
import dynalite from 'dynalite';

const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
server.listen(0, '127.0.0.1', () => {
  process.send({ type: 'listening', endpoint: `http://127.0.0.1:${server.address().port}` });
});
process.on('disconnect', () => process.exit(0));

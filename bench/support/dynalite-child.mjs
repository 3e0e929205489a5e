/**
 * Runs dynalite in its own process (forked by server.mjs), so the server's CPU time never
 * lands on the event loop of a process being measured. Reports `{ port }` over IPC.
 */
import dynalite from 'dynalite';

const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
server.listen(0, '127.0.0.1', () => process.send({ type: 'listening', port: server.address().port }));
// Exit with the parent.
process.on('disconnect', () => process.exit(0));

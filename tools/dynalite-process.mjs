// @ts-check
/**
 * Child process (forked by `startDynalite({ childProcess: true })`): an in-memory dynalite server
 * on a free loopback port, so the server's CPU time never lands on the event loop of the process
 * that measures. Sends `{ type: 'listening', endpoint }` over IPC; exits when the parent goes away.
 */
import { startDynaliteHere } from './dynalite.mjs';

const { endpoint } = await startDynaliteHere();
process.send?.({ type: 'listening', endpoint });
process.on('disconnect', () => process.exit(0));

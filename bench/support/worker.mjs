/**
 * Process plumbing. Every measured workload runs in a forked child, so that the server, the
 * counting proxy and the orchestrator never share an event loop, heap or timers with it, and
 * whatever a system leaves running after a segment dies with its process.
 *
 * A scenario file is both the orchestrator side (exported `run`) and the child side: when
 * forked it calls `workerMain(handler)`; the config is argv[2] (JSON), messages are
 * `{ type, ...fields }` both ways.
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const children = new Set();
process.once('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});

/** Forks `file` with `config`; returns a small handle to talk to it. */
export function forkWorker(file, config, { execArgv = [] } = {}) {
  const child = fork(fileURLToPath(file), [JSON.stringify(config)], {
    execArgv,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  children.add(child);
  const inbox = [];
  const waiting = [];
  let exit;
  let failure = '';
  const exited = new Promise((resolve) =>
    child.once('exit', (code, signal) => {
      children.delete(child);
      exit = { code, signal };
      resolve(exit);
      for (const w of waiting.splice(0))
        w.reject(new Error(`${label()} exited (${signal ?? code}) while waiting for '${w.type}'${failure && `: ${failure}`}`));
    }),
  );
  const label = () => `worker ${config.role ?? ''} ${config.system ?? ''} (pid ${child.pid})`.replace(/\s+/g, ' ');
  child.on('message', (message) => {
    if (message?.type === 'error') {
      failure = message.message;
      const error = new Error(`${label()}: ${failure}`);
      for (const w of waiting.splice(0)) w.reject(error);
      return;
    }
    const i = waiting.findIndex((w) => w.type === message.type);
    if (i >= 0) waiting.splice(i, 1)[0].resolve(message);
    else inbox.push(message);
  });
  return {
    pid: child.pid,
    /** The next message of `type` (already received or still to come). */
    next(type, timeoutMs = 120_000) {
      const i = inbox.findIndex((m) => m.type === type);
      if (i >= 0) return Promise.resolve(inbox.splice(i, 1)[0]);
      if (exit)
        return Promise.reject(new Error(`${label()} exited (${exit.signal ?? exit.code}) before '${type}'${failure && `: ${failure}`}`));
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`${label()}: no '${type}' within ${timeoutMs} ms`)), timeoutMs);
        waiting.push({
          type,
          resolve: (m) => (clearTimeout(timer), resolve(m)),
          reject: (e) => (clearTimeout(timer), reject(e)),
        });
      });
    },
    /** Every message of `type` received so far that nobody waited for, removed from the inbox. */
    drain(type) {
      const taken = inbox.filter((m) => m.type === type);
      for (const m of taken) inbox.splice(inbox.indexOf(m), 1);
      return taken;
    },
    send(type, fields = {}) {
      if (child.connected) child.send({ type, ...fields });
    },
    kill(signal) {
      child.kill(signal);
    },
    exited,
  };
}

/** True when `importMetaUrl` is the module Node was started with (the file was forked). */
export function isMain(importMetaUrl) {
  return process.argv[1] !== undefined && fileURLToPath(importMetaUrl) === process.argv[1];
}

/**
 * The child side: runs `handler(config, io)`, where `io.send(type, fields)` reports to the
 * parent and `io.next(type)` waits for a parent message. Exits when the handler is done.
 */
export function workerMain(handler) {
  const config = JSON.parse(process.argv[2] ?? '{}');
  const inbox = [];
  const waiting = [];
  process.on('message', (message) => {
    const i = waiting.findIndex((w) => w.type === message.type);
    if (i >= 0) waiting.splice(i, 1)[0].resolve(message);
    else inbox.push(message);
  });
  // The orchestrator is gone: nobody reads our results.
  process.on('disconnect', () => process.exit(0));
  const io = {
    send: (type, fields = {}) =>
      new Promise((resolve) => (process.connected ? process.send({ type, ...fields }, () => resolve()) : resolve())),
    next: (type) => {
      const i = inbox.findIndex((m) => m.type === type);
      if (i >= 0) return Promise.resolve(inbox.splice(i, 1)[0]);
      return new Promise((resolve) => waiting.push({ type, resolve }));
    },
  };
  handler(config, io).then(
    () => process.exit(0),
    async (error) => {
      await io.send('error', { message: error?.stack ?? String(error) });
      process.exit(1);
    },
  );
}

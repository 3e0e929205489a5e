/**
 * Last-resort cleanup for child processes: runs registered synchronous kill
 * functions when this process exits or is interrupted (SIGINT, SIGTERM,
 * SIGHUP), even if Jest never gets to its global teardown.
 */
const killers = new Set<() => void>();
let installed = false;

/** Registers `kill` until the returned function is called. */
export function killOnExit(kill: () => void): () => void {
  install();
  killers.add(kill);
  return () => killers.delete(kill);
}

function runAll(): void {
  for (const kill of killers) kill();
  killers.clear();
}

function install(): void {
  if (installed) return;
  installed = true;
  process.once('exit', runAll);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      runAll();
      // Our listener is gone now, so this takes the default action (or Jest's).
      process.kill(process.pid, signal);
    });
  }
}

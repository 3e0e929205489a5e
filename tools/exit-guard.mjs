// @ts-check
/**
 * Last-resort cleanup for child processes: runs registered synchronous kill
 * functions when this process exits or is interrupted (SIGINT, SIGTERM,
 * SIGHUP), even if the harness (Jest's global teardown, a chaos or benchmark
 * run) never gets to stop them itself.
 */

/** @type {Set<() => void>} */
const killers = new Set();
let installed = false;

/**
 * Registers `kill` until the returned function is called.
 * @param {() => void} kill
 * @returns {() => void}
 */
export function killOnExit(kill) {
  install();
  killers.add(kill);
  return () => killers.delete(kill);
}

function runAll() {
  for (const kill of killers) kill();
  killers.clear();
}

function install() {
  if (installed) return;
  installed = true;
  process.once('exit', runAll);
  for (const signal of /** @type {const} */ (['SIGINT', 'SIGTERM', 'SIGHUP'])) {
    process.once(signal, () => {
      runAll();
      // Our listener is gone now, so this takes the default action (or Jest's).
      process.kill(process.pid, signal);
    });
  }
}

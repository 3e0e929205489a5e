// @ts-check
/**
 * What happened to each key during the liveness phase, for the report of a key taken late: the
 * key's item read directly (no faults) every 50 ms, one line per change (who holds it, the ticket
 * served and handed out, the roll call), and the prober's own lock events on it.
 */
import { setTimeout as sleep } from 'node:timers/promises';

/** @typedef {import('./scenario.mjs').ChaosRun} ChaosRun */

const now = () => performance.now();

/** Lines kept per key: a phase of a few seconds changes an item a few times. */
const MAX_LINES = 60;

/**
 * Starts recording every key of `run` from now on.
 * @param {ChaosRun} run
 * @returns {{ event(key: string, what: string): void, of(key: string): string[], stop(): Promise<void> }}
 */
export function startLivenessTrail(run) {
  const t0 = now();
  /** @type {Map<string, string[]>} */
  const lines = new Map(run.keys.map((key) => [key, []]));
  /** @type {Map<string, string>} */
  const last = new Map();
  /** Tickets are shown from the first ticket seen served on the key. @type {Map<string, number>} */
  const base = new Map();
  const add = (/** @type {string} */ key, /** @type {string} */ what) => {
    const list = lines.get(key);
    if (list && list.length < MAX_LINES) list.push(`${Math.round(now() - t0)} ms: ${what}`);
  };
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      await Promise.all(
        run.keys.map(async (key) => {
          let state;
          try {
            const item = await run.referee.readItem(key);
            if (!item) state = 'no item';
            else {
              const from = base.get(key) ?? item.head ?? 0;
              base.set(key, from);
              const ticket = (/** @type {number | undefined} */ n) => (n === undefined ? '-' : String(n - from));
              state = `holder ${item.owner ?? '-'}, head ${ticket(item.head)}, tail ${ticket(item.tail)}, roll call ${ticket(item.live)}, version ${item.rvn?.slice(0, 6) ?? '-'}`;
            }
          } catch (error) {
            state = `read failed: ${String(error)}`;
          }
          if (last.get(key) !== state) add(key, state);
          last.set(key, state);
        }),
      );
      await sleep(50);
    }
  })();
  return {
    event: add,
    // The list itself: lines added after a violation was counted show what came next.
    of: (key) => lines.get(key) ?? [],
    stop: async () => {
      stopped = true;
      await loop;
    },
  };
}

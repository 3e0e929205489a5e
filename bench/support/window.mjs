/**
 * The measuring window of a scenario whose workers loop on their own: tells them when to start
 * and stop, and reads the proxy's request counts and capacity as the window opens (after
 * `settleMs`) and as it closes.
 */
import { sleepUntil, wall } from './stats.mjs';

/**
 * Prepares `n` participants spread over `workers` (each gets its share as `count`, with `fields`)
 * and resolves with each worker's 'ready' report once all have sent it.
 */
export function prepareWorkers(workers, n, fields) {
  const P = workers.length;
  workers.forEach((w, p) => w.send('prepare', { ...fields, count: Math.floor(n / P) + (p < n % P ? 1 : 0) }));
  return Promise.all(workers.map((w) => w.next('ready', 300_000)));
}

/**
 * Runs the window over `workers` (already prepared); resolves with the proxy figures and every
 * worker's 'done' report. With `untilAsked`, the window opens only once every worker has sent
 * 'asked' (each of its participants asked once and was answered), and at least `settleMs` after
 * the start: workers get `go` without an end, then `window` with it. `askedAt` is when the last
 * worker had asked.
 */
export async function measureWindow(ctx, workers, { settleMs, windowMs, untilAsked = false, askTimeoutMs = 300_000 }) {
  const startAt = wall() + 200;
  let measureFrom = startAt + settleMs;
  let endAt = measureFrom + windowMs;
  let askedAt;
  if (untilAsked) {
    for (const w of workers) w.send('go', { startAt });
    await Promise.all(workers.map((w) => w.next('asked', askTimeoutMs)));
    askedAt = wall();
    measureFrom = Math.max(measureFrom, askedAt + 50);
    endAt = measureFrom + windowMs;
    for (const w of workers) w.send('window', { endAt });
  } else for (const w of workers) w.send('go', { startAt, endAt });
  await sleepUntil(measureFrom);
  const [countsBefore, capBefore] = await Promise.all([ctx.proxy.counts(), ctx.proxy.capacity()]);
  await sleepUntil(endAt);
  const [countsAfter, capAfter] = await Promise.all([ctx.proxy.counts(), ctx.proxy.capacity()]);
  const reports = await Promise.all(workers.map((w) => w.next('done', 120_000)));
  return { startAt, askedAt, measureFrom, endAt, countsBefore, countsAfter, capBefore, capAfter, reports };
}

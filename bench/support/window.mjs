/**
 * The measuring window of a scenario whose workers loop on their own: tells them when to start
 * and stop, and reads the proxy's request counts and capacity as the window opens (after
 * `settleMs`) and as it closes.
 */
import { sleepUntil, wall } from './stats.mjs';

/** Runs the window over `workers` (already prepared); resolves with the proxy figures and every worker's 'done' report. */
export async function measureWindow(ctx, workers, { settleMs, windowMs }) {
  const startAt = wall() + 200;
  const measureFrom = startAt + settleMs;
  const endAt = measureFrom + windowMs;
  for (const w of workers) w.send('go', { startAt, endAt });
  await sleepUntil(measureFrom);
  const [countsBefore, capBefore] = await Promise.all([ctx.proxy.counts(), ctx.proxy.capacity()]);
  await sleepUntil(endAt);
  const [countsAfter, capAfter] = await Promise.all([ctx.proxy.counts(), ctx.proxy.capacity()]);
  const reports = await Promise.all(workers.map((w) => w.next('done', 120_000)));
  return { measureFrom, endAt, countsBefore, countsAfter, capBefore, capAfter, reports };
}

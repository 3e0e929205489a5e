// @ts-check
/** The checks of a chaos run once every worker closed (the referee's live checks are in `checks.mjs`). */
import { parseItem, scanItems } from './support/direct-table.mjs';
import { finalSelfDeadlockChecks } from './self-deadlock-checks.mjs';
import { checkDataItems } from './support/data-resource.mjs';

/** @typedef {import('./scenario.mjs').ChaosRun} ChaosRun */

/**
 * After everyone closed: nothing left held, the resource's log in order, overlaps judged, own locks
 * recognised, the fenced data items' logs in token order, skewed workers not starved.
 * @param {ChaosRun} run
 */
export async function finalChecks(run) {
  const { tally, direct, table, referee } = run;
  // Nothing may stay held: every key was taken by the prober and released, and every worker closed.
  const items = await scanItems(direct, table);
  for (const raw of items) {
    const item = parseItem(raw);
    if (!item?.token) continue;
    const attempt = referee.attempts.get(/** @type {string} */ (item.attemptId));
    if (attempt && attempt.outcome !== 'acquired' && attempt.outcome !== undefined) {
      // A waiter that had given up, promoted by a release after that (its queue exit had failed):
      // nobody holds it; it runs out after one lease. Counted with the orphans, not as a leak.
      referee.noteOrphan(/** @type {string} */ (item.attemptId), 'left held at the end');
    } else
      tally.violation('locksLeftHeld', { key: item.key, owner: item.owner, attemptId: item.attemptId, attemptOutcome: attempt?.outcome });
  }
  const viaApi = await run.inspector.list();
  const orphanKeys = new Set(
    items
      .map(parseItem)
      .filter((item) => item?.token && referee.orphans.has(/** @type {string} */ (item.attemptId)))
      .map((item) => item?.key),
  );
  const leftViaApi = viaApi.filter((info) => !orphanKeys.has(info.key));
  if (leftViaApi.length > 0 && tally.violations.locksLeftHeld === 0)
    tally.violation('locksLeftHeld', { via: 'list()', keys: leftViaApi.map((i) => i.key) });

  referee.overlaps.finish(referee.leases);
  for (const overlap of referee.overlaps.violations()) tally.violation('overlapsBetweenValidHolders', overlap);
  const { outOfOrder, sharedTokens } = referee.resource.verify();
  for (let i = 0; i < outOfOrder; i++) tally.violation('outOfOrderWrites', {});
  if (sharedTokens > 0 && tally.violations.duplicateTokens === 0) tally.violation('duplicateTokens', { sharedTokens });

  await finalSelfDeadlockChecks(run);

  // The data items written through the fence: no stale write landed; each outcome as the item shows it.
  const stats = run.proxyStats ?? (await run.supervisor.proxyCall({ cmd: 'stats' })).stats;
  run.dataItems = await checkDataItems(run, stats?.trace ?? []);

  // Clock skew changes nothing: skewed workers are not starved.
  const slots = Object.values(tally.counts.bySlot);
  const plain = slots
    .filter((s) => s.skewMs === 0)
    .map((s) => s.acquisitions)
    .sort((a, b) => a - b);
  const median = plain.length === 0 ? 0 : (plain[Math.floor((plain.length - 1) / 2)] + plain[Math.floor(plain.length / 2)]) / 2;
  for (const [slot, s] of Object.entries(tally.counts.bySlot)) {
    if (s.skewMs !== 0 && s.acquisitions < 0.25 * median)
      tally.violation('skewStarved', { slot, skewMs: s.skewMs, acquisitions: s.acquisitions, medianUnskewed: median });
  }
}

// @ts-check
/**
 * Does a process recognise its own lock? The checks of a chaos run about self-deadlocks: an
 * acquisition that gave up on a lock its own process held (`ownLockWaits`, `ownExpiredLockWaits`),
 * a lease kept alive by nobody (`selfDeadlocks`), and an acquisition that was shown its own token
 * yet kept waiting or gave up (judged at the end with the fault proxy's evidence). The monitor
 * reads every key every 100 ms for them.
 */
import { setTimeout as sleep } from 'node:timers/promises';

/** @typedef {import('./scenario.mjs').ChaosRun} ChaosRun */
/** @typedef {import('./supervisor.mjs').WorkerHandle} WorkerHandle */
/** @typedef {import('./checks.mjs').Attempt} Attempt */

/** After an answer showed a worker its own lock, its acquisition must resolve within this (IPC and event-loop slack). */
const RECOGNITION_MS = 1_000;

const now = () => performance.now();

/**
 * An acquisition gave up naming its own process as the holder. If the item still shows a token
 * of this process that no task of it holds — a waiter that gave up but was promoted later (its
 * leave failed), or a lease whose release failed or that was lost locally — the process waited
 * on its own lock: a self-deadlock. Otherwise (a sibling task holds it, or the library had just
 * passed such a lock on) it is only noted.
 * @param {ChaosRun} run
 * @param {WorkerHandle} w
 * @param {import('./protocol.mjs').AttemptEndMessage} m
 * @param {Attempt} attempt
 */
export async function checkBusyOnItself(run, w, m, attempt) {
  const { referee: r, tally, o } = run;
  const item = await r.readItem(m.key).catch(() => undefined);
  const stale = item?.token && item.owner === w.owner ? r.attempts.get(/** @type {string} */ (item.attemptId)) : undefined;
  const lease = stale?.leaseId ? r.leases.get(stale.leaseId) : undefined;
  const heldNow =
    stale?.outcome === 'acquired' && !r.released.has(stale.leaseId) && lease?.state !== 'abandoned' && lease?.state !== 'dead';
  if (!item?.token || item.owner !== w.owner || heldNow) {
    tally.note('busyNamingItself', { attemptId: m.attemptId, itemShows: item?.attemptId ?? null });
    return;
  }
  // A lease this process lost locally (its signal aborted: a pause, failed heartbeats) vs. one
  // whose release failed, or a waiter that gave up and was promoted later.
  const expired =
    stale?.outcome === 'acquired' && (lease?.state === 'abandoned' || r.lostBeforeEnter.has(/** @type {string} */ (stale.leaseId)));
  const kind =
    stale?.outcome !== 'acquired'
      ? 'own orphaned waiter (gave up, promoted later)'
      : expired
        ? 'own lease that ran out locally'
        : 'own lease whose release failed';
  // Since when this process could have known the lock was its own, nobody's: the stale lease's
  // release (or loss), or the orphan's promotion as first seen. A wait only just begun is a race.
  const ends = stale?.leaseId
    ? [r.releasedAt.get(stale.leaseId), r.leases.get(stale.leaseId)?.stateAt, r.lostBeforeEnter.get(stale.leaseId)].filter(
        (t) => t !== undefined,
      )
    : [];
  const lostAt = ends.length > 0 ? Math.min(...ends) : undefined;
  const since = Math.max(
    attempt.startAt,
    lostAt ?? r.orphanSeenAt.get(/** @type {string} */ (item.attemptId)) ?? stale?.endAt ?? attempt.startAt,
  );
  const selfWaitMs = /** @type {number} */ (attempt.endAt) - since;
  if (selfWaitMs < Math.min(1_000, o.leaseMs / 2)) {
    tally.note('busyOnOwnStaleLockBriefly', { attemptId: m.attemptId, itemShows: item.attemptId, selfWaitMs: Math.round(selfWaitMs) });
    return;
  }
  tally.violation(expired ? 'ownExpiredLockWaits' : 'ownLockWaits', {
    selfWaitMs: Math.round(selfWaitMs),
    kind: `gave up waiting on its ${kind}`,
    owner: w.owner,
    attemptId: m.attemptId,
    key: m.key,
    waitedMs: m.waitedMs,
    itemShows: item.attemptId,
    itemAttemptOutcome: stale?.outcome ?? null,
    window: [attempt.startAt, attempt.endAt],
    events: m.events,
    warnings: m.warnings,
  });
}

/**
 * An acquisition gave up. If the item carries its own token now (its write was applied but it
 * never learnt so), the library must give it back, or at least never renew it.
 * @param {ChaosRun} run
 * @param {Attempt} attempt
 */
export async function checkGiveUp(run, attempt) {
  const { referee: r, tally, o } = run;
  const item = await r.readItem(attempt.key).catch(() => undefined);
  if (!item?.token || item.attemptId !== attempt.attemptId) return;
  tally.counts.gaveUpHolding++;
  await sleep(2 * o.heartbeatMs + 300);
  const later = await r.readItem(attempt.key).catch(() => undefined);
  if (later?.token !== item.token) {
    tally.counts.gaveUpCleaned++;
    return;
  }
  if (later.rvn !== item.rvn) {
    tally.violation('selfDeadlocks', {
      kind: 'gave up, yet its lease is renewed',
      attemptId: attempt.attemptId,
      key: attempt.key,
      outcome: attempt.outcome,
    });
  } else {
    tally.counts.gaveUpOrphaned++;
    const seen = r.attemptTokens.get(attempt.attemptId);
    const endAt = /** @type {number} */ (attempt.endAt);
    tally.note('gaveUpLeftHolding', {
      attemptId: attempt.attemptId,
      outcome: attempt.outcome,
      errorName: attempt.errorName,
      waitedMs: Math.round(endAt - attempt.startAt),
      ownTokenFirstSeenBeforeEndMs: seen ? Math.round(endAt - seen.firstAt) : null,
    });
  }
}

/**
 * Reads every key every 100 ms (directly, no faults): which owner tokens each attempt's item
 * showed, and since when; waiters that had given up seen holding the lock (orphans).
 * @param {ChaosRun} run
 * @returns {{ stop(): Promise<void> }}
 */
export function startMonitor(run) {
  const { referee: r, tally, keys } = run;
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      await Promise.all(
        keys.map(async (key) => {
          const item = await r.readItem(key).catch(() => undefined);
          tally.counts.monitorReads++;
          if (item?.token && item.attemptId) {
            const ended = r.attempts.get(item.attemptId);
            // (Within a second of giving up, the library may be passing on a lock it found handed to it.)
            if (ended?.endAt !== undefined && ended.outcome !== 'acquired' && now() > ended.endAt + 1_000)
              r.noteOrphan(item.attemptId, 'seen by the monitor');
            const at = now();
            const seen = r.attemptTokens.get(item.attemptId) ?? { tokens: new Set(), firstAt: at, lastAt: at };
            seen.tokens.add(item.token);
            seen.lastAt = at;
            r.attemptTokens.set(item.attemptId, seen);
          }
        }),
      );
      await sleep(100);
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await loop;
    },
  };
}

/**
 * Wind-down: items naming a live (idle) worker that holds nothing: leftovers are fine, renewals are not.
 * @param {ChaosRun} run
 */
export async function inspectLeftovers(run) {
  const { referee: r, tally, supervisor, keys, o } = run;
  const live = new Set(supervisor.liveWorkers().map((w) => w.owner));
  const before = await Promise.all(keys.map((key) => r.readItem(key).catch(() => undefined)));
  const suspects = before.filter((item) => item?.token && live.has(/** @type {string} */ (item.owner)));
  if (suspects.length === 0) return;
  await sleep(2 * o.heartbeatMs + 300);
  for (const item of suspects) {
    const later = await r.readItem(/** @type {string} */ (item?.key)).catch(() => undefined);
    if (later?.token === item?.token && later?.rvn !== item?.rvn) {
      tally.violation('selfDeadlocks', {
        kind: 'lease of an idle worker renewed',
        key: item?.key,
        owner: item?.owner,
        attemptId: item?.attemptId,
      });
    } else tally.counts.staleOwnLeftovers++;
  }
}

/**
 * At the end: one owner token per attempt, and it is the lock's; every attempt shown its own lock
 * resolved with it at once; the requests behind each self-deadlock example, for the report.
 * @param {ChaosRun} run
 */
export async function finalSelfDeadlockChecks(run) {
  const { referee: r, tally, supervisor, t0 } = run;
  // Own writes recognised: one owner token per acquisition attempt, and it is the lock's leaseId.
  for (const [attemptId, { tokens }] of r.attemptTokens) {
    const attempt = r.attempts.get(attemptId);
    if (tokens.size > 1) tally.violation('selfDeadlocks', { kind: 'one attempt, several owner tokens', attemptId, tokens: tokens.size });
    else if (attempt?.outcome === 'acquired' && attempt.leaseId && !tokens.has(attempt.leaseId)) {
      tally.violation('selfDeadlocks', { kind: 'acquired with another token than its applied write', attemptId });
    }
  }

  // Own lock recognised. Evidence: an answer delivered to the worker that showed the lock held by
  // this very attempt (its own token). After that, the attempt must resolve with the lock at once,
  // not wait on (or give up on) a lock it already has — unless its process was stopped meanwhile.
  const proxyStats = /** @type {import('./protocol.mjs').ProxyStats} */ ((await supervisor.proxyCall({ cmd: 'stats' })).stats);
  run.proxyStats = proxyStats;
  const rel = (/** @type {number} */ t) => Math.round(t - t0);
  for (const [attemptId, evidence] of Object.entries(proxyStats.evidence)) {
    const attempt = r.attempts.get(attemptId);
    if (!attempt?.endAt || attempt.outcome === 'died') continue;
    const endAt = attempt.endAt;
    const shownAt = evidence.at - performance.timeOrigin;
    if (shownAt >= endAt - 100) continue; // after (or racing with) the end of the attempt
    if (supervisor.pausedDuring(attempt.owner, shownAt - 100, endAt)) {
      tally.note('ownLockShownWhileStopped', { attemptId, outcome: attempt.outcome });
      continue;
    }
    // Obstructed: a fault on this worker's own requests about the key after it was told, or a
    // response to it held back — it may simply not have been able to act in time.
    const obstructed = proxyStats.trace.some(
      (t) =>
        t.owner === attempt.owner && t.key === attempt.key && t.fault && t.at >= evidence.at - 50 && t.at <= endAt + performance.timeOrigin,
    );
    const lagMs = endAt - shownAt;
    if (obstructed && (attempt.outcome !== 'acquired' || lagMs > RECOGNITION_MS)) {
      tally.note('ownLockShownThenObstructed', { attemptId, outcome: attempt.outcome, sinceShownMs: Math.round(lagMs) });
      continue;
    }
    const detail = {
      attemptId,
      key: attempt.key,
      outcome: attempt.outcome,
      errorName: attempt.errorName,
      sinceShownMs: Math.round(lagMs),
      timeline: { start: rel(attempt.startAt), shown: rel(shownAt), end: rel(endAt) },
    };
    const window = [attempt.startAt, endAt];
    if (attempt.outcome !== 'acquired')
      tally.violation('selfDeadlocks', {
        kind: 'told it holds the lock, yet gave up',
        ...detail,
        owner: attempt.owner,
        window,
        events: attempt.events,
        workerStartMs: attempt.workerStartMs,
      });
    else {
      if (lagMs > tally.counts.maxRecognitionMs) {
        tally.counts.maxRecognitionMs = lagMs;
        run.maxRecognition = detail;
      }
      if (lagMs > RECOGNITION_MS)
        tally.violation('selfDeadlocks', { kind: 'told it holds the lock, yet kept waiting', ...detail, owner: attempt.owner, window });
    }
  }

  // What the worker sent and got for that key meanwhile, for the report.
  for (const example of ['selfDeadlocks', 'ownLockWaits', 'ownExpiredLockWaits'].flatMap((name) => tally.examples[name] ?? [])) {
    if (!example.window || !example.owner) continue;
    const [from, to] = example.window.map((/** @type {number} */ t) => t + performance.timeOrigin);
    example.requests = proxyStats.trace
      .filter((t) => t.owner === example.owner && t.key === example.key && t.at >= from - 200 && t.at <= to + 500)
      .map(
        (t) =>
          `${Math.round(t.at - performance.timeOrigin - t0)} ${t.attempt ?? '?'} ${t.op} ${t.cond ?? ''} ${t.fault ?? ''} → ${t.status ?? '✗'}${t.holder ? ` holder=${t.holder}` : ''}`,
      );
    example.window = example.window.map((/** @type {number} */ t) => Math.round(t - t0));
  }

  // Information: how long the item showed an attempt's own token (sampled every 100 ms) before
  // the attempt ended without it. Waiters given the lock by another's release only learn so by
  // reading, so a slow read or a stopped process costs the key up to a lease.
  for (const { attempt, firstAt } of r.ownTokenCases) {
    if (attempt.outcome === 'acquired' || attempt.outcome === 'died') continue;
    tally.note('endedWhileItemShowedOwnToken', {
      attemptId: attempt.attemptId,
      outcome: attempt.outcome,
      shownMs: Math.round(/** @type {number} */ (attempt.endAt) - firstAt),
    });
  }
}

// @ts-check
/**
 * What a chaos run counts — violations (with up to five examples each), notes (observations that
 * are not violations) and plain counts — and the report it returns (`run.mjs` prints it with
 * `support/table.mjs`; `test/chaos/chaos.e2e-spec.ts` reads its JSON).
 */
import { FAULT_KINDS } from './support/fault-proxy.mjs';
import { KNOWN_DEFECTS, VIOLATIONS } from './checks.mjs';

/** @typedef {import('./scenario.mjs').ChaosRun} ChaosRun */
/** @typedef {keyof typeof VIOLATIONS} ViolationName */

const now = () => performance.now();

/** Violations, notes and counts of one run. */
export class Tally {
  /** @param {number} t0 the run's start (`performance.now()`): examples say when, from it */
  constructor(t0) {
    this.t0 = t0;
    /** @type {Record<string, number>} */
    this.violations = Object.fromEntries(Object.keys(VIOLATIONS).map((name) => [name, 0]));
    /** @type {Record<string, Record<string, any>[]>} */
    this.examples = {};
    /** @type {Record<string, { count: number, examples: Record<string, unknown>[] }>} */
    this.notes = {};
    this.counts = {
      acquireAttempts: 0,
      acquisitions: 0,
      /** @type {Record<string, number>} */
      outcomes: {},
      kills: 0,
      respawns: 0,
      pauses: 0,
      pausesOfHolders: 0,
      pauseChecks: 0,
      pauseChecksAborted: 0,
      fencingRejections: 0,
      fencingRejectionsUnchecked: 0,
      fencingRejectionsAfterPause: 0,
      groundTruthChecks: 0,
      groundTruthInconclusive: 0,
      groundTruthExcused: 0,
      lostBeforeEnter: 0,
      /** @type {Record<string, number>} */
      locksLost: {},
      releases: 0,
      releasesNotHeld: 0,
      releaseErrors: 0,
      gaveUpHolding: 0,
      gaveUpCleaned: 0,
      gaveUpOrphaned: 0,
      staleOwnLeftovers: 0,
      maxRecognitionMs: 0,
      monitorReads: 0,
      longestVacantWaitMs: 0,
      /** @type {Record<string, { skewMs: number, acquisitions: number, incarnations: number }>} */
      bySlot: {},
    };
  }

  /**
   * Something worth knowing that is not a violation, with up to five examples.
   * @param {string} name
   * @param {Record<string, unknown>} detail
   */
  note(name, detail) {
    const note = (this.notes[name] ??= { count: 0, examples: [] });
    note.count++;
    if (note.examples.length < 5) note.examples.push({ at: Math.round(now() - this.t0), ...detail });
  }

  /**
   * Counts a violation; keeps up to five examples (the object itself, so it can be completed later).
   * @param {ViolationName} name
   * @param {Record<string, any>} detail
   */
  violation(name, detail) {
    this.violations[name]++;
    const list = (this.examples[name] ??= []);
    const example = Object.assign(detail, { at: detail.at ?? Math.round(now() - this.t0) });
    if (list.length < 5) list.push(example);
    return example;
  }
}

/**
 * The report of a finished run.
 * @param {ChaosRun} run
 */
export async function buildReport(run) {
  const { o, tally, referee, supervisor } = run;
  const proxyStats = run.proxyStats ?? (await supervisor.proxyCall({ cmd: 'stats' })).stats;
  if (!proxyStats) throw new Error('the fault proxy sent no stats');
  const lost = { total: 0, attempts: 0, recognised: 0, gaveUp: 0, died: 0 };
  const seen = new Set();
  for (const write of proxyStats.lostWrites) {
    lost.total++;
    for (const attemptId of write.markers) {
      if (seen.has(attemptId)) continue;
      seen.add(attemptId);
      lost.attempts++;
      const outcome = referee.attempts.get(attemptId)?.outcome;
      if (outcome === 'acquired') lost.recognised++;
      else if (outcome === 'died' || outcome === undefined) lost.died++;
      else lost.gaveUp++;
    }
  }
  const overlapCounts = referee.overlaps.counts();
  /** @type {Record<string, { slots: number, acquisitions: number }>} */
  const skew = {};
  for (const s of Object.values(tally.counts.bySlot)) {
    const label = s.skewMs === 0 ? 'none' : `${s.skewMs > 0 ? '+' : '-'}${Math.abs(s.skewMs) / 60_000} min`;
    const group = (skew[label] ??= { slots: 0, acquisitions: 0 });
    group.slots++;
    group.acquisitions += s.acquisitions;
  }
  const counted = Object.entries(tally.violations).filter(([name]) => o.strict || !(name in KNOWN_DEFECTS));
  const violationsTotal = counted.reduce((sum, [, n]) => sum + n, 0);
  const knownDefects = Object.fromEntries(Object.keys(KNOWN_DEFECTS).map((name) => [name, tally.violations[name]]));
  return {
    server: o.serverName,
    endpoint: o.endpoint,
    seed: o.seed,
    ok: violationsTotal === 0,
    options: {
      durationMs: o.durationMs,
      workers: o.workers,
      tasks: o.tasks,
      keys: o.keys,
      leaseMs: o.leaseMs,
      rates: o.rates,
      skews: o.skews,
    },
    timings: Object.fromEntries(Object.entries(run.timings).map(([k, v]) => [k, Math.round(v)])),
    counts: {
      ...tally.counts,
      orphanPromotions: {
        gaveUp: [...referee.orphans].filter((id) => referee.attempts.get(id)?.outcome !== 'died').length,
        died: [...referee.orphans].filter((id) => referee.attempts.get(id)?.outcome === 'died').length,
      },
      traceLength: proxyStats.trace?.length,
      protectedWrites: referee.resource.stats,
      dataWrites: { ...run.data.counts(), items: run.dataItems },
      dynamoRequests: proxyStats.requests,
      requestsByOperation: proxyStats.byOperation,
      faults: Object.fromEntries(FAULT_KINDS.map((kind) => [kind, proxyStats.injected[kind]])),
      faultsTotal: FAULT_KINDS.reduce((sum, kind) => sum + proxyStats.injected[kind], 0),
      overlaps: overlapCounts,
      lostWriteResponses: lost,
      liveness: run.liveness,
      livenessCrashes: run.livenessCrashes,
      skew,
    },
    violations: tally.violations,
    violationsTotal,
    knownDefects,
    strict: Boolean(o.strict),
    examples: tally.examples,
    notes: tally.notes,
    maxRecognition: run.maxRecognition,
    workers: [...supervisor.workers.values()]
      .filter((w) => !w.pseudo)
      .map((w) => ({
        owner: w.owner,
        skewMs: w.skewMs,
        exit: w.exit,
        killed: w.killedByHarness,
        stops: w.stops.map((stop) => ({
          at: Math.round(stop.stopAt - run.t0),
          ms: Math.round((stop.contAt ?? stop.stopAt) - stop.stopAt),
          holding: stop.holding,
        })),
      })),
  };
}

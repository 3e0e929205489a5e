// @ts-check
/**
 * The referee of a chaos run: it keeps the story of every acquisition attempt and lease from what
 * the workers say (`protocol.mjs`), answers their protected steps through the fencing resource, and
 * judges them as they happen — fencing, overlaps, the server's ground truth, writes after a pause
 * or an abort. What is judged once everyone closed is in `final-checks.mjs`; whether a process
 * recognises its own lock, in `self-deadlock-checks.mjs`.
 */
import { FencedResource, OverlapRecorder } from './support/resource.mjs';
import { readItem } from './support/direct-table.mjs';
import { checkBusyOnItself, checkGiveUp } from './self-deadlock-checks.mjs';

/** @typedef {import('./scenario.mjs').ChaosRun} ChaosRun */
/** @typedef {import('./supervisor.mjs').WorkerHandle} WorkerHandle */
/** @typedef {import('./protocol.mjs').WorkerMessage} WorkerMessage */
/** @typedef {import('./protocol.mjs').AttemptEndMessage} AttemptEndMessage */
/** @typedef {import('./protocol.mjs').AttemptOutcome} AttemptOutcome */

/**
 * An acquisition attempt (`performance.now()` times; `died`: its process died before it ended).
 * @typedef {object} Attempt
 * @property {string} attemptId
 * @property {string} owner
 * @property {string} key
 * @property {number} startAt
 * @property {number} [endAt]
 * @property {AttemptOutcome | 'died'} [outcome]
 * @property {string} [leaseId]
 * @property {number} [token]
 * @property {string} [errorName]
 * @property {import('./protocol.mjs').LibraryEvent[]} [events]
 * @property {number} [workerStartMs]
 */

/**
 * A lease from its `enter` on: `in` its section, then `exited`, `abandoned` (its signal aborted) or `dead`.
 * @typedef {object} Lease
 * @property {string} leaseId
 * @property {string} key
 * @property {number} token
 * @property {string} owner
 * @property {string} attemptId
 * @property {number} acquiredAt
 * @property {number} enterAt
 * @property {number} enterGapMs
 * @property {'in' | 'exited' | 'abandoned' | 'dead'} state
 * @property {number} [stateAt]
 * @property {boolean} [exitAborted]
 * @property {boolean} [staleWriteSeen]
 */

/** Every violation the run can report; each must be zero. */
export const VIOLATIONS = {
  outOfOrderWrites: 'writes accepted out of token order',
  duplicateTokens: 'one fencing token used by two holders',
  overlapsBetweenValidHolders: 'overlaps between holders whose lock was valid',
  falseSuccesses: 'false successes (held lock not the holder at the server/resource)',
  writesAfterPause: 'checked writes after a pause longer than the lease',
  writesAfterAbort: 'checked writes after the signal aborted',
  signalNotAbortedAfterPause: 'signal still valid after a pause longer than the lease',
  selfDeadlocks: 'self-deadlocks (own lock not recognised, or kept alive unheld)',
  ownLockWaits:
    "self-deadlocks on the process's own orphaned lock: an abandoned waiter promoted, or a failed release (gave up waiting on it)",
  ownExpiredLockWaits: "self-deadlocks on the process's own lease that ran out locally (gave up waiting on it)",
  livenessExceeded: 'keys not acquirable within one lease (+ poll) after faults stopped',
  earlyTakeovers: 'locks of killed/stopped holders taken over by the prober sooner than one lease after it started',
  staleWritesAccepted: 'stale writes of a resumed holder accepted after a newer holder wrote',
  staleDataWrites: 'stale writes that landed on a data item through the fence (a token below one already written there)',
  dataWriteMismatches: 'fenced data writes whose outcome the item contradicts (acknowledged but absent, or refused but present)',
  locksLeftHeld: 'locks left held after everyone closed',
  leakedLeases: 'leases a manager kept after all its tasks ended',
  unexpectedErrors: 'unexpected errors (neither lock errors nor transient AWS errors)',
  workerCrashes: 'worker crashes',
  skewNotApplied: 'clock skew not in force in a skewed worker',
  skewStarved: 'skewed workers starved (acquired far less than others)',
  harnessErrors: 'harness errors',
};

/**
 * Violations the engine is known to have, each reproduced deterministically by a spec in
 * `test/chaos/`: counted and printed, but they fail a run only with `strict`. Remove an entry once
 * its reproduction spec fails (the defect is fixed).
 * @type {Partial<Record<keyof typeof VIOLATIONS, string>>}
 */
export const KNOWN_DEFECTS = {};

/** A check-to-send gap above this (ms, on the worker's monotonic clock) means a pause fell in between. */
const GAP_MS = 100;

const now = () => performance.now();

export class Referee {
  /** @param {ChaosRun} run */
  constructor(run) {
    this.run = run;
    /** @type {Map<string, Lease>} by leaseId */
    this.leases = new Map();
    /** @type {Map<string, Attempt>} by attemptId */
    this.attempts = new Map();
    /** @type {Map<string, Set<string>>} Leases in each key's critical section. */
    this.occupancy = new Map(run.keys.map((key) => [key, new Set()]));
    this.resource = new FencedResource();
    this.overlaps = new OverlapRecorder({
      gapMs: GAP_MS,
      pausedDuring: (owner, from, to) => run.supervisor.pausedDuring(owner, from, to) !== undefined,
      isDead: (owner) => run.supervisor.workers.get(owner)?.alive === false,
    });
    /** @type {Map<string, { tokens: Set<string>, firstAt: number, lastAt: number }>} owner tokens the monitor saw per attempt */
    this.attemptTokens = new Map();
    /** @type {{ attempt: Attempt, firstAt: number, lastAt: number }[]} attempts that ended after the item showed their token */
    this.ownTokenCases = [];
    /** Leases whose release() returned (true or false), by leaseId. */
    this.released = new Set();
    /** @type {Map<string, number>} */
    this.releasedAt = new Map();
    /** @type {Map<string, number>} Leases whose signal had aborted before their section began, with when the harness heard. */
    this.lostBeforeEnter = new Map();
    /** @type {Map<string, number>} */
    this.orphanSeenAt = new Map();
    /** @type {Set<string>} Attempts seen holding the lock after they had given up (orphans). */
    this.orphans = new Set();
    this.keyState = new Map(run.keys.map((key) => [key, { vacatedAt: 0 }]));
  }

  /** @param {string} key */
  readItem(key) {
    return readItem(this.run.direct, this.run.table, key);
  }

  /**
   * The leases `w` is inside the section of.
   * @param {WorkerHandle} w
   */
  holdingLeases(w) {
    return [...this.leases.values()].filter((lease) => lease.owner === w.owner && lease.state === 'in');
  }

  /**
   * A waiter that had given up (or whose process died) seen holding the lock: promoted after it left.
   * @param {string} attemptId
   * @param {string} how
   */
  noteOrphan(attemptId, how) {
    if (this.orphans.has(attemptId)) return;
    this.orphans.add(attemptId);
    this.orphanSeenAt.set(attemptId, now());
    const attempt = this.attempts.get(attemptId);
    this.run.tally.note('orphanPromotions', {
      attemptId,
      how,
      outcome: attempt?.outcome,
      endedMsAgo: attempt?.endAt === undefined ? null : Math.round(now() - attempt.endAt),
    });
  }

  /**
   * A worker's message.
   * @param {WorkerHandle} w
   * @param {WorkerMessage} m
   */
  onMessage(w, m) {
    const { tally, supervisor, t0 } = this.run;
    switch (m?.type) {
      case 'ready': {
        w.isReady = true;
        const diff = m.dateNow - Date.now() - (w.skewMs ?? 0);
        if (Math.abs(diff) > 5_000 || (m.skewMs ?? 0) !== w.skewMs) {
          tally.violation('skewNotApplied', { owner: w.owner, expected: w.skewMs, reported: m.skewMs, diff });
        }
        w.readyResolve?.();
        return;
      }
      case 'attempt':
        tally.counts.acquireAttempts++;
        this.attempts.set(m.attemptId, { attemptId: m.attemptId, owner: w.owner, key: m.key, startAt: now() });
        return;
      case 'attempt-end':
        return this.onAttemptEnd(w, m);
      case 'enter':
        return void this.onWrite(w, m, 'enter');
      case 'write':
        return void this.onWrite(w, m, m.unchecked ? 'unchecked' : 'write');
      case 'exit':
        this.onLeave(w, m, 'exit');
        return supervisor.reply(w, m.id, { ok: true });
      case 'abandon':
        tally.counts.locksLost[m.reason ?? 'unknown'] = (tally.counts.locksLost[m.reason ?? 'unknown'] ?? 0) + 1;
        if (m.beforeEnter) {
          tally.counts.lostBeforeEnter++;
          this.lostBeforeEnter.set(m.leaseId, now());
        } else this.onLeave(w, m, 'abandon');
        return;
      case 'pause-check':
        tally.counts.pauseChecks++;
        if (m.aborted) tally.counts.pauseChecksAborted++;
        else {
          tally.violation('signalNotAbortedAfterPause', {
            owner: w.owner,
            key: m.key,
            leaseId: m.leaseId,
            frozenMs: m.frozenMs,
            where: m.where,
            heldForMs: m.heldForMs,
            freezes: m.freezes,
            events: m.events,
            stops: w.stops.map((stop) => ({
              at: Math.round(stop.stopAt - t0),
              ms: Math.round((stop.contAt ?? now()) - stop.stopAt),
            })),
          });
        }
        return;
      case 'data-write':
        return this.run.data.onStart(w, m);
      case 'data-write-end':
        return this.run.data.onEnd(w, m);
      case 'stall-point':
        return this.run.data.onStallPoint(w, m);
      case 'released':
        this.released.add(m.leaseId);
        this.releasedAt.set(m.leaseId, now());
        tally.counts.releases++;
        if (!m.released) tally.counts.releasesNotHeld++;
        return;
      case 'release-error':
        this.released.add(m.leaseId);
        this.releasedAt.set(m.leaseId, now());
        tally.counts.releaseErrors++;
        if (m.outcome === 'unexpected') tally.violation('unexpectedErrors', { owner: w.owner, where: 'release', errorName: m.errorName });
        return;
      case 'holding':
        w.holding = m;
        w.holdingResolve?.(m);
        return;
      case 'idle':
        w.idle = m;
        w.idleResolve?.(m);
        return;
      case 'closed':
        w.closed = true;
        return;
      case 'crash':
        w.crash = m.stack;
        return;
      case 'note':
        return;
      default:
        tally.violation('harnessErrors', { what: 'unknown message', message: JSON.stringify(m).slice(0, 300) });
    }
  }

  /**
   * A worker process died: its leases with it, and its open attempts.
   * @param {WorkerHandle} w
   */
  onWorkerExit(w) {
    this.run.data.onWorkerExit(w);
    for (const lease of this.leases.values()) {
      if (lease.owner !== w.owner || lease.state !== 'in') continue;
      lease.state = 'dead';
      this.vacate(lease);
      this.overlaps.onOccupantStep(lease.leaseId, 'dead');
    }
    for (const attempt of this.attempts.values()) {
      if (attempt.owner !== w.owner || attempt.outcome) continue;
      attempt.outcome = 'died';
      attempt.endAt = w.exitedAt;
    }
  }

  /**
   * @param {WorkerHandle} w
   * @param {AttemptEndMessage} m
   */
  onAttemptEnd(w, m) {
    const { tally } = this.run;
    const attempt = this.attempts.get(m.attemptId) ?? { attemptId: m.attemptId, owner: w.owner, key: m.key, startAt: now() };
    this.attempts.set(m.attemptId, attempt);
    Object.assign(attempt, {
      outcome: m.outcome,
      endAt: now(),
      leaseId: m.leaseId,
      token: m.token,
      errorName: m.errorName,
      events: m.events,
      workerStartMs: m.startedAtMs,
    });
    tally.counts.outcomes[m.outcome] = (tally.counts.outcomes[m.outcome] ?? 0) + 1;
    // How long the item showed this attempt's own token before the attempt ended; judged at the
    // end, when the proxy can say whether a response to this worker was held back meanwhile.
    const seen = this.attemptTokens.get(m.attemptId);
    if (seen && seen.firstAt < /** @type {number} */ (attempt.endAt))
      this.ownTokenCases.push({ attempt, firstAt: seen.firstAt, lastAt: seen.lastAt });
    if (m.outcome === 'acquired') {
      tally.counts.acquisitions++;
      tally.counts.bySlot[w.slot].acquisitions++;
      return;
    }
    if (m.outcome === 'busy' && m.holderOwner === w.owner) void checkBusyOnItself(this.run, w, m, attempt);
    if (m.outcome === 'unexpected' || m.outcome === 'lock-error') {
      tally.violation('unexpectedErrors', { owner: w.owner, attemptId: m.attemptId, errorName: m.errorName, message: m.message });
    }
    if (m.outcome === 'busy' || m.outcome === 'transient') void checkGiveUp(this.run, attempt);
  }

  /**
   * enter / checked write / unchecked write: fencing, occupancy, and the after-pause rules.
   * @param {WorkerHandle} w
   * @param {{ id?: number, key: string, leaseId: string, token: number, attemptId?: string, gapMs?: number,
   *   marker?: import('./protocol.mjs').MarkerClaim }} m
   * @param {'enter' | 'write' | 'unchecked'} kind
   */
  async onWrite(w, m, kind) {
    const { o, tally, supervisor } = this.run;
    const at = now();
    let lease = this.leases.get(m.leaseId);
    if (kind === 'enter') {
      const attempt = this.attempts.get(/** @type {string} */ (m.attemptId));
      lease = {
        leaseId: m.leaseId,
        key: m.key,
        token: m.token,
        owner: w.owner,
        attemptId: /** @type {string} */ (m.attemptId),
        acquiredAt: attempt?.endAt ?? at,
        enterAt: at,
        enterGapMs: m.gapMs ?? 0,
        state: 'in',
      };
      this.leases.set(m.leaseId, lease);
      const occupants = /** @type {Set<string>} */ (this.occupancy.get(m.key));
      if (occupants.size === 0) this.noteVacantWait(m.key, at);
      for (const id of occupants) {
        const occupant = this.leases.get(id);
        if (occupant?.state === 'in') this.overlaps.onEnter(lease, occupant, at);
      }
      occupants.add(m.leaseId);
    } else if (!lease) {
      tally.violation('harnessErrors', { what: 'write for an unknown lease', owner: w.owner, leaseId: m.leaseId });
      return supervisor.reply(w, /** @type {number} */ (m.id), { accepted: false });
    }
    if (m.marker?.status === 'taken' && m.marker.leaseId !== m.leaseId) this.overlaps.onMarker(lease, m.marker, at, m.gapMs ?? 0);

    const checked = kind !== 'unchecked';
    const decidedBeforePause = checked && (m.gapMs ?? 0) > GAP_MS;
    // A stop that began after the harness heard of the acquisition, lasted a lease and is over:
    // the lock cannot have survived it, so no write may be decided after it. (A stop that may have
    // begun before the acquisition resolved is only an excuse, below.)
    const acquiredAt = lease.acquiredAt;
    const pause = w.stops?.find(
      (stop) => stop.stopAt >= acquiredAt && stop.contAt !== undefined && stop.contAt <= at && stop.contAt - stop.stopAt >= o.leaseMs,
    );
    const pausedPastLease = pause !== undefined;
    const pausedAround = pausedPastLease || supervisor.pausedDuring(w.owner, lease.acquiredAt - 100, at) !== undefined;
    if (kind === 'write' && !decidedBeforePause) this.overlaps.onOccupantStep(lease.leaseId, 'write');

    const result = this.resource.write(m.key, m.token, m.leaseId, kind);
    if (kind === 'unchecked') lease.staleWriteSeen = true;
    if (!result.accepted) {
      tally.counts.fencingRejections++;
      if (!checked) tally.counts.fencingRejectionsUnchecked++;
      else if (decidedBeforePause || pausedAround) tally.counts.fencingRejectionsAfterPause++;
      if (result.duplicate) tally.violation('duplicateTokens', { key: m.key, token: m.token, leaseId: m.leaseId, owner: w.owner });
      else if (checked && !decidedBeforePause && !pausedAround && lease.state !== 'abandoned') {
        tally.violation('falseSuccesses', {
          via: 'fencing',
          kind,
          key: m.key,
          token: m.token,
          highest: result.highest,
          owner: w.owner,
          gapMs: m.gapMs,
        });
      }
    }
    if (checked && !decidedBeforePause) {
      if (lease.state === 'abandoned') tally.violation('writesAfterAbort', { kind, key: m.key, owner: w.owner, leaseId: m.leaseId });
      if (pause?.contAt !== undefined) {
        tally.violation('writesAfterPause', {
          kind,
          key: m.key,
          owner: w.owner,
          pauseMs: Math.round(pause.contAt - pause.stopAt),
          gapMs: m.gapMs,
        });
      }
    }
    if (kind === 'enter') await this.groundTruth(w, m, at, decidedBeforePause || pausedAround);
    supervisor.reply(w, /** @type {number} */ (m.id), { accepted: result.accepted });
  }

  /**
   * Right after an enter (before answering it): the server must show this holder's token.
   * @param {WorkerHandle} w
   * @param {{ key: string, leaseId: string, token: number }} m
   * @param {number} at
   * @param {boolean} excused
   */
  async groundTruth(w, m, at, excused) {
    const { o, tally, supervisor } = this.run;
    tally.counts.groundTruthChecks++;
    let item;
    try {
      item = await this.readItem(m.key);
    } catch {
      tally.counts.groundTruthInconclusive++;
      return;
    }
    if (item?.token === m.leaseId) return;
    const readMs = now() - at;
    if (excused || supervisor.pausedDuring(w.owner, at - 100, now())) tally.counts.groundTruthExcused++;
    else if (readMs > o.marginMs - 50) tally.counts.groundTruthInconclusive++;
    else {
      tally.violation('falseSuccesses', {
        via: 'server',
        key: m.key,
        owner: w.owner,
        token: m.token,
        itemOwner: item?.owner,
        itemFence: item?.fence,
        itemAttempt: item?.attemptId,
        readMs: Math.round(readMs),
      });
    }
  }

  /**
   * @param {WorkerHandle} _w
   * @param {{ leaseId: string, aborted?: boolean }} m
   * @param {'exit' | 'abandon'} how
   */
  onLeave(_w, m, how) {
    const lease = this.leases.get(m.leaseId);
    if (!lease) return;
    if (how === 'abandon') lease.stateAt = now();
    if (lease.state === 'in') {
      lease.state = how === 'exit' ? 'exited' : 'abandoned';
      this.vacate(lease);
    }
    if (how === 'exit') {
      lease.exitAborted = m.aborted;
      if (lease.state === 'abandoned') lease.exitAborted = true;
    }
    this.overlaps.onOccupantStep(lease.leaseId, how, how === 'exit' ? m.aborted : true);
  }

  /** @param {Lease} lease */
  vacate(lease) {
    const occupants = /** @type {Set<string>} */ (this.occupancy.get(lease.key));
    occupants.delete(lease.leaseId);
    if (occupants.size === 0) /** @type {{ vacatedAt: number }} */ (this.keyState.get(lease.key)).vacatedAt = now();
  }

  /**
   * Chaos-phase statistic: how long a vacated key stayed without a holder while someone waited for it.
   * @param {string} key
   * @param {number} at
   */
  noteVacantWait(key, at) {
    if (this.run.phase !== 'chaos') return;
    const { vacatedAt } = /** @type {{ vacatedAt: number }} */ (this.keyState.get(key));
    if (!vacatedAt) return;
    let waitingSince = Number.POSITIVE_INFINITY;
    for (const attempt of this.attempts.values()) {
      if (attempt.key === key && (attempt.endAt === undefined || attempt.endAt >= vacatedAt) && attempt.startAt < waitingSince)
        waitingSince = attempt.startAt;
    }
    const from = Math.max(vacatedAt, waitingSince);
    if (Number.isFinite(from)) this.run.tally.counts.longestVacantWaitMs = Math.max(this.run.tally.counts.longestVacantWaitMs, at - from);
  }
}

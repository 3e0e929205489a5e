// @ts-check
/**
 * The protected resource of the chaos suite, living in the harness process, and the overlap
 * recorder that judges what it sees.
 *
 * Fencing: per key, the highest fencing token written so far. A write with a lower token is
 * rejected (counted); one with the same token is accepted only from the same lease (the same
 * holder writing again) — the same token from another lease is a duplicate token. Accepted writes
 * are logged in arrival order, and `verify()` checks that log on its own afterwards.
 *
 * Occupancy: a lease is "in" its critical section from its `enter` until its `exit`, its
 * `abandon` (its signal aborted: the worker promises no further checked write) or its process's
 * death. An `enter` while another lease of the key is in is an overlap, classified by
 * {@link OverlapRecorder}. Workers ask and wait for an answer on every enter/write/exit, so the
 * harness sees each process's steps in the order they happened.
 */

/** Overlap classes. Only `valid` (and `unresolved`) are violations. */
export const OVERLAP_CLASSES = ['valid', 'unresolved', 'pause', 'stale-entrant', 'late-abort', 'crash'];

export class FencedResource {
  constructor() {
    /** @type {Map<string, {highest: number, highestLease: string|undefined, log: {token: number, leaseId: string, kind: string}[]}>} */
    this.keys = new Map();
    this.stats = { attempted: 0, accepted: 0, rejected: 0, duplicateTokens: 0, uncheckedAttempted: 0, uncheckedRejected: 0 };
  }

  slot(key) {
    let slot = this.keys.get(key);
    if (!slot) {
      slot = { highest: Number.NEGATIVE_INFINITY, highestLease: undefined, log: [] };
      this.keys.set(key, slot);
    }
    return slot;
  }

  /** One protected write. @returns `{ accepted, duplicate, highest }` */
  write(key, token, leaseId, kind) {
    const slot = this.slot(key);
    this.stats.attempted++;
    if (kind === 'unchecked') this.stats.uncheckedAttempted++;
    const highest = slot.highest;
    let accepted = false;
    let duplicate = false;
    if (typeof token !== 'number' || !Number.isFinite(token)) accepted = false;
    else if (token > slot.highest) accepted = true;
    else if (token === slot.highest) {
      accepted = leaseId === slot.highestLease;
      duplicate = !accepted;
    }
    if (accepted) {
      slot.highest = token;
      slot.highestLease = leaseId;
      slot.log.push({ token, leaseId, kind });
      this.stats.accepted++;
    } else {
      this.stats.rejected++;
      if (kind === 'unchecked') this.stats.uncheckedRejected++;
      if (duplicate) this.stats.duplicateTokens++;
    }
    return { accepted, duplicate, highest };
  }

  /** Independent check of the accepted-write logs: tokens never go down, one lease per token. */
  verify() {
    let outOfOrder = 0;
    let sharedTokens = 0;
    for (const { log } of this.keys.values()) {
      const leaseOf = new Map();
      for (let i = 0; i < log.length; i++) {
        if (i > 0 && log[i].token < log[i - 1].token) outOfOrder++;
        const seen = leaseOf.get(log[i].token);
        if (seen !== undefined && seen !== log[i].leaseId) sharedTokens++;
        leaseOf.set(log[i].token, log[i].leaseId);
      }
    }
    return { outOfOrder, sharedTokens };
  }
}

/**
 * Records overlaps and classifies them. An overlap pairs the `entrant` (the lease that entered)
 * with an `occupant` (a lease still in). Classes:
 *
 * - `crash`: the occupant's process died (SIGKILL) while in its section;
 * - `pause`: the occupant's process was SIGSTOPped while in (or just before) its section;
 * - `stale-entrant`: the entrant's check happened before a pause of its own process (its
 *   message left after the pause: "decided before the pause");
 * - `late-abort`: the occupant's next step after the entrant came in was to report its signal
 *   aborted — its lease had run out, its process had merely not yet run the timer;
 * - `valid`: the occupant reported its lock still valid (a checked write, or leaving with the
 *   signal not aborted) after the entrant, whose own check was valid, came in. A violation.
 * - `unresolved`: the occupant never said (counted as a violation).
 */
export class OverlapRecorder {
  /**
   * @param {object} oracle
   * @param {(owner: string, from: number, to: number) => boolean} oracle.pausedDuring
   * @param {(owner: string) => boolean} oracle.isDead
   * @param {number} oracle.gapMs a check-to-send gap above this means "decided before a pause"
   */
  constructor(oracle) {
    this.oracle = oracle;
    /** @type {any[]} */
    this.overlaps = [];
  }

  /** Resource view: `entrant` entered while `occupant` was in. */
  onEnter(entrant, occupant, at) {
    const overlap = {
      via: 'resource',
      key: entrant.key,
      entrant: entrant.leaseId,
      occupant: occupant.leaseId,
      at,
      cls: 'pending',
      detail: {},
    };
    overlap.detail = { entrantOwner: entrant.owner, occupantOwner: occupant.owner, entrantGapMs: entrant.enterGapMs };
    if (occupant.state === 'dead') overlap.cls = 'crash';
    else if (this.oracle.pausedDuring(occupant.owner, occupant.acquiredAt - 100, at)) overlap.cls = 'pause';
    else if (entrant.enterGapMs > this.oracle.gapMs) overlap.cls = 'stale-entrant';
    this.overlaps.push(overlap);
    return overlap;
  }

  /** Marker view: `entrant`'s exclusive create found the marker of lease `occupantLeaseId`. */
  onMarker(entrant, claim, at, gapMs) {
    // One overlap per pair of leases, however many writes of the entrant found the marker.
    if (this.overlaps.some((o) => o.via === 'marker' && o.entrant === entrant.leaseId && o.occupant === claim.leaseId)) return undefined;
    const overlap = {
      via: 'marker',
      key: entrant.key,
      entrant: entrant.leaseId,
      occupant: claim.leaseId,
      at,
      cls: 'pending',
      detail: { entrantOwner: entrant.owner, occupantOwner: claim.owner, entrantGapMs: gapMs },
    };
    this.overlaps.push(overlap);
    return overlap;
  }

  /**
   * The occupant's next step: `'abandon'`, `'exit'` (with `aborted`), `'write'` (a checked one) or `'dead'`.
   * Resolves its pending resource-view overlaps.
   */
  onOccupantStep(occupantLeaseId, step, aborted) {
    for (const overlap of this.overlaps) {
      if (overlap.via !== 'resource' || overlap.occupant !== occupantLeaseId || overlap.cls !== 'pending') continue;
      if (step === 'dead') overlap.cls = 'crash';
      else if (step === 'abandon' || (step === 'exit' && aborted)) overlap.cls = 'late-abort';
      else overlap.cls = 'valid';
      overlap.detail.resolvedBy = step;
    }
  }

  /** Classifies the marker-view overlaps once every lease's story is known. */
  finish(leases) {
    for (const overlap of this.overlaps) {
      if (overlap.via === 'resource') {
        if (overlap.cls === 'pending') overlap.cls = 'unresolved';
        continue;
      }
      const entrant = leases.get(overlap.entrant);
      const occupant = leases.get(overlap.occupant);
      if (!occupant) {
        // It claimed the marker and died (or froze) before telling the resource.
        overlap.cls = this.oracle.isDead(overlap.detail.occupantOwner) ? 'crash' : 'unresolved';
        continue;
      }
      overlap.detail.occupantEnd = occupant.state;
      if (occupant.state === 'dead') overlap.cls = 'crash';
      else if (this.oracle.pausedDuring(occupant.owner, occupant.acquiredAt - 100, overlap.at)) overlap.cls = 'pause';
      else if (overlap.detail.entrantGapMs > this.oracle.gapMs) overlap.cls = 'stale-entrant';
      else if (entrant && this.oracle.pausedDuring(entrant.owner, overlap.at - 100, overlap.at + 1)) overlap.cls = 'stale-entrant';
      else if (occupant.state === 'abandoned' || occupant.exitAborted === true) overlap.cls = 'late-abort';
      else if (occupant.state === 'exited' && occupant.exitAborted === false) overlap.cls = 'valid';
      else overlap.cls = 'unresolved';
    }
  }

  counts() {
    const byClass = Object.fromEntries(OVERLAP_CLASSES.map((cls) => [cls, 0]));
    const byVia = { resource: 0, marker: 0 };
    for (const overlap of this.overlaps) {
      byClass[overlap.cls] = (byClass[overlap.cls] ?? 0) + 1;
      byVia[overlap.via]++;
    }
    return { total: this.overlaps.length, byClass, byVia };
  }

  violations() {
    return this.overlaps.filter((overlap) => overlap.cls === 'valid' || overlap.cls === 'unresolved' || overlap.cls === 'pending');
  }
}

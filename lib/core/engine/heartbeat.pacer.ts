/** Heartbeat writes in flight at first; the limit then follows the server's answers. */
const INITIAL_LIMIT = 8;
/** Never fewer in flight than this (a slow server still renews two leases per round trip). */
const MIN_LIMIT = 2;
/** The limit never grows past this. */
const MAX_LIMIT = 32;
/**
 * A heartbeat whose lease has less than this share of its slack left (the time between when its
 * heartbeat was due and when its lease runs out) starts even when the limit is reached, up to
 * `URGENT_EXTRA` more in flight: pacing must never be what loses a lock. Heartbeats in flight
 * therefore never exceed `MAX_LIMIT + URGENT_EXTRA` (40), well below the HTTP agent's sockets (50
 * by default in the AWS SDK), which acquisitions and releases share: heartbeats never queue behind
 * each other there, where their request limit would run.
 */
const URGENT_SHARE = 0.5;
const URGENT_EXTRA = 8;
/** A round trip within `BASE_FACTOR ×` the shortest one, plus `BASE_SLACK_MS`, is one the server answers without queueing. */
const BASE_FACTOR = 2;
const BASE_SLACK_MS = 2;
/** The shortest round trip is taken anew from each period of this many answers (a server that got slower for good). */
const BASE_PERIOD = 500;

/** What the pacer knows of a heartbeat it may start. */
export interface PacedBeat {
  /** When the heartbeat was due (local monotonic clock). */
  readonly nextBeatAt: number;
  /** When its lease runs out. */
  readonly validUntil: number;
}

/** Why heartbeats fall behind, when the pacer warns (see {@link HeartbeatPacer.behind}). */
export interface FallingBehind {
  /** How late the heartbeat that starts now is, in ms. */
  lateMs: number;
  /** Heartbeat writes answered per second since they started waiting past their due time. */
  answeredPerSecond: number;
  /** The most heartbeat writes in flight at once while that rate was counted (the limit, when too few answers were). */
  inFlight: number;
}

/**
 * Paces heartbeat writes to what the server answers: at most `limit` in flight, a limit that
 * grows by about one per round trip while answers come back without queueing at the server, by
 * one per answer while heartbeats wait past their due time, and shrinks by a tenth per round trip
 * while answers queue at the server and heartbeats are on time (by half after a failed write). A server that answers slowly because it is busy gets fewer
 * heartbeats at once, and the process's other requests (acquisitions) keep their latency.
 *
 * It also tells when heartbeats fall behind their schedule for good: {@link behind} returns the
 * figures of the first heartbeat that starts more than half its interval late, once, until
 * heartbeats were on time again for ten intervals.
 */
export class HeartbeatPacer {
  private limit = INITIAL_LIMIT;
  private inFlight = 0;
  /** The most heartbeat writes in flight at once since heartbeats started waiting past their due time. */
  private backlogMaxInFlight = 0;
  private baseRttMs = Number.POSITIVE_INFINITY;
  private periodMinMs = Number.POSITIVE_INFINITY;
  private periodCount = 0;
  /** Moving average of the round trip of heartbeat writes. */
  private rttMs = Number.POSITIVE_INFINITY;
  private lastCutAt = Number.NEGATIVE_INFINITY;
  /** Since when heartbeats wait past their due time (`NaN`: they do not), and the answers since. */
  private backlogSince = Number.NaN;
  private backlogAnswers = 0;
  private warned = false;
  private onTimeSince = Number.NaN;

  /** Heartbeat writes in flight now. */
  get active(): number {
    return this.inFlight;
  }

  /** The limit now (fractional: it moves by less than one per answer). */
  get currentLimit(): number {
    return this.limit;
  }

  /** Whether `beat` may start now: under the limit, or urgent (see {@link urgentAt}) and under the hard cap. */
  mayStart(beat: PacedBeat, now: number): boolean {
    if (this.inFlight < Math.floor(this.limit)) return true;
    return this.inFlight < Math.floor(this.limit) + URGENT_EXTRA && now >= this.urgentAt(beat);
  }

  /** From when `beat` is urgent: it then starts past the limit (up to the hard cap), its lease nearly out. */
  urgentAt(beat: PacedBeat): number {
    return beat.validUntil - (beat.validUntil - beat.nextBeatAt) * URGENT_SHARE;
  }

  /** Counts a heartbeat write as started. */
  start(): void {
    this.inFlight++;
    this.backlogMaxInFlight = Math.max(this.backlogMaxInFlight, this.inFlight);
  }

  /** Counts a heartbeat that sent no write (its lease was busy or gone) as ended. */
  skip(): void {
    this.inFlight--;
  }

  /**
   * Counts a heartbeat write as finished after `rttMs`: `answered` when the server answered (the
   * lease renewed, or found taken or gone), `false` when the write failed or timed out. `late`:
   * heartbeats are waiting past their due time, so the limit may not shrink for a slow answer.
   */
  finish(rttMs: number, answered: boolean, late: boolean, now: number): void {
    const saturated = this.inFlight >= Math.floor(this.limit);
    this.inFlight--;
    if (!late) this.backlogSince = Number.NaN;
    else if (Number.isNaN(this.backlogSince)) {
      this.backlogSince = now;
      this.backlogAnswers = 0;
      this.backlogMaxInFlight = this.inFlight + 1;
    } else this.backlogAnswers++;
    if (!answered) {
      if (now - this.lastCutAt >= rttMs) {
        this.limit = Math.max(MIN_LIMIT, this.limit / 2);
        this.lastCutAt = now;
      }
      return;
    }
    this.sample(rttMs);
    const queued = rttMs > this.baseRttMs * BASE_FACTOR + BASE_SLACK_MS;
    if (late) {
      // Heartbeats wait past their due time: one more in flight per answer, until they catch up.
      if (saturated) this.limit = Math.min(MAX_LIMIT, this.limit + 1);
    } else if (queued) {
      if (now - this.lastCutAt >= rttMs) {
        this.limit = Math.max(MIN_LIMIT, this.limit * 0.9);
        this.lastCutAt = now;
      }
    } else if (saturated) {
      this.limit = Math.min(MAX_LIMIT, this.limit + 1 / this.limit);
    }
  }

  /**
   * Called as a heartbeat starts `lateMs` after it was due, with its interval: the figures to warn
   * with when heartbeats fell more than half an interval behind (once, until they were on time
   * again for ten intervals), else `undefined`.
   */
  behind(lateMs: number, heartbeatMs: number, now: number): FallingBehind | undefined {
    if (lateMs <= heartbeatMs / 2) {
      if (Number.isNaN(this.onTimeSince)) this.onTimeSince = now;
      if (this.warned && now - this.onTimeSince >= 10 * heartbeatMs) this.warned = false;
      return undefined;
    }
    this.onTimeSince = Number.NaN;
    if (this.warned) return undefined;
    this.warned = true;
    const counted = this.backlogSeconds(now) >= 0.1;
    return {
      lateMs: Math.round(lateMs),
      answeredPerSecond: this.answeredPerSecond(now),
      inFlight: counted ? this.backlogMaxInFlight : Math.floor(this.limit),
    };
  }

  /**
   * Heartbeat writes answered (or failed) per second since heartbeats started waiting past their
   * due time: what the server takes when it is given all it can take.
   */
  answeredPerSecond(now: number): number {
    const seconds = this.backlogSeconds(now);
    if (seconds >= 0.1) return Math.round(this.backlogAnswers / seconds);
    // Too short a backlog to count: what the limit in flight gives at the usual round trip.
    return Number.isFinite(this.rttMs) ? Math.round((Math.floor(this.limit) * 1_000) / Math.max(1, this.rttMs)) : 0;
  }

  /** How long heartbeats have waited past their due time, in seconds (`NaN` when they do not). */
  private backlogSeconds(now: number): number {
    return (now - this.backlogSince) / 1_000;
  }

  private sample(rttMs: number): void {
    this.rttMs = Number.isFinite(this.rttMs) ? this.rttMs + 0.1 * (rttMs - this.rttMs) : rttMs;
    this.periodMinMs = Math.min(this.periodMinMs, rttMs);
    this.baseRttMs = Math.min(this.baseRttMs, rttMs);
    if (++this.periodCount >= BASE_PERIOD) {
      this.baseRttMs = this.periodMinMs;
      this.periodMinMs = Number.POSITIVE_INFINITY;
      this.periodCount = 0;
    }
  }
}

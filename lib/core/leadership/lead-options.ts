import type { Lock } from '../engine/lock';
import { LockKeyError, type LockLostError, LockValidationError } from '../../errors/lock.errors';
import { CALL_OPTION_INVALID, LEAD_OPTION_INVALID, LEAD_WATCH_ABOVE_LEASE } from '../../errors/lock.messages';
import { unknownOptionMessage } from '../../utils/closest-name';
import { type Duration, parseDuration, parseLease } from '../../utils/duration';
import { serializeData, toStoredKey } from '../../utils/lock-key.validation';

/** Options of `lead()` (and of `@WhenLeader`): how one process campaigns for a leadership. */
export interface LeadOptions {
  /**
   * The leader's lease: it heartbeats (one write) every heartbeat interval, a third of the lease
   * unless `heartbeatInterval` is set on the module. A leader that stops (crash, pause, network)
   * is replaced between one lease and one lease plus one `watchInterval` after its last heartbeat.
   * Default: the module's `leaseDuration`.
   */
  leaseDuration?: Duration;
  /**
   * How often a follower reads the leadership item (one strongly consistent read, at most 1 read
   * unit): a leader that resigns or shuts down gracefully is replaced within one interval. Reads
   * are also timed to land when a silent leader's lease runs out. At most the lease. Default: a
   * third of the lease.
   */
  watchInterval?: Duration;
  /** JSON-serialisable data stored with the leader's lock (at most 1 KB), shown by `inspect()`: its URL, version... */
  data?: unknown;
  /** Called each time this instance is elected, with the lock of its term. */
  onElected?: (lock: Lock) => void;
  /**
   * Called each time a term of this instance ends: lost (`reason` `expired`, `taken`, `gone`),
   * resigned (`released`) or shut down (`shutdown`). The campaign goes on as a follower unless it
   * was resigned or shut down.
   */
  onRevoked?: (reason: LockLostError) => void;
}

/** Every option of `lead()` (the compiler keeps it complete). */
const LEAD_OPTION_NAMES = Object.keys({
  leaseDuration: true,
  watchInterval: true,
  data: true,
  onElected: true,
  onRevoked: true,
} satisfies Record<keyof LeadOptions, true>);

/** The options of one campaign, checked, in milliseconds. */
export interface LeadSettings {
  /** The name as given (the lock key of the leadership). */
  readonly name: string;
  readonly leaseMs: number;
  readonly watchMs: number;
  readonly data: unknown;
  /** `data` as stored, to compare campaigns. */
  readonly dataJson: string | undefined;
}

/**
 * Checks the name and options of `lead()` before anything is sent.
 * @throws LockValidationError naming the bad name or option.
 */
export function resolveLeadOptions(name: string, options: unknown, defaults: { leaseMs: number; keyPrefix: string }): LeadSettings {
  try {
    toStoredKey(name, defaults.keyPrefix);
  } catch (error) {
    // A leadership name comes from code or configuration, never from a request's values.
    throw error instanceof LockKeyError ? new LockValidationError(error.message, { cause: error }) : error;
  }
  if (options === undefined) options = {};
  if (options === null || typeof options !== 'object')
    throw new LockValidationError(CALL_OPTION_INVALID('lead()', 'options', 'an object', options));
  const unknown = unknownOptionMessage(options, LEAD_OPTION_NAMES, 'lead()');
  if (unknown) throw new LockValidationError(unknown);
  const given = options as LeadOptions;
  const leaseMs = given.leaseDuration === undefined ? defaults.leaseMs : parseLease(given.leaseDuration);
  const watchMs =
    given.watchInterval === undefined ? Math.max(1, Math.floor(leaseMs / 3)) : parseDuration(given.watchInterval, 'watchInterval');
  if (watchMs > leaseMs) throw new LockValidationError(LEAD_WATCH_ABOVE_LEASE(name, watchMs, leaseMs));
  for (const callback of ['onElected', 'onRevoked'] as const) {
    if (given[callback] !== undefined && typeof given[callback] !== 'function')
      throw new LockValidationError(LEAD_OPTION_INVALID(name, callback, 'a function', given[callback]));
  }
  return { name, leaseMs, watchMs, data: given.data, dataJson: serializeData(name, given.data) };
}

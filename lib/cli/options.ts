import { type Command, Option } from 'commander';
import { LockValidationError } from '../errors/lock.errors';
import { parseDuration } from '../utils/duration';
import {
  DURATION_NEEDS_UNIT,
  DURATION_TOO_LONG,
  DURATION_UNKNOWN_UNIT,
  DURATION_ZERO,
  INVALID_DURATION,
  INVALID_JSON,
  INVALID_LIMIT,
  READ_WITH_OPTION,
  WAIT_ZERO,
} from './cli.messages';
import { MAX_SEMAPHORE_LIMIT } from '../store/semaphore/semaphore.record';
import { UsageError } from './cli.errors';

/** Options shared by the commands that acquire a lock. */
export interface AcquireCommandOptions {
  leaseDuration: string;
  /** A duration, `false` for `--no-wait`, or `undefined` to wait without limit. */
  wait?: string | false;
  data?: string;
  /** `--read`: a read lock, shared with other readers (`mode: 'read'`). */
  read?: boolean;
}

/**
 * Adds the options of the commands that acquire a lock: `-l, --lease-duration <duration>` (with
 * a default shown in the help), `-w, --wait <duration>`, `-n, --no-wait` and `--data <json>`.
 */
export function addAcquireOptions(command: Command, leaseDefault: string, leaseDescription: string): Command {
  return command
    .addOption(new Option('-l, --lease-duration <duration>', leaseDescription).default(leaseDefault))
    .addOption(
      new Option('-w, --wait <duration>', 'give up (exit 1) if the lock is still busy after this long (default: wait without limit)'),
    )
    .addOption(new Option('-n, --no-wait', 'try once; exit 1 at once if the lock is busy'))
    .addOption(new Option('--data <json>', 'JSON stored with the lock and shown by inspect and list'))
    .addOption(new Option('--read', 'a read lock: shared with other --read holders, never with a writer (writers go first)'));
}

/**
 * Parses the options {@link addAcquireOptions} added.
 * @throws UsageError naming the option that is wrong.
 */
export function parseAcquireOptions(options: AcquireCommandOptions): {
  leaseMs: number;
  wait: number | boolean;
  data: unknown;
  mode: 'read' | undefined;
} {
  const data = parseDataOption(options.data);
  if (options.read && data !== undefined) throw new UsageError(READ_WITH_OPTION('--data'));
  return {
    leaseMs: parseDurationOption(options.leaseDuration, '--lease-duration'),
    wait: parseWaitOption(options.wait),
    data,
    mode: options.read ? 'read' : undefined,
  };
}

/**
 * Parses `--limit` (`exec` on a counting semaphore): a whole number from 1 to the library's maximum.
 * @throws UsageError otherwise.
 */
export function parseLimitOption(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const limit = Number(value);
  if (!/^\s*\d+\s*$/.test(value) || !Number.isInteger(limit) || limit < 1 || limit > MAX_SEMAPHORE_LIMIT) {
    throw new UsageError(INVALID_LIMIT(value, MAX_SEMAPHORE_LIMIT));
  }
  return limit;
}

/** `--json`. */
export function jsonOption(): Option {
  return new Option('--json', 'print JSON instead of a table');
}

/**
 * Parses a duration given on the command line into milliseconds. Unlike the library, a bare
 * number is refused: `--wait 30` would otherwise mean 30 milliseconds.
 * @throws UsageError naming the option and listing the accepted forms.
 */
export function parseDurationOption(value: string, option: string): number {
  if (/^\s*\d+(\.\d+)?\s*$/.test(value)) {
    const zeroWait = option === '--wait' && Number(value) === 0;
    throw new UsageError(INVALID_DURATION(option, value, zeroWait ? WAIT_ZERO() : DURATION_NEEDS_UNIT(value)));
  }
  try {
    return parseDuration(value, option);
  } catch (error) {
    if (!(error instanceof LockValidationError)) throw error;
    throw new UsageError(INVALID_DURATION(option, value, durationHint(value, option)), { cause: error });
  }
}

/** Why a duration the library refused is wrong, when it can be told. */
function durationHint(value: string, option: string): string | undefined {
  if (!/^\s*(\d+(\.\d+)?\s*[a-z]+\s*)+$/i.test(value)) return undefined;
  const parts = [...value.matchAll(/(\d+(?:\.\d+)?)\s*([a-z]+)/gi)];
  const unknown = parts.find((part) => !isKnownUnit(part[2]));
  if (unknown) return DURATION_UNKNOWN_UNIT(unknown[2]);
  if (parts.every((part) => Number(part[1]) === 0)) return option === '--wait' ? WAIT_ZERO() : DURATION_ZERO();
  return DURATION_TOO_LONG();
}

function isKnownUnit(unit: string): boolean {
  try {
    parseDuration(`1${unit}`, 'unit');
    return true;
  } catch {
    return false;
  }
}

/** `--wait` / `--no-wait` as the engine's `wait`: milliseconds, `false` for one attempt, `true` for no limit. */
export function parseWaitOption(wait: string | false | undefined): number | boolean {
  if (wait === undefined) return true;
  if (wait === false) return false;
  return parseDurationOption(wait, '--wait');
}

/**
 * Parses `--data`.
 * @throws UsageError when it is not JSON.
 */
export function parseDataOption(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new UsageError(INVALID_JSON('--data', error instanceof Error ? error.message : String(error)), { cause: error });
  }
}

import { LockValidationError } from '../errors/lock.errors';
import { INVALID_DURATION, LEASE_TOO_SHORT } from '../errors/lock.messages';

/**
 * A duration: milliseconds as a number, or a string such as `'500ms'`, `'30s'`,
 * `'15 minutes'`, `'1m30s'`, `'1h30m'`, `'2 hours'`, `'1d'`.
 */
export type Duration = number | string;

const UNIT_MS: Record<string, number> = {
  ms: 1,
  msec: 1,
  msecs: 1,
  millisecond: 1,
  milliseconds: 1,
  s: 1000,
  sec: 1000,
  secs: 1000,
  second: 1000,
  seconds: 1000,
  m: 60_000,
  min: 60_000,
  mins: 60_000,
  minute: 60_000,
  minutes: 60_000,
  h: 3_600_000,
  hr: 3_600_000,
  hrs: 3_600_000,
  hour: 3_600_000,
  hours: 3_600_000,
  d: 86_400_000,
  day: 86_400_000,
  days: 86_400_000,
};

const PART = /(\d+(?:\.\d+)?)\s*([a-z]+)\s*/gy;

/** Largest duration accepted: setTimeout cannot wait longer than this. */
export const MAX_DURATION_MS = 2_147_483_647;

/**
 * Parses a {@link Duration} into whole milliseconds.
 * @param name what the value is, for the error message (`'leaseDuration'`).
 * @throws LockValidationError naming the value and the accepted forms.
 */
export function parseDuration(value: unknown, name: string): number {
  const ms = toMilliseconds(value, name);
  if (!Number.isFinite(ms)) fail(name, value, 'not a finite number');
  if (ms <= 0) fail(name, value, 'must be greater than zero');
  if (ms > MAX_DURATION_MS) fail(name, value, 'longer than 24.8 days');
  return Math.max(1, Math.round(ms));
}

/** A number as it is, text parsed; anything else refused. */
function toMilliseconds(value: unknown, name: string): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'string') return parseText(value, name);
  return fail(name, value);
}

function parseText(text: string, name: string): number {
  const input = text.trim().toLowerCase();
  if (input === '') fail(name, text, 'empty');
  let total = 0;
  PART.lastIndex = 0;
  while (PART.lastIndex < input.length) {
    const at = PART.lastIndex;
    const match = PART.exec(input);
    if (!match) fail(name, text, `cannot read "${input.slice(at)}"`);
    const unit = UNIT_MS[match[2]];
    if (unit === undefined) fail(name, text, `unknown unit "${match[2]}"`);
    total += Number(match[1]) * unit;
  }
  return total;
}

function fail(name: string, value: unknown, reason?: string): never {
  throw new LockValidationError(INVALID_DURATION(name, value, reason));
}

/** Shortest lease accepted: below it, round trips and the safety margin leave no time to hold the lock. */
export const MIN_LEASE_MS = 100;

/**
 * Parses a lease duration: a {@link Duration} of at least {@link MIN_LEASE_MS}.
 * @throws LockValidationError naming the value and what is accepted.
 */
export function parseLease(value: unknown, name = 'leaseDuration'): number {
  const ms = parseDuration(value, name);
  if (ms < MIN_LEASE_MS) throw new LockValidationError(LEASE_TOO_SHORT(name, ms, MIN_LEASE_MS));
  return ms;
}

import { INVALID_LEASE_ID } from './cli.messages';
import { UsageError } from './cli.errors';

/** A lease id as `acquire` prints it: the owner token, 128 random bits in hex (a reader's, `acquire --read`, with `r` first). */
const LEASE_ID = /^[0-9a-fr][0-9a-f]{31}$/i;

/**
 * Checks a `LEASE_ID` argument of `renew` and `release` before anything is sent: a mistyped or
 * truncated id is a usage error (exit 2), not a lease that no longer holds the lock (exit 3).
 * @throws UsageError naming the argument and its expected form.
 */
export function parseLeaseId(value: string): string {
  if (!LEASE_ID.test(value)) throw new UsageError(INVALID_LEASE_ID(value));
  return value.toLowerCase();
}

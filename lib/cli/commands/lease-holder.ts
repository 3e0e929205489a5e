import { LEASE_NOT_HELD } from '../cli.messages';
import { LeaseNotHeldError } from '../cli.errors';
import type { Session } from '../session';

/**
 * The error for a lease id that does not hold the lock, naming the current holder
 * (one more read; if that read fails, the message says only that the lease does not hold it).
 */
export async function leaseNotHeld(session: Session, name: string, cause?: unknown): Promise<LeaseNotHeldError> {
  const current = await session.manager.inspect(name).catch(() => null);
  return new LeaseNotHeldError(LEASE_NOT_HELD(name, current), { cause });
}

import type { Lock } from '../core/engine/lock';
import { LockBusyError, LockUnavailableError } from '../errors/lock.errors';
import { ACQUIRING, INTERRUPTED, LOCK_BUSY, LOCK_UNAVAILABLE, SEMAPHORE_BUSY } from './cli.messages';
import { CliError, InterruptedError } from './cli.errors';
import { ExitCode, signalExitCode } from './exit-codes';
import { WaitProgress } from './progress';
import type { Session } from './session';
import type { HandledSignal } from './signals';

/** What to acquire, and how. */
export interface LockRequest {
  name: string;
  /** More names held with `name` (`exec --and`): a multi-key lock. */
  also?: readonly string[];
  /** Milliseconds, `true` without limit, `false` for one attempt. */
  wait: number | boolean;
  leaseMs: number;
  data: unknown;
  /** A counting semaphore's limit (`exec --limit`); `undefined` for a mutex. */
  limit?: number;
  /** `'read'` for a read lock (`--read`). */
  mode?: 'read';
  /** Renew the lease in the background (`exec`), or leave that to `renew` (`acquire`). */
  heartbeat: boolean;
  /** Aborts the wait, with an {@link InterruptedError} as reason (see {@link interruptReason}). */
  signal: AbortSignal;
}

/**
 * Acquires a lock for a command, with the progress line while it waits.
 * @throws CliError with exit code 1 when the lock stays busy, 4 on an outage (no answer showed a holder).
 * @throws InterruptedError when `request.signal` aborts.
 */
export async function waitForLock(session: Session, request: LockRequest): Promise<Lock> {
  const { manager } = session;
  const willWait = request.wait !== false;
  const progress =
    willWait && session.showProgress ? new WaitProgress(session.io, request.name, () => manager.inspect(request.name)) : undefined;
  session.logger.debug(ACQUIRING(request.name, request.wait, request.leaseMs));
  try {
    if (willWait) {
      // One read first: the engine retries network errors for the whole wait (which may have
      // no limit), so an unreachable endpoint fails here, at once, instead.
      const holder = await manager.inspect(request.name);
      request.signal.throwIfAborted();
      progress?.start(holder);
    }
    const also = request.also ?? [];
    return await manager.acquire(also.length > 0 ? [request.name, ...also] : request.name, {
      wait: request.wait,
      leaseDuration: request.leaseMs,
      data: request.data,
      heartbeat: request.heartbeat,
      signal: request.signal,
      ...(request.limit === undefined ? {} : { limit: request.limit }),
      ...(request.mode === undefined ? {} : { mode: request.mode }),
    });
  } catch (error) {
    if (error instanceof LockBusyError) {
      const waited = willWait ? error.waitedMs : undefined;
      if (request.limit !== undefined)
        throw new CliError(SEMAPHORE_BUSY(request.name, request.limit, waited), ExitCode.busy, { cause: error });
      // With --and, the name that stayed busy.
      throw new CliError(LOCK_BUSY(error.key, error.holder?.owner, error.holder?.fencingToken, waited), ExitCode.busy, { cause: error });
    }
    if (error instanceof LockUnavailableError) throw outageError(request.name, error, willWait ? error.waitedMs : undefined);
    throw error;
  } finally {
    progress?.stop();
  }
}

/** The library's outage of a lock (no answer showed a holder), in the CLI's words (`--no-wait`, not `wait: false`): exit code 4. */
export function outageError(name: string, error: LockUnavailableError, waitedMs: number | undefined): CliError {
  return new CliError(LOCK_UNAVAILABLE(name, error.cause, waitedMs), ExitCode.infrastructure, { cause: error });
}

/** The abort reason for a wait that `signal` interrupted: exit code 128 + its number. */
export function interruptReason(name: string, signal: HandledSignal): InterruptedError {
  return new InterruptedError(INTERRUPTED(name, signal), signalExitCode(signal), signal);
}

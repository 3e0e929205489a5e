import type { Lock } from '../../core/engine/lock';
import { LockLostError, LockUnavailableError } from '../../errors/lock.errors';
import { CANNOT_RUN, errorText, LOST_AT_RELEASE, LOST_DURING_EXEC, PROGRAM, RELEASE_FAILED } from '../cli.messages';
import { childExitCode, ExitCode } from '../exit-codes';
import type { Session } from '../session';
import { onSignals } from '../signals';
import { interruptReason } from '../wait-for-lock';
import { SupervisedChild } from './supervised-child';

/**
 * The signal handling of a command that waits for a lock, then runs a child (`exec`, `lead`): one
 * handler for the whole command, so that SIGINT, SIGTERM and SIGHUP interrupt the wait (its
 * `interrupt` signal aborts, exit code 128 + N), then are passed on to the child once it runs.
 */
export class WaitThenForward {
  private readonly controller = new AbortController();
  private child: SupervisedChild | undefined;
  private readonly stopHandling: () => void;

  constructor(name: string) {
    this.stopHandling = onSignals((signal) => {
      if (this.child) this.child.signal(signal);
      else this.controller.abort(interruptReason(name, signal));
    });
  }

  /** Aborts when a signal interrupts the wait. */
  get interrupt(): AbortSignal {
    return this.controller.signal;
  }

  /** From now on, signals go to `child`. */
  readonly forwardTo = (child: SupervisedChild): void => {
    this.child = child;
  };

  /** Removes the handlers. */
  stop(): void {
    this.stopHandling();
  }
}

/** What {@link runWhileHeld} runs, and how it gives the lock back. */
export interface HeldCommand {
  /** The command and its arguments. */
  argv: readonly string[];
  /** After the lock is lost: how long the command has between SIGTERM and SIGKILL. */
  killAfterMs: number;
  /** Called with the child once it is started (the caller forwards signals to it). */
  started(child: SupervisedChild): void;
  /** Gives the lock back once the command ended: `true` when it was still held. */
  release(): Promise<boolean>;
}

/**
 * Runs a command while `lock` is held (`exec`, `lead`): when the lock is lost, the command gets
 * SIGTERM, then SIGKILL after the grace, and the exit code is 3; when it ends on its own, the lock
 * is given back and the exit code is the command's (127/126 when it could not be run, 3 when the
 * lock turned out to be gone at release).
 */
export async function runWhileHeld(session: Session, lock: Lock, command: HeldCommand): Promise<number> {
  const [commandName, ...args] = command.argv;
  const child = new SupervisedChild(commandName, args);
  command.started(child);
  let lost = false;
  const onLost = () => {
    lost = true;
    const reason = lock.signal.reason instanceof Error ? lock.signal.reason.message : errorText(lock.signal.reason);
    session.io.err(`${PROGRAM}: ${LOST_DURING_EXEC(reason, commandName, child.pid, command.killAfterMs)}`);
    child.terminate(command.killAfterMs);
  };
  const lockSignal = lock.signal;
  if (lockSignal.aborted) onLost();
  else lockSignal.addEventListener('abort', onLost, { once: true });
  const outcome = await child.done;
  lockSignal.removeEventListener('abort', onLost);
  if (lost) return ExitCode.lost;
  let released: boolean;
  try {
    released = await command.release();
  } catch (error) {
    // The work is done; the lease runs out on its own.
    session.io.err(`${PROGRAM}: ${RELEASE_FAILED(nameOf(lock, error), error)}`);
    released = true;
  }
  if (outcome.kind === 'failed') {
    session.io.err(`${PROGRAM}: ${CANNOT_RUN(commandName, outcome.error)}`);
    return outcome.error.code === 'ENOENT' ? ExitCode.commandNotFound : ExitCode.commandNotExecutable;
  }
  if (!released) {
    session.io.err(`${PROGRAM}: ${LOST_AT_RELEASE(nameOf(lock, lock.signal.reason), commandName)}`);
    return ExitCode.lost;
  }
  return childExitCode(outcome.code, outcome.signal);
}

/**
 * The key a message names: the one an error or a lost signal's reason names (a `LockLostError` of
 * one key of a multi-key lock), else the lock's key, or every key of a set.
 */
function nameOf(lock: Lock, reason: unknown): string {
  if (reason instanceof LockLostError || reason instanceof LockUnavailableError) return reason.key;
  return lock.keys.join(', ');
}

import { ExitCode } from './exit-codes';

/** An error the CLI reports as one line on stderr, exiting with {@link CliError.exitCode}. */
export class CliError extends Error {
  constructor(
    message: string,
    /** The process exit code this error ends the command with. */
    readonly exitCode: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** A bad command line: exit code 2. */
export class UsageError extends CliError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, ExitCode.usage, options);
  }
}

/** A lease that does not (or no longer) hold its lock: exit code 3. */
export class LeaseNotHeldError extends CliError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, ExitCode.lost, options);
  }
}

/** The wait for a lock was interrupted by a signal: exit code 128 + its number. */
export class InterruptedError extends CliError {
  constructor(
    message: string,
    exitCode: number,
    /** The signal that interrupted the wait. */
    readonly signal: NodeJS.Signals,
  ) {
    super(message, exitCode);
  }
}

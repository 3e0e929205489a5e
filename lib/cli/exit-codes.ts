import { constants } from 'node:os';

/**
 * The exit codes of `dynamo-lock`, part of its stable interface: scripts branch on them.
 * `exec` exits with its command's own code instead (see {@link childExitCode}).
 */
export const ExitCode = {
  /** The command did what it was asked. */
  ok: 0,
  /** The lock is busy (`--no-wait`), or the wait ran out. */
  busy: 1,
  /** Bad command line: unknown command or option, malformed duration or JSON, invalid lock name. */
  usage: 2,
  /** The lease was lost, or the given lease id does not hold the lock. */
  lost: 3,
  /** DynamoDB or AWS failed: missing or wrong table, unreachable endpoint, credentials, throttling. */
  infrastructure: 4,
  /** `exec`: the command was not found (as in shells). */
  commandNotFound: 127,
  /** `exec`: the command was found but could not be run (as in shells). */
  commandNotExecutable: 126,
} as const;

/** 128 + the signal's number: what shells report for a process ended by a signal (130 for SIGINT). */
export function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + signalNumber(signal);
}

/** Number of a signal by name on this platform (15 for SIGTERM); 0 if unknown. */
export function signalNumber(signal: NodeJS.Signals): number {
  return (constants.signals as Partial<Record<NodeJS.Signals, number>>)[signal] ?? 0;
}

/** The exit code that reports a child's end: its own code, or 128 + signal number if a signal ended it. */
export function childExitCode(code: number | null, signal: NodeJS.Signals | null): number {
  if (code !== null) return code;
  return signal ? signalExitCode(signal) : ExitCode.infrastructure;
}

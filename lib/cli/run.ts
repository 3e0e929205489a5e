import { CommandRunner } from './command-runner';
import { reportError } from './error-report';
import { ExitCode, signalExitCode } from './exit-codes';
import { CliIo } from './io';
import { buildProgram } from './program';

/**
 * Runs the command line and ends the process with its exit code, after stdout and stderr
 * are flushed. Ending the process (rather than closing the lock manager) is what lets a lock
 * taken by `acquire` outlive the command.
 */
export async function main(argv: readonly string[]): Promise<never> {
  const io = CliIo.fromProcess();
  const debug = debugRequested(argv);
  // A bug or a stray rejection must not end with Node's default exit code 1, which means "busy".
  const crash = (error: unknown) => {
    const code = reportError(error, io, debug);
    void io.flush().then(() => process.exit(code === ExitCode.ok ? ExitCode.infrastructure : code));
  };
  process.on('uncaughtException', crash);
  process.on('unhandledRejection', crash);
  // `dynamo-lock list | head -1`: the reader is gone; end quietly, as a process killed by SIGPIPE would.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(signalExitCode('SIGPIPE'));
    crash(error);
  });
  const code = await execute(argv, io);
  await io.flush();
  process.exit(code);
}

/**
 * Parses `argv` (as `process.argv`: node, script, arguments...) and runs the command.
 * @returns the exit code; errors are printed on `io`, never thrown.
 */
export async function execute(argv: readonly string[], io: CliIo): Promise<number> {
  const runner = new CommandRunner(io);
  try {
    const program = buildProgram(runner);
    await program.parseAsync(argv);
    return runner.exitCode;
  } catch (error) {
    return reportError(error, io, debugRequested(argv), runner.errorContext);
  }
}

/** Whether `--debug` is among the CLI's own arguments (before any `--`). */
function debugRequested(argv: readonly string[]): boolean {
  const end = argv.indexOf('--');
  return (end < 0 ? argv : argv.slice(0, end)).includes('--debug');
}

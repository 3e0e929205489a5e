import type { Command } from 'commander';
import type { ErrorContext } from './error-report';
import { ExitCode } from './exit-codes';
import type { GlobalOptions } from './global-options';
import type { CliIo } from './io';
import { Session, type SessionOptions } from './session';

/** A command's work: returns the exit code; throws for failures (see `classifyError`). */
export type CommandHandler = (session: Session) => Promise<number>;

/**
 * Runs command handlers with a {@link Session} built from the global options, closes the
 * session afterwards, and remembers the exit code for the entry point.
 */
export class CommandRunner {
  /** Exit code of the command that ran. */
  exitCode: number = ExitCode.ok;
  private session: Session | undefined;

  constructor(readonly io: CliIo) {}

  /** Table and endpoint of the running command, for error messages. */
  get errorContext(): ErrorContext {
    return { tableName: this.session?.tableName, endpoint: this.session?.endpoint, tableKeys: this.session?.tableKeys };
  }

  /** Runs `handler` for `command` (the commander command whose action is running). */
  async run(command: Command, handler: CommandHandler, options?: SessionOptions): Promise<void> {
    const session = new Session(this.io, command.optsWithGlobals<GlobalOptions>(), options);
    this.session = session;
    try {
      this.exitCode = await handler(session);
    } finally {
      await session.close();
    }
  }
}

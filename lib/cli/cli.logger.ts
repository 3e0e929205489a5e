import type { LockLogger } from '../interfaces/lock-logger.interface';
import { oneLine, PROGRAM } from './cli.messages';
import type { CliIo } from './io';

/**
 * The logger the CLI gives the lock engine. The engine's warnings (heartbeat retries,
 * transient errors) go to stderr, one line each, only with `--debug`: the CLI reports what
 * matters itself. Nothing ever goes to stdout, which carries lease ids and JSON.
 */
export class CliLogger implements LockLogger {
  constructor(
    private readonly io: CliIo,
    private readonly debugEnabled: boolean,
  ) {}

  log(message: unknown): void {
    this.write('log', message);
  }

  error(message: unknown): void {
    this.write('error', message);
  }

  warn(message: unknown): void {
    this.write('warn', message);
  }

  debug(message: unknown): void {
    this.write('debug', message);
  }

  verbose(message: unknown): void {
    this.write('verbose', message);
  }

  private write(level: string, message: unknown): void {
    if (this.debugEnabled) this.io.err(`${PROGRAM}: [${level}] ${oneLine(String(message))}`);
  }
}

import type { LockLogger } from '../../interfaces/lock-logger.interface';

/**
 * The default logger of a standalone `LockManager` (outside Nest): warnings and errors on
 * stderr, nothing else. `LockService` uses Nest's `Logger` instead.
 */
export class ConsoleLockLogger implements LockLogger {
  log(): void {}
  debug(): void {}
  verbose(): void {}
  warn(message: unknown): void {
    process.stderr.write(`[DynamoLock] WARN ${String(message)}\n`);
  }
  error(message: unknown): void {
    process.stderr.write(`[DynamoLock] ERROR ${String(message)}\n`);
  }
}

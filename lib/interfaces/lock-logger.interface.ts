/**
 * Where the library writes its log lines: Nest's `Logger` (and any `LoggerService`) fits it, and
 * so does `console`. Only `log` and `warn` are required; `error`, `debug` and `verbose` are used
 * when present.
 */
export interface LockLogger {
  /** Table creation and other one-off facts. */
  log(message: unknown, ...optionalParams: unknown[]): unknown;
  /** Retries, losses, failed releases: something the app should know. */
  warn(message: unknown, ...optionalParams: unknown[]): unknown;
  /** Failures the library cannot handle itself. */
  error?(message: unknown, ...optionalParams: unknown[]): unknown;
  /** Skipped `@WithLock` calls and other routine events. */
  debug?(message: unknown, ...optionalParams: unknown[]): unknown;
  /** Detail useful only when tracing the engine. */
  verbose?(message: unknown, ...optionalParams: unknown[]): unknown;
}

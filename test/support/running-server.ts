import type { TestServer } from './server-list';

/** A server started by the global setup, with a way to stop it. */
export interface RunningServer extends TestServer {
  /** Stops the server; safe to call more than once. */
  stop(): Promise<void>;
}

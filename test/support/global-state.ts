import type { RunningServer } from '../../tools/dynamodb-servers.mjs';

/** Servers started by the global setup, kept on `globalThis` for the teardown. */
export interface GlobalServerState {
  /** Selection these servers were started for (to reuse them in watch mode). */
  readonly selection: string;
  readonly servers: readonly RunningServer[];
}

const KEY = Symbol.for('nestjs-dynamo-lock/test-servers');
type Holder = { [KEY]?: GlobalServerState };

/** Returns the servers the global setup started in this process, if any. */
export function getGlobalServerState(): GlobalServerState | undefined {
  return (globalThis as Holder)[KEY];
}

/** Records (or, with `undefined`, forgets) the started servers. */
export function setGlobalServerState(state: GlobalServerState | undefined): void {
  (globalThis as Holder)[KEY] = state;
}

import { getGlobalServerState, setGlobalServerState } from './global-state';

/**
 * Jest global teardown: stops the servers started by the global setup.
 * In watch mode they are kept for the next run (and killed when Jest exits).
 */
export default async function globalTeardown(globalConfig: { readonly watch: boolean; readonly watchAll: boolean }): Promise<void> {
  if (globalConfig.watch || globalConfig.watchAll) return;
  const state = getGlobalServerState();
  setGlobalServerState(undefined);
  const results = await Promise.allSettled((state?.servers ?? []).map((server) => server.stop()));
  const failures = results.flatMap((result) => (result.status === 'rejected' ? [String(result.reason)] : []));
  if (failures.length > 0) throw new Error(`Could not stop the test servers:\n${failures.join('\n')}`);
}

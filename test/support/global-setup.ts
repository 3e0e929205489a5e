import { externalEndpoint, type RunningServer, startLocalServer } from '../../tools/dynamodb-servers.mjs';
import { getGlobalServerState, setGlobalServerState } from './global-state';
import { SELECT_SERVERS_ENV, SERVERS_JSON_ENV, type TestServer, encodeServers, parseServerSelection } from './server-list';

/**
 * Jest global setup: starts the DynamoDB-compatible servers the tests run
 * against and publishes them to the workers in `DYNAMO_LOCK_TEST_ENDPOINTS`.
 *
 * - `AWS_ENDPOINT_URL_DYNAMODB=http://...` (or `DYNAMODB_ENDPOINT`): use only that server ("external"), start nothing.
 * - `DYNAMO_LOCK_TEST_SERVERS=dynalite` (or `dynamodb-local`, or both comma-separated):
 *   start only those; default is both.
 * - `DYNAMO_LOCK_TEST_STARTUP_TIMEOUT_MS`: how long DynamoDB Local may take to start (30 s).
 */
export default async function globalSetup(globalConfig: { readonly watch: boolean; readonly watchAll: boolean }): Promise<void> {
  const started = Date.now();
  // The SDK warns about Node 20 on first client creation; that is noise in tests.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

  const external = externalEndpoint();
  if (external) {
    publish([{ name: 'external', endpoint: external }], 'external server', started);
    return;
  }

  const selection = parseServerSelection(process.env[SELECT_SERVERS_ENV]);
  const previous = getGlobalServerState();
  if (previous && previous.selection === selection.join(',') && (globalConfig.watch || globalConfig.watchAll)) {
    publish(previous.servers, 'reused servers', started);
    return;
  }
  await stopAll(previous?.servers ?? []);
  setGlobalServerState(undefined);

  const timings: string[] = [];
  const results = await Promise.allSettled(
    selection.map(async (name) => {
      const t0 = Date.now();
      // dynalite runs in this process (quick); DynamoDB Local with a quick-starting JVM.
      const server = await startLocalServer(name, name === 'dynamodb-local' ? { startupTimeoutMs: startupTimeoutMs() } : {});
      timings.push(`${name} ${Date.now() - t0} ms`);
      return server;
    }),
  );
  const servers = results.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  const failures = results.flatMap((result) => (result.status === 'rejected' ? [String(result.reason)] : []));
  if (failures.length > 0) {
    await stopAll(servers);
    throw new Error(`Could not start the test servers:\n${failures.join('\n\n')}`);
  }

  setGlobalServerState({ selection: selection.join(','), servers });
  publish(servers, `started ${timings.join(', ')}`, started);
}

/** `DYNAMO_LOCK_TEST_STARTUP_TIMEOUT_MS` (default 30 s) bounds the JVM's start. */
function startupTimeoutMs(): number {
  const value = Number(process.env.DYNAMO_LOCK_TEST_STARTUP_TIMEOUT_MS ?? 30_000);
  if (!Number.isFinite(value) || value <= 0) throw new Error('DYNAMO_LOCK_TEST_STARTUP_TIMEOUT_MS must be a positive number');
  return value;
}

function publish(servers: readonly TestServer[], detail: string, started: number): void {
  const list = servers.map(({ name, endpoint }) => ({ name, endpoint }));
  process.env[SERVERS_JSON_ENV] = encodeServers(list);
  const names = list.map(({ name, endpoint }) => `${name} ${endpoint}`).join(', ');
  process.stderr.write(`\n[test servers] ${names} (${detail}; global setup ${Date.now() - started} ms)\n`);
}

async function stopAll(servers: readonly RunningServer[]): Promise<void> {
  await Promise.allSettled(servers.map((server) => server.stop()));
}

/**
 * The list of DynamoDB-compatible servers a test run uses, as passed from
 * Jest's global setup to the test workers through an environment variable.
 */

import { LOCAL_SERVER_NAMES, type LocalServerName } from '../../tools/dynamodb-servers.mjs';

export type { LocalServerName };

/** Name of a server under test; `external` is the one named by `DYNAMODB_ENDPOINT`. */
export type TestServerName = LocalServerName | 'external';

/** A running server that tests can talk to. */
export interface TestServer {
  readonly name: TestServerName;
  /** Base URL, e.g. `http://127.0.0.1:8000`. */
  readonly endpoint: string;
}

/** Input: comma-separated local servers to start (default: all of them). */
export const SELECT_SERVERS_ENV = 'DYNAMO_LOCK_TEST_SERVERS';
/** Output of global setup: JSON array of {@link TestServer}. */
export const SERVERS_JSON_ENV = 'DYNAMO_LOCK_TEST_ENDPOINTS';

/** Parses {@link SELECT_SERVERS_ENV}; an empty or unset value selects every local server. */
export function parseServerSelection(value: string | undefined): LocalServerName[] {
  const names = (value ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  if (names.length === 0) return [...LOCAL_SERVER_NAMES];
  const unknown = names.filter((name) => !isLocalServerName(name));
  if (unknown.length > 0) {
    throw new Error(
      `${SELECT_SERVERS_ENV}=${value}: unknown server ${unknown.join(', ')}; ` +
        `expected a comma-separated subset of ${LOCAL_SERVER_NAMES.join(', ')}`,
    );
  }
  return [...new Set(names.filter(isLocalServerName))];
}

/** Serializes servers for {@link SERVERS_JSON_ENV}. */
export function encodeServers(servers: readonly TestServer[]): string {
  return JSON.stringify(servers);
}

/** Parses and validates the value of {@link SERVERS_JSON_ENV}. */
export function decodeServers(json: string): TestServer[] {
  const parsed: unknown = JSON.parse(json);
  if (!Array.isArray(parsed) || parsed.length === 0 || !parsed.every(isTestServer)) {
    throw new Error(`${SERVERS_JSON_ENV} is not a non-empty JSON array of {name, endpoint}: ${json}`);
  }
  return parsed;
}

function isLocalServerName(name: string): name is LocalServerName {
  return (LOCAL_SERVER_NAMES as readonly string[]).includes(name);
}

function isTestServer(value: unknown): value is TestServer {
  if (typeof value !== 'object' || value === null) return false;
  const { name, endpoint } = value as Record<string, unknown>;
  return typeof endpoint === 'string' && typeof name === 'string' && (name === 'external' || isLocalServerName(name));
}

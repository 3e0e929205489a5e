import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';

import type { EndpointInfo, EndpointSource } from '../../errors/endpoint-info';

export type { EndpointInfo, EndpointSource };

/** Environment variable the lock manager reads when `clientConfig.endpoint` is not set. */
export const DYNAMODB_ENDPOINT_ENV = 'DYNAMODB_ENDPOINT';

/** What the lock manager set for clients it created: the client's config keeps no trace of it. */
const noted = new WeakMap<DynamoDBClient, EndpointInfo>();

/**
 * The lock manager's DynamoDB client: `clientConfig`, with the endpoint from `DYNAMODB_ENDPOINT`
 * when the config sets none. Remembers where the endpoint came from for {@link describeEndpoint}.
 */
export function createDynamoClient(clientConfig: DynamoDBClientConfig = {}): DynamoDBClient {
  const config = { ...clientConfig };
  let source: EndpointSource = 'option';
  const fromEnv = process.env[DYNAMODB_ENDPOINT_ENV];
  if (config.endpoint === undefined && fromEnv) {
    config.endpoint = fromEnv;
    source = DYNAMODB_ENDPOINT_ENV;
  }
  const client = new DynamoDBClient(config);
  if (config.endpoint !== undefined) noted.set(client, { url: typeof config.endpoint === 'string' ? config.endpoint : undefined, source });
  return client;
}

/**
 * Where `client` sends its requests and who said so: the lock options, `DYNAMODB_ENDPOINT`, the
 * client passed in, the SDK's `AWS_ENDPOINT_URL*` variables or config file, or AWS's own
 * endpoint for the region; and the client's region, when one is set. Never throws.
 */
export async function describeEndpoint(client: DynamoDBClient): Promise<EndpointInfo> {
  const config = client.config;
  const region = (await config.region().catch(() => undefined)) || undefined;
  const inRegion = region === undefined ? {} : { region };
  if (config.isCustomEndpoint) {
    const known = noted.get(client);
    return { url: known?.url ?? (await resolvedUrl(client)), source: known?.source ?? 'client', ...inRegion };
  }
  const configured = await config.serviceConfiguredEndpoint?.().catch(() => undefined);
  if (configured) {
    const env = (['AWS_ENDPOINT_URL_DYNAMODB', 'AWS_ENDPOINT_URL'] as const).find((name) => process.env[name]);
    return { url: configured, source: env ?? 'aws-config', ...inRegion };
  }
  if (!region) return { url: undefined, source: 'default' };
  try {
    const [UseFIPS, UseDualStack] = await Promise.all([config.useFipsEndpoint(), config.useDualstackEndpoint()]);
    return { url: config.endpointProvider({ Region: region, UseFIPS, UseDualStack }).url.href, source: 'default', region };
  } catch {
    return { url: `https://dynamodb.${region}.amazonaws.com`, source: 'default', region };
  }
}

/**
 * Whether `url` is an endpoint the SDK can send to: an absolute `http://` or `https://` URL.
 * Without the scheme (`localhost:8000`) the SDK fails with a misleading error, or none at all
 * (`localhost:` reads as the scheme).
 */
export function isHttpUrl(url: string): boolean {
  if (!URL.canParse(url)) return false;
  const { protocol, hostname } = new URL(url);
  return (protocol === 'http:' || protocol === 'https:') && hostname !== '';
}

/** A custom endpoint the client resolved, written back as a URL; `undefined` when it does not resolve. */
async function resolvedUrl(client: DynamoDBClient): Promise<string | undefined> {
  try {
    const endpoint = await client.config.endpoint?.();
    if (!endpoint) return undefined;
    const port = endpoint.port === undefined ? '' : `:${endpoint.port}`;
    const path = endpoint.path === '/' ? '' : endpoint.path;
    return `${endpoint.protocol}//${endpoint.hostname}${port}${path}`;
  } catch {
    return undefined;
  }
}

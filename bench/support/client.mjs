/** DynamoDB clients for the benchmark: every system under test gets one aimed at the proxy. */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';

// The SDK warns once per process that Node 20 support ends; noise here.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

/**
 * A client for `endpoint`. Local servers accept any credentials but requests must be signed;
 * env credentials win when set (an external server behind DYNAMODB_ENDPOINT).
 */
export function makeClient(endpoint, config = {}) {
  const credentials = process.env.AWS_ACCESS_KEY_ID ? undefined : { accessKeyId: 'bench', secretAccessKey: 'bench' };
  return new DynamoDBClient({
    endpoint,
    region: process.env.AWS_REGION ?? 'us-east-1',
    ...(credentials ? { credentials } : {}),
    ...config,
  });
}

/**
 * Calls `onWrite(sentAt)` for every successful write this client makes (sentAt on the
 * shared wall clock). The takeover scenario uses it to know the holder's last heartbeat.
 */
export function watchWrites(client, onWrite, wall) {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const sentAt = wall();
      const result = await next(args);
      if (/^(PutItem|UpdateItem)Command$/.test(context.commandName ?? '')) onWrite(sentAt);
      return result;
    },
    { step: 'initialize', priority: 'high', name: 'benchWatchWrites' },
  );
}

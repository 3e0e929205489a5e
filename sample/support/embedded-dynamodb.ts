import type { AddressInfo } from 'node:net';
import dynalite from 'dynalite';

/** A DynamoDB server for the sample: the one in `AWS_ENDPOINT_URL_DYNAMODB` (or `DYNAMODB_ENDPOINT`), or dynalite started in this process. */
export interface SampleDynamoDB {
  endpoint: string;
  embedded: boolean;
  stop(): Promise<void>;
}

/**
 * Uses `AWS_ENDPOINT_URL_DYNAMODB` (the AWS SDK's own variable) or `DYNAMODB_ENDPOINT` when set
 * (DynamoDB Local, or real AWS with its usual credentials);
 * otherwise starts dynalite in memory on a free loopback port and points the SDK at it with
 * dummy credentials, so `npm start` needs no AWS account.
 */
export async function startSampleDynamoDB(): Promise<SampleDynamoDB> {
  const given = process.env.AWS_ENDPOINT_URL_DYNAMODB ?? process.env.DYNAMODB_ENDPOINT;
  if (given) return { endpoint: given, embedded: false, stop: async () => undefined };
  const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  process.env.DYNAMODB_ENDPOINT = endpoint;
  process.env.AWS_REGION ??= 'us-east-1';
  process.env.AWS_ACCESS_KEY_ID ??= 'local';
  process.env.AWS_SECRET_ACCESS_KEY ??= 'local';
  return {
    endpoint,
    embedded: true,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Where a DynamoDB client sends its requests, and who set it: shared by the store and the error messages. */

/** Where the endpoint of a DynamoDB client was set. */
export type EndpointSource =
  /** `clientConfig.endpoint` of the lock options. */
  | 'option'
  /** The `DYNAMODB_ENDPOINT` environment variable, read by the lock manager. */
  | 'DYNAMODB_ENDPOINT'
  /** The endpoint of a DynamoDB client passed as the `client` option. */
  | 'client'
  /** The SDK's configured endpoints: environment variables, or `endpoint_url` in the AWS config file. */
  | 'AWS_ENDPOINT_URL_DYNAMODB'
  | 'AWS_ENDPOINT_URL'
  | 'aws-config'
  /** AWS's own endpoint for the region. */
  | 'default';

/** The endpoint a DynamoDB client sends to, and where it was set; for error messages. */
export interface EndpointInfo {
  /** The endpoint as configured (or AWS's regional URL); `undefined` when it cannot be known (no region). */
  url: string | undefined;
  source: EndpointSource;
  /** The client's region, when one is set (whatever the endpoint: DynamoDB Local keeps a database per region, too). */
  region?: string;
}

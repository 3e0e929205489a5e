import { type DynamoDBClient, DescribeTimeToLiveCommand } from '@aws-sdk/client-dynamodb';
import { ATTR } from '../store/lock-record';

/** The TTL attribute of lock items. */
export const TTL_ATTRIBUTE = ATTR.ttl;

/**
 * The table's TTL status (`ENABLED`, `DISABLED`, ...), or `undefined` when the server has no
 * TTL API (dynalite). Other errors (missing table, network) are thrown.
 */
export async function describeTtl(client: DynamoDBClient, tableName: string): Promise<string | undefined> {
  try {
    const output = await client.send(new DescribeTimeToLiveCommand({ TableName: tableName }));
    return output.TimeToLiveDescription?.TimeToLiveStatus ?? 'DISABLED';
  } catch (error) {
    if (error instanceof Error && /UnknownOperation|not supported|UnrecognizedClient/i.test(`${error.name} ${error.message}`))
      return undefined;
    throw error;
  }
}

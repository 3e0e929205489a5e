/**
 * The floor for an uncontended cycle: the two conditional writes any lease lock needs
 * (take: UpdateItem if no owner; give back: UpdateItem if still the owner), nothing else,
 * sent with the same client as the lock under test.
 */
import { randomUUID } from 'node:crypto';
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';

export function open({ client, table, owner, leaseMs, keyAttribute }) {
  const names = { '#t': 'token', '#o': 'owner', '#l': 'leaseMs' };
  return {
    warnings: [],
    async acquire(k) {
      const token = randomUUID();
      const Key = { [keyAttribute]: { S: k } };
      await client.send(
        new UpdateItemCommand({
          TableName: table,
          Key,
          UpdateExpression: 'SET #t = :t, #o = :o, #l = :l',
          ConditionExpression: 'attribute_not_exists(#t)',
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: { ':t': { S: token }, ':o': { S: owner }, ':l': { N: String(leaseMs) } },
        }),
      );
      return {
        release: () =>
          client.send(
            new UpdateItemCommand({
              TableName: table,
              Key,
              UpdateExpression: 'REMOVE #t, #o',
              ConditionExpression: '#t = :t',
              ExpressionAttributeNames: { '#t': 'token', '#o': 'owner' },
              ExpressionAttributeValues: { ':t': { S: token } },
            }),
          ),
      };
    },
    close: async () => {},
  };
}

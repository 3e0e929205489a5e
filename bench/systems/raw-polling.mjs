/**
 * The plain polling lock many services hand-roll: a conditional PutItem every 25 ms until it
 * succeeds (item absent or its lease expired on the writer's wall clock), a heartbeat
 * UpdateItem per lock on its own interval timer, a conditional DeleteItem on release.
 */
import { randomUUID } from 'node:crypto';
import { ConditionalCheckFailedException, DeleteItemCommand, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { setTimeout as sleep } from 'node:timers/promises';

const POLL_MS = 25;

export function open({ client, table, owner, leaseMs, heartbeatMs, keyAttribute }) {
  const warnings = [];
  const held = new Set();
  const key = (k) => ({ [keyAttribute]: { S: k } });

  async function release(lock) {
    clearInterval(lock.timer);
    held.delete(lock);
    try {
      await client.send(
        new DeleteItemCommand({
          TableName: table,
          Key: key(lock.key),
          ConditionExpression: '#t = :t',
          ExpressionAttributeNames: { '#t': 'token' },
          ExpressionAttributeValues: { ':t': { S: lock.token } },
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }

  return {
    warnings,
    async acquire(k, { signal } = {}) {
      const token = randomUUID();
      for (;;) {
        signal?.throwIfAborted();
        const now = Date.now();
        try {
          await client.send(
            new PutItemCommand({
              TableName: table,
              Item: { ...key(k), owner: { S: owner }, token: { S: token }, expiresAt: { N: String(now + leaseMs) } },
              ConditionExpression: 'attribute_not_exists(#pk) OR #exp < :now',
              ExpressionAttributeNames: { '#pk': keyAttribute, '#exp': 'expiresAt' },
              ExpressionAttributeValues: { ':now': { N: String(now) } },
            }),
          );
          break;
        } catch (error) {
          if (!(error instanceof ConditionalCheckFailedException)) throw error;
        }
        await sleep(POLL_MS, undefined, { signal });
      }
      const lock = { key: k, token };
      lock.timer = setInterval(() => {
        client
          .send(
            new UpdateItemCommand({
              TableName: table,
              Key: key(k),
              UpdateExpression: 'SET #exp = :exp',
              ConditionExpression: '#t = :t',
              ExpressionAttributeNames: { '#exp': 'expiresAt', '#t': 'token' },
              ExpressionAttributeValues: { ':exp': { N: String(Date.now() + leaseMs) }, ':t': { S: token } },
            }),
          )
          .catch((e) => warnings.length < 20 && warnings.push(`heartbeat: ${e.name}`));
      }, heartbeatMs);
      held.add(lock);
      return { release: () => release(lock) };
    },
    async close() {
      await Promise.allSettled([...held].map(release));
    },
  };
}

/**
 * The fence's assignment goes into the update expression's one SET clause, wherever the clause is
 * and however it is spelled (DynamoDB accepts a SET clause only once per expression).
 */
import { describe, expect, it } from '@jest/globals';
import { withFenceSet } from '../../../lib/store/fencing/fenced-request';

const FENCE = '#dynamoLockFence = :dynamoLockFence';

describe('withFenceSet', () => {
  it.each([
    ['SET #a = :v', `SET ${FENCE}, #a = :v`],
    ['SET#a = :v', `SET${FENCE}, #a = :v`],
    ['set a = :v', `set ${FENCE}, a = :v`],
    ['REMOVE #b SET#a = :v', `REMOVE #b SET${FENCE}, #a = :v`],
    ['SET #a=:v REMOVE#b', `SET ${FENCE}, #a=:v REMOVE#b`],
    ['REMOVE b', `SET ${FENCE} REMOVE b`],
    ['REMOVE SETX', `SET ${FENCE} REMOVE SETX`],
    ['ADD #set :one', `SET ${FENCE} ADD #set :one`],
    ['', `SET ${FENCE}`],
  ])('%j → %j', (expression, fenced) => {
    expect(withFenceSet(expression)).toBe(fenced);
  });
});

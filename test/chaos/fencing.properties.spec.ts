/**
 * Fenced writes, property-based (fast-check) over interleavings, on the memory store. The fence
 * needs no Promela model (see `model/README.md`): its check is one conditional write on the data
 * item (`lock.fencedWrite()`) or one transaction with a check of the lock item (`lock.transact()`),
 * whatever the waiting line did before. These properties are its model:
 *
 * - holders take one key over from each other (the lease freed under the holder, as after a pause
 *   past it: the holder does not know), each with a higher fencing token; a holder may also release;
 * - any holder, current or stale (it resumes after its pause), writes an item: `fencedWrite` (Put
 *   or Update) to the fenced items, `transact` to the transacted ones; several writes may be in
 *   flight at once;
 * - the memory store decides each fenced write; the hook (`onWrite`) plays DynamoDB for the data:
 *   it evaluates the condition the write carries — the fence condition exactly as the DynamoDB store
 *   builds it (`fencedOperation`) — against the item, and a refused write's condition is evaluated
 *   too, so the memory store and the DynamoDB condition must agree;
 *
 * and whatever the interleaving: no write with a token below the item's highest written token
 * ever lands; a holder's fenced write lands when no newer token has written the item (and its lock
 * is not known lost); a refusal names a newer token that did write the item; `transact` lands
 * exactly while the lock is held (the lock item still shows the holder).
 */
import { describe, expect, it } from '@jest/globals';
import type { AttributeValue, Update } from '@aws-sdk/client-dynamodb';
import fc from 'fast-check';
import { type FencedWriteItem, type Lock, LockFencedError, LockLostError, LockManager, MemoryLockStore, type MemoryWrite } from '../../lib';
import { fencedOperation, operationOf } from '../../lib/store/fencing/fenced-request';
import { MemoryLogger } from '../support/lock-fixture';

const KEY = 'fenced';
const TABLE = 'data';
const FENCE = 'lockFence';
const FENCED_ITEMS = ['f1', 'f2'];
const TRANSACTED_ITEMS = ['t1'];

/** One step: a takeover by a manager, a release by the current holder, or a batch of writes started together. */
type Write = { holder: number; item: number; via: 'fencedWrite' | 'transact'; op: 'Put' | 'Update' };
type Step = { kind: 'takeover' } | { kind: 'release' } | { kind: 'writes'; writes: Write[] };

const writeArb: fc.Arbitrary<Write> = fc.record({
  holder: fc.nat({ max: 7 }),
  item: fc.nat({ max: 3 }),
  via: fc.constantFrom('fencedWrite' as const, 'fencedWrite' as const, 'transact' as const),
  op: fc.constantFrom('Put' as const, 'Update' as const),
});
const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 3, arbitrary: fc.constant({ kind: 'takeover' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'release' as const }) },
  { weight: 6, arbitrary: fc.array(writeArb, { minLength: 1, maxLength: 4 }).map((writes) => ({ kind: 'writes' as const, writes })) },
);

/** A data item as DynamoDB would hold it: the fence attribute, and the tokens of the writes that landed, in order. */
interface DataItem {
  fence: number | undefined;
  landed: number[];
}

interface Holder {
  lock: Lock;
  manager: number;
  token: number;
  /** The lock is known lost to its holder: released, or found lost by a transaction (a fence's refusal does not mark it: another key's token may be the newer one). */
  knownLost: boolean;
}

/**
 * A small evaluator of the condition expressions fenced writes carry: `attribute_not_exists(#n)`,
 * `attribute_exists(#n)`, comparisons of a name with a value, AND, OR, NOT and parentheses.
 */
function evaluate(
  expression: string,
  item: Record<string, number | undefined>,
  names: Record<string, string>,
  values: Record<string, AttributeValue>,
): boolean {
  const tokens = expression.match(/\(|\)|<=|>=|<>|=|<|>|[#:]?[A-Za-z_][\w]*/g) ?? [];
  let at = 0;
  const peek = () => tokens[at];
  const take = (expected?: string) => {
    const token = tokens[at++];
    if (expected !== undefined && token?.toUpperCase() !== expected) throw new Error(`expected ${expected} at ${token} in ${expression}`);
    return token;
  };
  const operand = (token: string): number | undefined => {
    if (token.startsWith('#')) return item[names[token]];
    if (token.startsWith(':')) return Number(values[token]?.N);
    throw new Error(`operand ${token} in ${expression}`);
  };
  const primary = (): boolean => {
    const token = take();
    if (token === '(') {
      const inner = or();
      take(')');
      return inner;
    }
    if (token.toUpperCase() === 'NOT') return !primary();
    if (token === 'attribute_not_exists' || token === 'attribute_exists') {
      take('(');
      const present = item[names[take()]] !== undefined;
      take(')');
      return token === 'attribute_exists' ? present : !present;
    }
    const left = operand(token);
    const comparator = take();
    const right = operand(take());
    if (left === undefined || right === undefined) return false;
    switch (comparator) {
      case '<=':
        return left <= right;
      case '<':
        return left < right;
      case '>=':
        return left >= right;
      case '>':
        return left > right;
      case '=':
        return left === right;
      case '<>':
        return left !== right;
    }
    throw new Error(`comparator ${comparator} in ${expression}`);
  };
  const and = (): boolean => {
    let value = primary();
    while (peek()?.toUpperCase() === 'AND') {
      take();
      value = primary() && value;
    }
    return value;
  };
  const or = (): boolean => {
    let value = and();
    while (peek()?.toUpperCase() === 'OR') {
      take();
      value = and() || value;
    }
    return value;
  };
  const result = or();
  if (at !== tokens.length) throw new Error(`unread ${tokens.slice(at).join(' ')} in ${expression}`);
  return result;
}

/** The fence condition of a write as the DynamoDB store would send it, evaluated against the item. */
function conditionHolds(write: FencedWriteItem, item: DataItem): boolean {
  const body = 'Put' in write ? write.Put : 'Update' in write ? write.Update : write.Delete;
  return evaluate(
    body.ConditionExpression ?? '',
    { [FENCE]: item.fence },
    body.ExpressionAttributeNames ?? {},
    body.ExpressionAttributeValues ?? {},
  );
}

function writeItem(id: string, op: 'Put' | 'Update', marker: string): FencedWriteItem {
  if (op === 'Put') return { Put: { TableName: TABLE, Item: { id: { S: id }, by: { S: marker } } } };
  const update: Update = {
    TableName: TABLE,
    Key: { id: { S: id } },
    UpdateExpression: 'SET #by = :by',
    ExpressionAttributeNames: { '#by': 'by' },
    ExpressionAttributeValues: { ':by': { S: marker } },
  };
  return { Update: update };
}

describe('fenced writes over interleavings (memory store, the DynamoDB fence condition)', () => {
  it('no stale write lands; a fenced write lands unless a newer token wrote the item; transact lands exactly while the lock is held', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 40 }), async (steps) => {
        const items = new Map<string, DataItem>([...FENCED_ITEMS, ...TRANSACTED_ITEMS].map((id) => [id, { fence: undefined, landed: [] }]));
        const idOf = (write: MemoryWrite): string => {
          if (write.kind === 'transact') return String(write.items[0].Update?.Key?.id?.S);
          const item = write.item;
          return String('Put' in item ? item.Put.Item?.id?.S : 'Update' in item ? item.Update.Key?.id?.S : item.Delete.Key?.id?.S);
        };
        const onWrite = (write: MemoryWrite): void => {
          const item = items.get(idOf(write)) as DataItem;
          // The memory store let it through: the condition DynamoDB would evaluate must hold too.
          if (write.kind === 'fencedWrite') expect(conditionHolds(write.item, item)).toBe(true);
          item.fence = write.fencingToken;
          item.landed.push(write.fencingToken);
        };
        const store = new MemoryLockStore({ onWrite, tableKeys: { [TABLE]: ['id'] } });
        const logger = new MemoryLogger();
        const managers: LockManager[] = [];
        const freer = new LockManager({ store, ownerName: 'freer', logger });
        const holders: Holder[] = [];
        let current: Holder | undefined;
        try {
          for (const step of steps) {
            if (step.kind === 'takeover') {
              // The lease is freed under the current holder (it paused past it and does not know;
              // another process's manager takes it).
              // Each holder its own manager (process): a manager still holding the key would wait on itself.
              const manager = managers.push(new LockManager({ store, ownerName: `h${managers.length}`, logger })) - 1;
              if (current) await freer.releaseLease(KEY, current.lock.leaseId);
              const lock = await managers[manager].acquire(KEY, { leaseDuration: '1h', wait: 0 });
              for (const earlier of holders) expect(lock.fencingToken).toBeGreaterThan(earlier.token);
              current = { lock, manager, token: lock.fencingToken, knownLost: false };
              holders.push(current);
            } else if (step.kind === 'release') {
              if (current) {
                await current.lock.release();
                current.knownLost = true;
                current = undefined;
              }
            } else if (holders.length > 0) {
              const batch = step.writes.map((write) => {
                const holder = holders[write.holder % holders.length];
                const id = write.via === 'transact' ? TRANSACTED_ITEMS[0] : FENCED_ITEMS[write.item % FENCED_ITEMS.length];
                const item = writeItem(id, write.op, `t${holder.token}`);
                const before = { isCurrent: holder === current, knownLost: holder.knownLost };
                const promise =
                  write.via === 'transact'
                    ? holder.lock.transact([writeItem(id, 'Update', `t${holder.token}`) as { Update: Update }])
                    : holder.lock.fencedWrite(item);
                return { write, holder, id, item, before, promise };
              });
              const outcomes = await Promise.allSettled(batch.map((b) => b.promise));
              for (const [index, { write, holder, id, item, before }] of batch.entries()) {
                const outcome = outcomes[index];
                const data = items.get(id) as DataItem;
                if (write.via === 'transact') {
                  // Lands exactly while the lock is held (its holder current, and not known lost to it).
                  const held = before.isCurrent && !before.knownLost;
                  if (held) expect(outcome.status).toBe('fulfilled');
                  else {
                    expect(outcome.status).toBe('rejected');
                    expect((outcome as PromiseRejectedResult).reason).toBeInstanceOf(LockLostError);
                    holder.knownLost = true;
                  }
                  continue;
                }
                if (outcome.status === 'fulfilled') {
                  expect(before.knownLost).toBe(false);
                  continue;
                }
                const error: unknown = outcome.reason;
                if (error instanceof LockFencedError) {
                  // Refused by the fence: a newer token did write the item, and DynamoDB's condition says no too.
                  expect(error.newerToken).toBeGreaterThan(holder.token);
                  expect(data.landed).toContain(error.newerToken);
                  const sent = { [Object.keys(item)[0]]: fencedOperation(operationOf(item), holder.token, FENCE).body } as FencedWriteItem;
                  expect(conditionHolds(sent, { fence: error.newerToken, landed: [] })).toBe(false);
                } else {
                  // Refused before any request: the lock was known lost to its holder.
                  expect(error).toBeInstanceOf(LockLostError);
                  expect(before.knownLost || holder.knownLost).toBe(true);
                }
              }
              // A holder's fenced write lands when no newer token has written the item: every
              // holder not known lost, writing an item whose highest token is not above its own, landed.
              for (const [index, { write, holder, id, before }] of batch.entries()) {
                if (write.via !== 'fencedWrite' || before.knownLost) continue;
                const newer = items.get(id)?.landed.some((token) => token > holder.token);
                if (!newer) expect(outcomes[index].status).toBe('fulfilled');
              }
            }
            // No write with a token below the item's highest written token ever landed.
            for (const data of items.values()) {
              for (let i = 1; i < data.landed.length; i++) expect(data.landed[i]).toBeGreaterThanOrEqual(data.landed[i - 1]);
            }
          }
        } finally {
          await Promise.all([...managers, freer].map((manager) => manager.close()));
        }
      }),
      { numRuns: 300 },
    );
  });
});

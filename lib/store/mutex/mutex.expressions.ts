import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { AcquireWrite, Holding } from './mutex-store.protocol';
import type { LockTableKeys } from '../../interfaces/lock-table-keys.interface';
import { isSharedTable } from '../dynamo/table-schema';
import { ATTR } from './mutex.record';

/**
 * The expression parts the DynamoDB mutex store's writes share: the holding condition (also the
 * lock check of fenced transactions), the hold time a release records, and a fire's claim.
 */

/**
 * The condition of a free acquire: nobody holds the item (no token) and nobody waits (`head` =
 * `tail`, or a new item), and `and` (clauses each starting with ` AND `). The read store's group
 * start and the one-transaction acquisition of several keys send it too. Written without
 * parentheses (AND binds before OR, so `and` joins both branches): dynalite parses a parenthesised
 * condition several times slower, on every acquire.
 */
export function freeCondition(and = ''): string {
  return `attribute_not_exists(#token) AND attribute_not_exists(#head)${and} OR attribute_not_exists(#token) AND #head = #tail${and}`;
}

/** The clauses and values of a write taking the lock, and the condition its fire claim adds. */
export interface AcquireParts {
  set: string[];
  remove: string[];
  values: Record<string, AttributeValue>;
  /** `''`, or ` AND ...`: no fire at or after the one claimed (see {@link claimFire}). */
  claim: string;
}

/**
 * What a write taking the lock sets and removes (before its TTL): the holder, record version
 * `rvn`, times `now`. Free: ticket `tail` taken (and served) with the fencing counter as the last
 * release left it; hand-over: the counter raised by one. `DynamoMutexStore.acquire()` and the
 * transaction of several free acquires both build their writes here, so they write the same item.
 */
export function acquireParts(write: AcquireWrite, now: number, rvn: string): AcquireParts {
  const values: Record<string, AttributeValue> = {
    ':token': { S: write.token },
    ':owner': { S: write.owner },
    ':rvn': { S: rvn },
    ':lease': { N: String(write.leaseMs) },
    ':now': { N: String(now) },
    ':one': { N: '1' },
  };
  const set = ['#owner = :owner', '#token = :token', '#rvn = :rvn', '#lease = :lease', '#acquiredAt = :now', '#updatedAt = :now'];
  // A release recorded before another holder took it no longer answers a retry of it as done.
  // A free lock has an empty line: the claim leases of its tickets start anew.
  const remove = ['#live', '#released'];
  const free = write.condition.kind === 'free';
  if (free) remove.push('#claims', '#left', '#readers', '#upgrader', '#upgrading');
  if (write.data === undefined) remove.push('#data');
  else {
    set.push('#data = :data');
    values[':data'] = { S: write.data };
  }
  const claim = claimFire(write.fire, write.owner, set, remove, values);
  if (!free) {
    set.push('#fence = #fence + :one');
    return { set, remove, values, claim };
  }
  // A counter created anew starts from the current time in microseconds, so it still exceeds every
  // token of an item TTL deleted earlier; so do tickets.
  values[':base'] = { N: String(now * 1000) };
  // The counter as the last release (or skip) left it: one above the last holder's, and unused.
  set.push(
    '#fence = if_not_exists(#fence, :base)',
    '#head = if_not_exists(#tail, :base)',
    '#tail = if_not_exists(#tail, :base) + :one',
    // The ticket taken is this writer's: a waiter retrying an enqueue whose answer was lost
    // must not mistake it for its own (it would answer roll calls for a ticket it never got).
    '#tailToken = :token',
  );
  return { set, remove, values, claim };
}

/** A held item: its holder wrote its token, or a ticket is served (a promoted waiter that has not written yet). */
export const HELD = 'attribute_exists(#token) OR #head < #tail';

/**
 * The condition that `holding` still holds the item: its token is there, or no token is and `head`
 * serves its ticket; each branch joined with `and` (clauses each starting with ` AND `). Adds
 * `:token` (and the ticket) to `values`, under `prefix`. Written without parentheses (AND binds
 * before OR): dynalite parses nested ones several times slower (a hand-over took 11 ms there
 * against 2.5 ms, on every release and heartbeat too).
 */
export function holdingCondition(holding: Holding, values: Record<string, AttributeValue>, prefix = ':', and = ''): string {
  const token = prefix === ':' ? ':token' : `${prefix}Token`;
  values[token] = { S: holding.token };
  if (holding.ticket === undefined) return `#token = ${token}${and}`;
  const ticket = prefix === ':' ? ':ticket' : `${prefix}Ticket`;
  values[ticket] = { N: String(holding.ticket) };
  // A ticket whose waiter left the line is never held, whatever write of its waiter lands late.
  return `#token = ${token}${and} OR attribute_not_exists(#token) AND #head = ${ticket} AND NOT contains(#left, ${ticket})${and}`;
}

/** The condition that the item is still at record version `rvn` (none when `undefined`), joined with `AND`. */
export function atVersion(rvn: string | undefined, values: Record<string, AttributeValue>): string {
  if (rvn === undefined) return '';
  values[':seenRvn'] = { S: rvn };
  return ' AND #rvn = :seenRvn';
}

/** `SET` clause recording the hold time, when known. */
export function lastHold(heldMs: number | undefined): string[] {
  return heldMs === undefined ? [] : ['#lastHold = :held'];
}

/**
 * `REMOVE` of the last hold time by a release that knows none (a waiter that gave up, a lease
 * released by id): left in place, it would be read as this release's hold, and counted again.
 */
export function noHold(heldMs: number | undefined): string[] {
  return heldMs === undefined ? ['#lastHold'] : [];
}

/** The value of the hold time a release records, when known. */
export function heldValue(heldMs: number | undefined): Record<string, AttributeValue> {
  return heldMs === undefined ? {} : { ':held': { N: String(Math.max(0, Math.round(heldMs))) } };
}

/**
 * Adds the claim of a scheduled fire (its scheduled time, epoch ms) to a write that takes the lock:
 * the fire and its start are recorded as running under `owner`, and the returned condition (to
 * append with AND) lets the write succeed only when no fire at or after it was claimed. No clock is
 * compared: every instance names a fire by the schedule's time.
 */
export function claimFire(
  fire: number | undefined,
  owner: string,
  set: string[],
  remove: string[],
  values: Record<string, AttributeValue>,
): string {
  if (fire === undefined) return '';
  set.push('#fire = :fire', '#fireOwner = :fireOwner', '#fireStart = :now', '#fireOutcome = :running');
  remove.push('#fireEnd');
  Object.assign(values, { ':fire': { N: String(fire) }, ':fireOwner': { S: owner }, ':running': { S: 'running' } });
  return ' AND (attribute_not_exists(#fire) OR #fire < :fire)';
}

/** What every mutex item has from its first write (a free acquire, or a ticket): told apart from the app's items in a shared table. */
export const LOCK_SHAPE_ATTRIBUTES = [ATTR.rvn, ATTR.fence, ATTR.tail] as const;
export const LOCK_SHAPE = 'attribute_exists(#rvn) AND attribute_exists(#fence) AND attribute_exists(#tail)';

/**
 * The clause that keeps a write able to create an item off the app's items in a shared table:
 * it writes a new item, or a lock item (`''` in the library's own table).
 */
export function onlyLockItem(keys: LockTableKeys): string {
  return isSharedTable(keys) ? ` AND (attribute_not_exists(#key) OR (${LOCK_SHAPE}))` : '';
}

import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { Holding } from './mutex-store.protocol';
import { ATTR } from './mutex.record';

/**
 * The expression parts the DynamoDB mutex store's writes share: the holding condition (also the
 * lock check of fenced transactions), the hold time a release records, and a fire's claim.
 */

/** A held item: its holder wrote its token, or a ticket is served (a promoted waiter that has not written yet). */
export const HELD = 'attribute_exists(#token) OR #head < #tail';

/**
 * The condition that `holding` still holds the item: its token is there, or no token is and `head`
 * serves its ticket. Adds `:token` (and the ticket) to `values`, under `prefix`.
 */
export function holdingCondition(holding: Holding, values: Record<string, AttributeValue>, prefix = ':'): string {
  const token = prefix === ':' ? ':token' : `${prefix}Token`;
  values[token] = { S: holding.token };
  if (holding.ticket === undefined) return `#token = ${token}`;
  const ticket = prefix === ':' ? ':ticket' : `${prefix}Ticket`;
  values[ticket] = { N: String(holding.ticket) };
  // A ticket whose waiter left the line is never held, whatever write of its waiter lands late.
  return `(#token = ${token} OR (attribute_not_exists(#token) AND #head = ${ticket} AND NOT contains(#left, ${ticket})))`;
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

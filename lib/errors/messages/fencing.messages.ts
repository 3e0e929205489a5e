/** Messages of fenced writes: `lock.transact()`, `lock.fencedWrite()` and their memory-store stand-ins. */

import { describe } from './message.format';

export const TRANSACT_LOCK_LOST = (key: string, holder: string | undefined) =>
  `lock.transact() on "${key}" wrote nothing: the lock is no longer held by this holder (${
    holder === undefined ? 'its item is free or gone' : `now held by "${holder}"`
  }).`;

export const TRANSACT_CANCELLED = (key: string, causes: string[]) =>
  `lock.transact() under lock "${key}" wrote nothing: DynamoDB cancelled the transaction for its items (${causes.join('; ')}), while the lock still held.`;

export const TRANSACT_TOO_MANY = (count: number, max: number) =>
  `lock.transact() takes at most ${max} items (DynamoDB's 100 per transaction, minus the lock's own check); got ${count}. Split the writes, or write one item at a time with lock.fencedWrite().`;

export const TRANSACT_UNSUPPORTED = (answer: string) =>
  `lock.transact() needs DynamoDB transactions (TransactWriteItems), which this server does not support: it answered ${answer}, so its limit is 0 items per transaction where DynamoDB's is 100 (dynalite is such a server; DynamoDB Local has transactions). Nothing was written. Use lock.fencedWrite(item) instead, which works on every server: the item carries the lock's fencing token and a write under an older token is refused.`;

export const FENCED_WRITE_ITEM_INVALID = (call: string, item: unknown) =>
  `${call} takes ${call === 'lock.transact()' ? 'items' : 'an item'} of the TransactWriteItems shape (${
    call === 'lock.transact()' ? '{ Put }, { Update }, { Delete } or { ConditionCheck }' : '{ Put }, { Update } or { Delete }'
  }, each with a TableName); got ${describe(item)}.`;

export const FENCED_WRITE_FORM_INVALID = (form: unknown) =>
  `The option form must be 'attribute-value' (the default) or 'document'; got ${describe(form)}.`;

export const FENCE_PLACEHOLDER_CLASH = (placeholder: string) =>
  `lock.fencedWrite() adds the placeholder ${placeholder} for the fencing token; the item already uses it. Rename your placeholder.`;

export const FENCE_ATTRIBUTE_IN_ITEM = (attribute: string) =>
  `lock.fencedWrite() writes the fencing token to the attribute "${attribute}", which the item already sets. Leave it out (the lock writes it), or choose another name with the option fenceAttribute.`;

export const FENCE_ATTRIBUTE_INVALID = (attribute: unknown) =>
  `The option fenceAttribute must be a non-empty attribute name; got ${describe(attribute)}.`;

export const WRITE_FENCED = (key: string, table: string, token: number, newer: number) =>
  `lock.fencedWrite() under lock "${key}" wrote nothing to ${table}: the item carries fencing token ${newer}, newer than this lock's ${token}. A later holder of the lock wrote it, so this holder lost the lock.`;

export const DOCUMENT_FORM_NEEDS_UTIL = () =>
  `The option form: 'document' converts plain values with @aws-sdk/util-dynamodb, which is not installed. Install it (npm install @aws-sdk/util-dynamodb), or pass items in the attribute-value form ({ S: 'text' }, { N: '1' }).`;

export const FENCED_WRITES_UNSUPPORTED = (key: string, what: string) =>
  `lock.transact() and lock.fencedWrite() are not available for lock "${key}": ${what}.`;

export const SEMAPHORE_HAS_NO_FENCE =
  'a semaphore lets several holders in at once, so no single holder can be fenced; use a mutex (acquire() without limit)';

export const STORE_HAS_NO_FENCE = 'the store option has no fenced writes (a custom store); use the DynamoDB table or MemoryLockStore';

export const MEMORY_PUT_KEY_UNKNOWN = (table: string) =>
  `MemoryLockStore cannot tell the key of a Put to "${table}", so it cannot keep that item's fencing token: pass new MemoryLockStore({ tableKeys: { '${table}': ['<partition key>', '<sort key, if any>'] } }).`;

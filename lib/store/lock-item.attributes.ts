import { TABLE_ATTR } from './dynamo/table-schema';
import { ATTR } from './mutex/mutex.record';
import { SEM_ATTR } from './semaphore/semaphore.record';

/**
 * Every attribute a lock or semaphore item writes besides its keys, sorted: a table's key
 * attribute must have another name, or lock items would write their own data into their key.
 */
export const LOCK_ITEM_ATTRIBUTES: readonly string[] = [...new Set<string>([...Object.values(ATTR), ...Object.values(SEM_ATTR)])]
  .filter((name) => name !== TABLE_ATTR.key)
  .sort();

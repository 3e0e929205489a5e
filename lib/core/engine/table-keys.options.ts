import type { LockEntryPoint } from '../../errors/entry-point';
import { LockConfigurationError } from '../../errors/lock.errors';
import {
  optionsScope,
  SORT_KEY_INVALID,
  SORT_KEY_SAME_AS_PARTITION_KEY,
  SORT_KEY_VALUE_INVALID,
  TABLE_KEY_NAME_CLASH,
  TABLE_KEY_NAME_INVALID,
} from '../../errors/lock.messages';
import type { LockSortKey, LockTableKeys } from '../../interfaces/lock-table-keys.interface';
import { unknownOptionMessage } from '../../utils/closest-name';
import { TABLE_ATTR } from '../../store/dynamo/table-schema';
import { LOCK_ITEM_ATTRIBUTES } from '../../store/lock-item.attributes';

/** DynamoDB's limit on the name of a key attribute, in UTF-8 bytes. */
const MAX_KEY_NAME_BYTES = 255;
/** DynamoDB's limit on a sort key value, in UTF-8 bytes. */
const MAX_SORT_VALUE_BYTES = 1024;

/**
 * The key attributes of the lock table, from the options `partitionKey` and `sortKey`: the
 * library's own table (`key`, no sort key) when both are absent.
 * @throws LockConfigurationError naming the option: a name that is empty, too long, the name of an
 *   attribute lock items write, or a sort key named as the partition key; a sort key that is not
 *   `{ name, value }` or whose value is empty or too long.
 */
export function resolveTableKeys(partitionKey: unknown, sortKey: unknown, entry: LockEntryPoint = 'LockManager'): LockTableKeys {
  const partition = partitionKey === undefined ? TABLE_ATTR.key : keyName('partitionKey', partitionKey, entry);
  if (sortKey === undefined) return { partitionKey: partition };
  if (sortKey === null || typeof sortKey !== 'object' || Array.isArray(sortKey))
    throw new LockConfigurationError(SORT_KEY_INVALID(sortKey, entry));
  const unknown = unknownOptionMessage(sortKey, ['name', 'value'], `${optionsScope(entry)} option "sortKey"`);
  if (unknown) throw new LockConfigurationError(unknown);
  const { name, value } = sortKey as { name?: unknown; value?: unknown };
  const sortName = keyName('sortKey.name', name, entry);
  if (sortName === partition) throw new LockConfigurationError(SORT_KEY_SAME_AS_PARTITION_KEY(sortName, entry));
  if (!isStringOf(value, MAX_SORT_VALUE_BYTES))
    throw new LockConfigurationError(SORT_KEY_VALUE_INVALID(value, MAX_SORT_VALUE_BYTES, entry));
  return { partitionKey: partition, sortKey: { name: sortName, value } };
}

/** A key attribute's name, checked: a string DynamoDB accepts, and no attribute of lock items. */
function keyName(option: 'partitionKey' | 'sortKey.name', value: unknown, entry: LockEntryPoint): string {
  if (!isStringOf(value, MAX_KEY_NAME_BYTES))
    throw new LockConfigurationError(TABLE_KEY_NAME_INVALID(option, value, MAX_KEY_NAME_BYTES, entry));
  if (LOCK_ITEM_ATTRIBUTES.includes(value))
    throw new LockConfigurationError(TABLE_KEY_NAME_CLASH(option, value, LOCK_ITEM_ATTRIBUTES, entry));
  return value;
}

/** A non-empty, well-formed string of at most `maxBytes` UTF-8 bytes. */
function isStringOf(value: unknown, maxBytes: number): value is string {
  return typeof value === 'string' && value.length > 0 && value.isWellFormed() && Buffer.byteLength(value, 'utf8') <= maxBytes;
}

/** The key attributes of resolved options, as the stores and the table check take them. */
export function tableKeysOf(options: { partitionKey: string; sortKey: LockSortKey | undefined }): LockTableKeys {
  return options.sortKey ? { partitionKey: options.partitionKey, sortKey: options.sortKey } : { partitionKey: options.partitionKey };
}

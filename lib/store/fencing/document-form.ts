/**
 * The document form of fenced writes (plain values, as `@aws-sdk/lib-dynamodb` takes them),
 * converted with `@aws-sdk/util-dynamodb`: an optional peer, loaded on first use.
 */
import type { AttributeValue, TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { LockConfigurationError, LockValidationError } from '../../errors/lock.errors';
import { DOCUMENT_FORM_NEEDS_UTIL, FENCED_WRITE_FORM_INVALID } from '../../errors/lock.messages';
import type { AnyFencedWriteItem, AnyTransactItem, FencedWriteItem, ItemForm } from '../../interfaces/fenced-write.interface';
import { loadOptionalPeer } from '../../utils/optional-peer';

/** The two functions of `@aws-sdk/util-dynamodb` used here. */
interface UtilDynamodb {
  marshall(value: Record<string, unknown>): Record<string, AttributeValue>;
  unmarshall(item: Record<string, AttributeValue>): Record<string, unknown>;
}

let loaded: UtilDynamodb | undefined;

/** `@aws-sdk/util-dynamodb`, loaded once. @throws LockConfigurationError when it is not installed. */
export async function utilDynamodb(): Promise<UtilDynamodb> {
  loaded ??= await loadOptionalPeer<UtilDynamodb>('@aws-sdk/util-dynamodb');
  if (!loaded) throw new LockConfigurationError(DOCUMENT_FORM_NEEDS_UTIL());
  return loaded;
}

/** Checks the `form` option. */
export function checkForm(form: unknown): ItemForm {
  if (form === undefined) return 'attribute-value';
  if (form === 'attribute-value' || form === 'document') return form;
  throw new LockValidationError(FENCED_WRITE_FORM_INVALID(form));
}

/** The fields of an operation body that hold values. */
const VALUE_FIELDS = ['Item', 'Key', 'ExpressionAttributeValues'] as const;

/** One operation body with its values marshalled. */
function marshalledBody(util: UtilDynamodb, body: object): object {
  const copy: Record<string, unknown> = { ...body };
  for (const field of VALUE_FIELDS) {
    const value = copy[field];
    if (typeof value === 'object' && value !== null) copy[field] = util.marshall(value as Record<string, unknown>);
  }
  return copy;
}

/** One item (`{ Put: ... }`...) with its values marshalled; anything not an object is left for the shape check. */
function marshalledItem(util: UtilDynamodb, item: object): object {
  if (typeof item !== 'object' || item === null) return item;
  const entries: [string, unknown][] = Object.entries(item);
  return Object.fromEntries(
    entries.map(([kind, body]) => [kind, typeof body === 'object' && body !== null ? marshalledBody(util, body) : body]),
  );
}

/** The items of a transaction in the attribute-value form. */
export async function toAttributeValueItems(items: readonly AnyTransactItem[], form: ItemForm): Promise<TransactWriteItem[]> {
  if (form === 'attribute-value') return [...(items as readonly TransactWriteItem[])];
  const util = await utilDynamodb();
  return items.map((item) => marshalledItem(util, item) as TransactWriteItem);
}

/** A fenced write in the attribute-value form. */
export async function toAttributeValueWrite(item: AnyFencedWriteItem, form: ItemForm): Promise<FencedWriteItem> {
  if (form === 'attribute-value') return item as FencedWriteItem;
  return marshalledItem(await utilDynamodb(), item) as FencedWriteItem;
}

/** An item read back (returned attributes, a cancelled item), in the form of the call. */
export async function inForm(
  item: Record<string, AttributeValue> | undefined,
  form: ItemForm,
): Promise<Record<string, AttributeValue> | Record<string, unknown> | undefined> {
  if (item === undefined || form === 'attribute-value') return item;
  return (await utilDynamodb()).unmarshall(item);
}

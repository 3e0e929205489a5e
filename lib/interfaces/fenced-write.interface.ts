import type {
  AttributeValue,
  ConditionCheck,
  ConsumedCapacity,
  Delete,
  Put,
  ReturnConsumedCapacity,
  ReturnValue,
  TransactWriteItem,
  Update,
} from '@aws-sdk/client-dynamodb';

/** An operation body with plain values (`@aws-sdk/lib-dynamodb`'s document form) in place of attribute values. */
export type DocumentForm<T> = Omit<T, 'Item' | 'Key' | 'ExpressionAttributeValues'> &
  ('Item' extends keyof T ? { Item: Record<string, unknown> } : unknown) &
  ('Key' extends keyof T ? { Key: Record<string, unknown> } : unknown) & { ExpressionAttributeValues?: Record<string, unknown> };

/** A `TransactWriteItems` item in the document form: plain values, as `@aws-sdk/lib-dynamodb` takes them. */
export type DocumentTransactItem =
  | { Put: DocumentForm<Put> }
  | { Update: DocumentForm<Update> }
  | { Delete: DocumentForm<Delete> }
  | { ConditionCheck: DocumentForm<ConditionCheck> };

/** One write of `lock.fencedWrite()`, in the attribute-value form: a `TransactWriteItems` item but `ConditionCheck`. */
export type FencedWriteItem = { Put: Put } | { Update: Update } | { Delete: Delete };

/** One write of `lock.fencedWrite()` in the document form (plain values). */
export type DocumentFencedWriteItem = { Put: DocumentForm<Put> } | { Update: DocumentForm<Update> } | { Delete: DocumentForm<Delete> };

/** Items in either form, as the engine receives them. */
export type AnyTransactItem = TransactWriteItem | DocumentTransactItem;
/** A fenced write in either form, as the engine receives it. */
export type AnyFencedWriteItem = FencedWriteItem | DocumentFencedWriteItem;

/** How items are written: DynamoDB's attribute values (`{ S: 'a' }`, the default) or plain values (`'document'`). */
export type ItemForm = 'attribute-value' | 'document';

/** Options of `lock.transact()`. */
export interface TransactOptions {
  /** `'document'`: items hold plain values, converted with `@aws-sdk/util-dynamodb` (install it). Default `'attribute-value'`. */
  form?: ItemForm;
  /** Ask DynamoDB for the capacity consumed (`TOTAL` or `INDEXES`). */
  returnConsumedCapacity?: ReturnConsumedCapacity;
  /** DynamoDB's idempotency token: a retry with the same token within 10 minutes is not applied twice. */
  clientRequestToken?: string;
}

/** What `lock.transact()` resolves to once every item was written. */
export interface TransactResult {
  /** Capacity consumed per table, when asked for (DynamoDB bills a transactional write twice). */
  consumedCapacity?: ConsumedCapacity[];
}

/** Options of `lock.fencedWrite()`. */
export interface FencedWriteOptions {
  /** `'document'`: the item holds plain values, converted with `@aws-sdk/util-dynamodb` (install it). Default `'attribute-value'`. */
  form?: ItemForm;
  /** The attribute the fencing token is written to and checked in (default `lockFence`). */
  fenceAttribute?: string;
  /** What the write returns in `attributes` (DynamoDB's `ReturnValues`). */
  returnValues?: ReturnValue;
  /** Ask DynamoDB for the capacity consumed. */
  returnConsumedCapacity?: ReturnConsumedCapacity;
}

/** What `lock.fencedWrite()` resolves to. */
export interface FencedWriteResult {
  /** The attributes asked for with `returnValues`, in the form of the call. */
  attributes?: Record<string, AttributeValue> | Record<string, unknown>;
  /** Capacity consumed, when asked for. */
  consumedCapacity?: ConsumedCapacity;
}

/** The attribute `lock.fencedWrite()` stamps with the fencing token unless told another. */
export const DEFAULT_FENCE_ATTRIBUTE = 'lockFence';

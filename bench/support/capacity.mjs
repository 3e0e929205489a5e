/**
 * What DynamoDB bills for one request, from item sizes (on-demand write/read request units and
 * provisioned WCU/RCU are counted the same way). Used by the counting proxy for the tables it
 * meters, next to the figure the server reports (`ReturnConsumedCapacity: TOTAL`), and instead
 * of it where the server reports none (a failed conditional write never carries one).
 *
 * Item size, after DynamoDB's documented rules (approximate where they are):
 * - each attribute: the UTF-8 bytes of its name + the size of its value;
 * - String: UTF-8 bytes; Binary: raw bytes; Boolean, Null: 1 byte;
 * - Number: 1 byte per two significant digits (leading and trailing zeros dropped) + 1;
 * - List, Map: 3 bytes + 1 byte per element + the elements (a Map element also its name's bytes);
 * - String / Number / Binary sets: the sum of their elements.
 *
 * Units: a write = ceil(size / 1 KB), at least 1, of the larger of the item before and after
 * (a failed conditional write: of the item as it is); a strongly consistent read = ceil(size /
 * 4 KB), at least 1 (a missing item too), an eventually consistent read half of that.
 */

const utf8 = (s) => Buffer.byteLength(String(s), 'utf8');

/** Size of a number as DynamoDB stores it: significant digits / 2, rounded up, + 1. */
export function numberBytes(text) {
  const mantissa = String(text)
    .trim()
    .replace(/^[+-]/, '')
    .replace(/[eE].*$/, '');
  const digits = mantissa.replace('.', '').replace(/^0+/, '').replace(/0+$/, '');
  return Math.ceil(Math.max(1, digits.length) / 2) + 1;
}

/** Size of one attribute value (`{ S: ... }`, `{ N: ... }`, `{ L: [...] }`, ...). */
export function valueBytes(value) {
  if (!value || typeof value !== 'object') return 0;
  if ('S' in value) return utf8(value.S);
  if ('N' in value) return numberBytes(value.N);
  if ('B' in value) return Buffer.from(String(value.B), 'base64').length;
  if ('BOOL' in value || 'NULL' in value) return 1;
  if ('SS' in value) return value.SS.reduce((a, s) => a + utf8(s), 0);
  if ('NS' in value) return value.NS.reduce((a, n) => a + numberBytes(n), 0);
  if ('BS' in value) return value.BS.reduce((a, b) => a + Buffer.from(String(b), 'base64').length, 0);
  if ('L' in value) return 3 + value.L.reduce((a, v) => a + 1 + valueBytes(v), 0);
  if ('M' in value) return 3 + Object.entries(value.M).reduce((a, [name, v]) => a + 1 + utf8(name) + valueBytes(v), 0);
  return 0;
}

/** Size of an item (`{ name: AttributeValue }`) in bytes; 0 for none. */
export function itemBytes(item) {
  if (!item) return 0;
  return Object.entries(item).reduce((a, [name, value]) => a + utf8(name) + valueBytes(value), 0);
}

/** Write units for a write that changes an item of `oldBytes` into one of `newBytes`. */
export const writeUnits = (oldBytes, newBytes = 0) => Math.max(1, Math.ceil(Math.max(oldBytes, newBytes) / 1024));

/** Read units for reading an item of `bytes` (0: missing). */
export const readUnits = (bytes, strong) => Math.max(1, Math.ceil(bytes / 4096)) * (strong ? 1 : 0.5);

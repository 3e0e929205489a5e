/** Messages for @WithLock key templates: malformed templates and values that make no key. */

import { describe, visible, truncate } from './message.format';

export const TEMPLATE_NOT_WELL_FORMED = (where: string, template: string) =>
  `@WithLock on ${where}: the key template "${template.toWellFormed()}" contains a lone UTF-16 surrogate. Use well-formed text.`;

export const TEMPLATE_VALUE_INVALID_DATE = (where: string, template: string, placeholder: string) =>
  `@WithLock('${template}') on ${where}: ${placeholder} is an invalid Date in this call, so no lock key can be built.`;

const TEMPLATE_HELP = `Placeholders are <N> for the N-th argument (from 0) or <N.property.path>, e.g. 'invoice-<0>' or 'order-<1.customer.id>'.`;

export const TEMPLATE_EMPTY = (where: string) => `@WithLock on ${where}: the key template must be a non-empty string. ${TEMPLATE_HELP}`;

export const TEMPLATE_MALFORMED = (where: string, template: string, reason: string) =>
  `@WithLock('${template}') on ${where}: malformed template: ${reason}. ${TEMPLATE_HELP}`;

export const TEMPLATE_ARGUMENT_MISSING = (where: string, template: string, placeholder: string, count: number) =>
  `@WithLock('${template}') on ${where}: ${placeholder} names an argument the method does not have (it declares ${count} parameter${count === 1 ? '' : 's'}, so ${availablePlaceholders(count)}).`;

function availablePlaceholders(count: number): string {
  if (count === 0) return 'no <N> can be used';
  if (count === 1) return 'only <0> is available';
  return `<0> to <${count - 1}> are available`;
}

export const TEMPLATE_ADJACENT_PLACEHOLDERS = (where: string, template: string) =>
  `@WithLock('${template}') on ${where}: placeholders must be separated by fixed text (for example '<0>:<1>'), or keys of different arguments could collide.`;

export const TEMPLATE_PERCENT_SEPARATOR = (where: string, template: string) =>
  `@WithLock('${template}') on ${where}: '%' cannot be used between placeholders; it marks escaped characters in keys. Use another separator such as ':' or '/'.`;

export const TEMPLATE_VALUE_MISSING = (where: string, template: string, placeholder: string, value: unknown) =>
  `@WithLock('${template}') on ${where}: ${placeholder} is ${value === null ? 'null' : 'undefined'} in this call, so no lock key can be built. Pass a value, or point the placeholder at a property that is always set.`;

export const TEMPLATE_VALUE_OBJECT = (where: string, template: string, placeholder: string) =>
  `@WithLock('${template}') on ${where}: ${placeholder} is an object; name one of its properties, e.g. ${placeholder.replace('>', '.id>')}.`;

/** `keyPrefix`: the module's; `suffixBytes`: a semaphore's stored-key suffix (`limit` set), else 0. */
export const TEMPLATE_TOO_LONG = (where: string, template: string, keyPrefix: string, suffixBytes: number, bytes: number, max: number) =>
  `@WithLock('${truncate(template)}') on ${where}: every key it makes is at least ${bytes} bytes in UTF-8${keyPrefix ? ` with keyPrefix ${describe(keyPrefix)}` : ''}${suffixBytes ? `${keyPrefix ? ' and' : ' with'} the ${suffixBytes}-byte suffix of a semaphore's key (limit set)` : ''}; DynamoDB allows at most ${max} bytes in a partition key. Use shorter fixed text${keyPrefix ? ' or a shorter keyPrefix' : ''}.`;

export const TEMPLATE_VALUE_EMPTY = (where: string, template: string, placeholder: string) =>
  `@WithLock('${template}') on ${where}: ${placeholder} is an empty string in this call, so the key would not identify anything.`;

export const TEMPLATE_VALUE_BLANK = (where: string, template: string, placeholder: string, value: string) =>
  `@WithLock('${template}') on ${where}: ${placeholder} is only whitespace (${visible(value)}) in this call, so the key would not identify anything.`;

export const TEMPLATE_BLANK = (where: string, template: string) =>
  `@WithLock on ${where}: the key template ${visible(template)} is only whitespace, which no lock key may be. ${TEMPLATE_HELP}`;

/**
 * `found`: another templating syntax's placeholders; `fixed`: the template rewritten with `<N>`
 * placeholders, when each names an argument by position; `constantKey`: the method has arguments
 * but the template uses none.
 */
export const TEMPLATE_FOREIGN_PLACEHOLDER = (
  where: string,
  template: string,
  found: readonly string[],
  fixed: string | undefined,
  constantKey: boolean,
) =>
  `@WithLock('${template}') on ${where}: ${found.map((f) => `"${f}"`).join(', ')} ${found.length === 1 ? 'is not a placeholder' : 'are not placeholders'} here: the key would contain ${found.length === 1 ? 'it' : 'them'} literally${constantKey ? ', so every call would wait for the same lock' : ''}. ${fixed ? `Write '${fixed}'. ` : 'Name the argument by its position instead. '}${TEMPLATE_HELP} Braces around a number or a name, and %s, %d or %i, are not allowed as literal text in a template; use other characters, or call LockService.withLock() with the key.`;

import { LockConfigurationError, LockKeyError, LockValidationError } from '../errors/lock.errors';
import {
  TEMPLATE_ADJACENT_PLACEHOLDERS,
  TEMPLATE_ARGUMENT_MISSING,
  TEMPLATE_BLANK,
  TEMPLATE_EMPTY,
  TEMPLATE_FOREIGN_PLACEHOLDER,
  TEMPLATE_MALFORMED,
  TEMPLATE_NOT_WELL_FORMED,
  TEMPLATE_PERCENT_SEPARATOR,
  TEMPLATE_TOO_LONG,
  TEMPLATE_VALUE_BLANK,
  TEMPLATE_VALUE_EMPTY,
  TEMPLATE_VALUE_INVALID_DATE,
  TEMPLATE_VALUE_MISSING,
  TEMPLATE_VALUE_OBJECT,
} from '../errors/lock.messages';
import { MAX_KEY_BYTES } from '../utils/lock-key.validation';

type Part = { text: string } | { arg: number; path: string[]; source: string };

const PLACEHOLDER = /<([^<>]*)>/g;
const PLACEHOLDER_BODY = /^(\d+)((?:\.[A-Za-z_$][\w$]*)*)$/;
/**
 * Placeholders of other templating syntaxes, which this one would keep as literal text: a number,
 * a name or a property path in braces (`{0}`, `{id}`, `{0.customer.id}`), also as `${...}`,
 * `#{...}` or `{{...}}`, empty braces `{}`, and printf's `%s`, `%d`, `%i`.
 */
const FOREIGN_PLACEHOLDER =
  /[$#]?\{\{?\s*(?:(?:(?<index>\d+)|(?<name>[A-Za-z_$][\w$]*))(?<path>(?:\.[A-Za-z_$][\w$]*)*))?\s*\}\}?|%[sdi](?![A-Za-z0-9])/g;

/**
 * A parsed `@WithLock` key template such as `'invoice-<0>'` or `'order-<1.customer.id>'`.
 *
 * Rendering is unambiguous: with one placeholder the value is inserted as is (the fixed text
 * around it cannot be confused with it); with several, every character of a value that also
 * occurs in the text between placeholders, and `%`, is percent-encoded (`-` → `%2D`), so
 * `('a-b', 'c')` and `('a', 'b-c')` give different keys for `'<0>-<1>'`.
 */
export class LockKeyTemplate {
  private readonly parts: Part[];
  private readonly escaped: Set<string>;

  /**
   * The fewest UTF-8 bytes of a key made from this template: its fixed text, and a byte for each
   * placeholder (key prefix not included).
   */
  readonly minBytes: number;

  /**
   * @param where `Class.method`, for error messages.
   * @param parameterCount how many arguments the method declares; placeholders beyond it are rejected
   *   (not checked when unknown).
   * @throws LockValidationError for a malformed or blank template, one naming a missing argument, or
   *   one written in another templating syntax (`'invoice-{0}'`, `'invoice-${id}'`, `'invoice-%s'`),
   *   whatever the method's parameters: such text is never a placeholder, and never a useful literal;
   *   and for fixed text that leaves no room for a key.
   */
  constructor(
    readonly template: string,
    private readonly where: string,
    parameterCount?: number,
  ) {
    if (typeof template !== 'string' || template.length === 0) throw new LockValidationError(TEMPLATE_EMPTY(where));
    if (!template.isWellFormed()) throw new LockValidationError(TEMPLATE_NOT_WELL_FORMED(where, template));
    if (template.trim().length === 0) throw new LockValidationError(TEMPLATE_BLANK(where, template));
    this.parts = parse(template, where);
    const placeholders = this.parts.filter((p) => 'arg' in p);
    rejectForeignPlaceholders(this.parts, template, where, parameterCount);
    for (const p of placeholders) {
      if (parameterCount !== undefined && p.arg >= parameterCount)
        throw new LockValidationError(TEMPLATE_ARGUMENT_MISSING(where, template, p.source, parameterCount));
    }
    this.minBytes = this.parts.reduce((bytes, part) => bytes + ('text' in part ? Buffer.byteLength(part.text, 'utf8') : 1), 0);
    if (this.minBytes > MAX_KEY_BYTES)
      throw new LockValidationError(TEMPLATE_TOO_LONG(where, template, '', 0, this.minBytes, MAX_KEY_BYTES));
    const separators: string[] = [];
    this.parts.forEach((part, i) => {
      const prev = this.parts[i - 1];
      if ('arg' in part && prev && 'arg' in prev) throw new LockValidationError(TEMPLATE_ADJACENT_PLACEHOLDERS(where, template));
      if ('text' in part && i > 0 && i < this.parts.length - 1) separators.push(part.text);
    });
    if (placeholders.length > 1 && separators.some((s) => s.includes('%'))) {
      throw new LockValidationError(TEMPLATE_PERCENT_SEPARATOR(where, template));
    }
    this.escaped = placeholders.length > 1 ? new Set(['%', ...separators.join('')]) : new Set();
  }

  /**
   * Checks the template against the key prefix its keys are stored with, and the suffix of a
   * semaphore's stored key (`suffixBytes`).
   * @throws LockConfigurationError when every key from it would be too long with them.
   */
  checkPrefix(keyPrefix: string, suffixBytes = 0): void {
    const bytes = Buffer.byteLength(keyPrefix, 'utf8') + this.minBytes + suffixBytes;
    if (bytes > MAX_KEY_BYTES) {
      throw new LockConfigurationError(TEMPLATE_TOO_LONG(this.where, this.template, keyPrefix, suffixBytes, bytes, MAX_KEY_BYTES));
    }
  }

  /** Whether the template has placeholders (a fixed key otherwise). */
  get isStatic(): boolean {
    return this.parts.every((p) => 'text' in p);
  }

  /**
   * The key for one call's arguments.
   * @throws LockKeyError when a value is missing, empty, only whitespace, an invalid Date or an object
   *   without a property path.
   */
  render(args: readonly unknown[]): string {
    return this.parts.map((part) => ('text' in part ? part.text : this.escape(this.valueOf(part, args)))).join('');
  }

  private valueOf(part: { arg: number; path: string[]; source: string }, args: readonly unknown[]): string {
    let value: unknown = args[part.arg];
    for (const name of part.path) {
      if (value === null || value === undefined) break;
      value = (value as Record<string, unknown>)[name];
    }
    if (value === null || value === undefined) {
      throw new LockKeyError(TEMPLATE_VALUE_MISSING(this.where, this.template, part.source, value), 'missing');
    }
    let text: string;
    if (value instanceof Date) {
      if (Number.isNaN(value.getTime()))
        throw new LockKeyError(TEMPLATE_VALUE_INVALID_DATE(this.where, this.template, part.source), 'invalid-date');
      text = value.toISOString();
    } else if (typeof value === 'string' || typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') {
      text = String(value);
    } else throw new LockKeyError(TEMPLATE_VALUE_OBJECT(this.where, this.template, part.source), 'object');
    if (text.length === 0) throw new LockKeyError(TEMPLATE_VALUE_EMPTY(this.where, this.template, part.source), 'empty');
    // As `toStoredKey` rejects a blank key: a blank value is an unset field, not an identity.
    if (text.trim().length === 0) throw new LockKeyError(TEMPLATE_VALUE_BLANK(this.where, this.template, part.source, text), 'blank');
    return text;
  }

  private escape(text: string): string {
    if (this.escaped.size === 0) return text;
    let out = '';
    for (const ch of text) out += this.escaped.has(ch) ? percentEncode(ch) : ch;
    return out;
  }
}

function parse(template: string, where: string): Part[] {
  const parts: Part[] = [];
  let last = 0;
  for (const match of template.matchAll(PLACEHOLDER)) {
    const body = PLACEHOLDER_BODY.exec(match[1].trim());
    if (!body) throw new LockValidationError(TEMPLATE_MALFORMED(where, template, `"${match[0]}" is not <N> or <N.property.path>`));
    if (match.index > last) parts.push({ text: template.slice(last, match.index) });
    parts.push({ arg: Number(body[1]), path: body[2] ? body[2].slice(1).split('.') : [], source: match[0] });
    last = match.index + match[0].length;
  }
  if (last < template.length) parts.push({ text: template.slice(last) });
  for (const part of parts) {
    if ('text' in part && /[<>]/.test(part.text)) {
      throw new LockValidationError(TEMPLATE_MALFORMED(where, template, 'unbalanced "<" or ">"'));
    }
  }
  return parts;
}

/**
 * Rejects placeholders of another templating syntax in the fixed text. With parameters and no `<N>`,
 * they would make every call share one key; mixed with `<N>`, or on a method without parameters,
 * they are as surely a mistake. The error suggests the template with `<N>` where it can.
 */
function rejectForeignPlaceholders(parts: readonly Part[], template: string, where: string, parameterCount: number | undefined): void {
  const found = parts.flatMap((part) => ('text' in part ? [...part.text.matchAll(FOREIGN_PLACEHOLDER)] : []));
  if (found.length === 0) return;
  // `{}` and `%s` take the arguments in order, after those the template names already.
  let next = Math.max(-1, ...parts.map((part) => ('arg' in part ? part.arg : -1))) + 1;
  let positional = true;
  const rewritten = template.replace(FOREIGN_PLACEHOLDER, (source: string, ...rest: unknown[]) => {
    const groups = rest.at(-1) as { index?: string; name?: string; path?: string };
    if (groups.index !== undefined) return `<${groups.index}${groups.path ?? ''}>`;
    if (groups.name === undefined) return `<${next++}>`; // `{}`, `%s`
    positional = false; // a name: its position is not known here
    return source;
  });
  let fixed: string | undefined;
  try {
    if (positional) fixed = new LockKeyTemplate(rewritten, where, parameterCount).template;
  } catch {
    // The rewrite is not valid either (adjacent placeholders, a missing argument): no suggestion.
  }
  const constantKey = parameterCount !== 0 && parts.every((part) => 'text' in part);
  const sources = found.map((match) => match[0]);
  throw new LockValidationError(TEMPLATE_FOREIGN_PLACEHOLDER(where, template, sources, fixed, constantKey));
}

function percentEncode(ch: string): string {
  return [...Buffer.from(ch, 'utf8')].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join('');
}

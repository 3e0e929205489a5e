import { LockValidationError } from '../errors/lock.errors';
import {
  TEMPLATE_ADJACENT_PLACEHOLDERS,
  TEMPLATE_ARGUMENT_MISSING,
  TEMPLATE_EMPTY,
  TEMPLATE_MALFORMED,
  TEMPLATE_NOT_WELL_FORMED,
  TEMPLATE_PERCENT_SEPARATOR,
  TEMPLATE_VALUE_EMPTY,
  TEMPLATE_VALUE_INVALID_DATE,
  TEMPLATE_VALUE_MISSING,
  TEMPLATE_VALUE_OBJECT,
} from '../errors/lock.messages';

type Part = { text: string } | { arg: number; path: string[]; source: string };

const PLACEHOLDER = /<([^<>]*)>/g;
const PLACEHOLDER_BODY = /^(\d+)((?:\.[A-Za-z_$][\w$]*)*)$/;

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
   * @param where `Class.method`, for error messages.
   * @param parameterCount how many arguments the method declares; placeholders beyond it are rejected
   *   (not checked when unknown).
   * @throws LockValidationError for a malformed template or one naming a missing argument.
   */
  constructor(
    readonly template: string,
    private readonly where: string,
    parameterCount?: number,
  ) {
    if (typeof template !== 'string' || template.length === 0) throw new LockValidationError(TEMPLATE_EMPTY(where));
    if (!template.isWellFormed()) throw new LockValidationError(TEMPLATE_NOT_WELL_FORMED(where, template));
    this.parts = parse(template, where);
    const placeholders = this.parts.filter((p) => 'arg' in p);
    for (const p of placeholders) {
      if (parameterCount !== undefined && p.arg >= parameterCount)
        throw new LockValidationError(TEMPLATE_ARGUMENT_MISSING(where, template, p.source, parameterCount));
    }
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

  /** Whether the template has placeholders (a fixed key otherwise). */
  get isStatic(): boolean {
    return this.parts.every((p) => 'text' in p);
  }

  /**
   * The key for one call's arguments.
   * @throws LockValidationError when a value is missing, empty or an object without a property path.
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
      throw new LockValidationError(TEMPLATE_VALUE_MISSING(this.where, this.template, part.source, value));
    }
    let text: string;
    if (value instanceof Date) {
      if (Number.isNaN(value.getTime())) throw new LockValidationError(TEMPLATE_VALUE_INVALID_DATE(this.where, this.template, part.source));
      text = value.toISOString();
    } else if (typeof value === 'string' || typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') {
      text = String(value);
    } else throw new LockValidationError(TEMPLATE_VALUE_OBJECT(this.where, this.template, part.source));
    if (text.length === 0) throw new LockValidationError(TEMPLATE_VALUE_EMPTY(this.where, this.template, part.source));
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

function percentEncode(ch: string): string {
  return [...Buffer.from(ch, 'utf8')].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join('');
}

/** Shared formatting of values and errors inside messages; not messages themselves. */

import { isBrokenConnection } from '../lock.errors';

/** Renders a value for an error message without risking a throw. */
export function describe(value: unknown): string {
  if (typeof value === 'string') return `"${truncate(value)}"`;
  if (typeof value === 'bigint') return `${value}n`;
  if (value === null || value === undefined || typeof value !== 'object') return String(value);
  try {
    return truncate(JSON.stringify(value));
  } catch {
    return Object.prototype.toString.call(value);
  }
}

/** A string with its invisible characters escaped (`"\t"`, `"\u00a0"`), for whitespace-only values. */
export function visible(text: string): string {
  return JSON.stringify(truncate(text)).replace(/[^\x20-\x7e]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

export function truncate(text: string, max = 120): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

export function errorText(error: unknown): string {
  if (!(error instanceof Error)) return describe(error);
  const code = (error as { code?: unknown }).code;
  const name = shownErrorName(error);
  const text = error.message ? (name ? `${name}: ${error.message}` : error.message) : error.name;
  return typeof code === 'string' && !text.includes(code) ? `${text} (${code})` : text;
}

/** The name an error is shown with: none for a broken connection the SDK names `TimeoutError` (its code tells what it is). */
export function shownErrorName(error: Error): string {
  return isBrokenConnection(error) ? '' : error.name;
}

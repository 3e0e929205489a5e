import { describe, expect, it } from '@jest/globals';
import { LockKeyTemplate, LockValidationError } from '../../lib';

const where = 'InvoiceService.pay';

function errorOf(fn: () => unknown): Error {
  try {
    fn();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a throw');
}

describe('LockKeyTemplate', () => {
  it('renders literal text, arguments and property paths', () => {
    expect(new LockKeyTemplate('nightly-report', where, 0).render([])).toBe('nightly-report');
    expect(new LockKeyTemplate('invoice-<0>', where, 1).render(['42'])).toBe('invoice-42');
    expect(new LockKeyTemplate('order-<1.customer.id>', where, 2).render([null, { customer: { id: 7 } }])).toBe('order-7');
    expect(new LockKeyTemplate('at-<0>', where, 1).render([new Date('2026-01-02T03:04:05Z')])).toBe('at-2026-01-02T03:04:05.000Z');
    expect(new LockKeyTemplate('n-<0>', where, 1).render([10n])).toBe('n-10');
  });

  it('keeps a single value verbatim, separators and all', () => {
    expect(new LockKeyTemplate('invoice-<0>', where, 1).render(['a-b%c'])).toBe('invoice-a-b%c');
  });

  it('escapes separators inside values when several placeholders could collide', () => {
    const template = new LockKeyTemplate('<0>-<1>', where, 2);
    const a = template.render(['a-b', 'c']);
    const b = template.render(['a', 'b-c']);
    expect(a).toBe('a%2Db-c');
    expect(b).toBe('a-b%2Dc');
    expect(a).not.toBe(b);
    expect(template.render(['50%', 'x'])).toBe('50%25-x');
  });

  it.each([
    ['', /must be a non-empty string/],
    ['invoice-<x>', /malformed template: "<x>" is not <N>/],
    ['invoice-<0', /unbalanced/],
    ['invoice-0>', /unbalanced/],
    ['invoice-<0.>', /malformed/],
    ['<0><1>', /separated by fixed text/],
    ['<0>%<1>', /'%' cannot be used between placeholders/],
    ['<0>\uD800<1>', /contains a lone UTF-16 surrogate/],
  ])('rejects template %p at definition', (template, message) => {
    const error = errorOf(() => new LockKeyTemplate(template, where, 2));
    expect(error).toBeInstanceOf(LockValidationError);
    expect(error.message).toMatch(message);
    expect(error.message).toContain(where);
  });

  it('rejects a placeholder naming an argument the method does not have', () => {
    const error = errorOf(() => new LockKeyTemplate('invoice-<1>', where, 1));
    expect(error).toBeInstanceOf(LockValidationError);
    expect(error.message).toBe(
      "@WithLock('invoice-<1>') on InvoiceService.pay: <1> names an argument the method does not have (it declares 1 parameter, so <0> are available).",
    );
  });

  it.each([
    [[undefined], /<0> is undefined in this call/],
    [[null], /<0> is null in this call/],
    [[{ id: 1 }], /<0> is an object; name one of its properties, e.g. <0.id>/],
    [[''], /<0> is an empty string/],
    [[new Date(Number.NaN)], /<0> is an invalid Date/],
  ])('rejects value %p at call time', (args, message) => {
    const error = errorOf(() => new LockKeyTemplate('invoice-<0>', where, 1).render(args));
    expect(error).toBeInstanceOf(LockValidationError);
    expect(error.message).toMatch(message);
  });

  it('names the missing property path', () => {
    const error = errorOf(() => new LockKeyTemplate('order-<0.customer.id>', where, 1).render([{ customer: {} }]));
    expect(error.message).toMatch(/<0.customer.id> is undefined/);
  });
});

import { describe, expect, it } from '@jest/globals';
import { LockKeyError, LockKeyTemplate, LockValidationError } from '../../lib';

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
      "@WithLock('invoice-<1>') on InvoiceService.pay: <1> names an argument the method does not have (it declares 1 parameter, so only <0> is available).",
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

  it.each([
    // Another syntax on a method with parameters: every call would share one key.
    ['invoice-{0}', 1, '"{0}" is not a placeholder', "Write 'invoice-<0>'."],
    ['invoice-${0}', 1, '"${0}" is not a placeholder', "Write 'invoice-<0>'."],
    ['invoice-#{0}', 1, '"#{0}" is not a placeholder', "Write 'invoice-<0>'."],
    ['invoice-{{ 0 }}', 1, '"{{ 0 }}" is not a placeholder', "Write 'invoice-<0>'."],
    ['order-{1.customer.id}', 2, '"{1.customer.id}" is not a placeholder', "Write 'order-<1.customer.id>'."],
    ['invoice-{}', 1, '"{}" is not a placeholder', "Write 'invoice-<0>'."],
    ['invoice-%s', 1, '"%s" is not a placeholder', "Write 'invoice-<0>'."],
    ['%s:%d', 2, '"%s", "%d" are not placeholders', "Write '<0>:<1>'."],
    ['invoice-{id}', 1, '"{id}" is not a placeholder', 'Name the argument by its position instead.'],
    ['invoice-${invoice.id}', 1, '"${invoice.id}" is not a placeholder', 'Name the argument by its position instead.'],
  ])('rejects %p, another templating syntax, naming the method and the fix', (template, count, found, fix) => {
    const error = errorOf(() => new LockKeyTemplate(template, where, count));
    expect(error).toBeInstanceOf(LockValidationError);
    expect(error.message).toContain(`@WithLock('${template}') on ${where}: ${found} here`);
    expect(error.message).toContain('so every call would wait for the same lock');
    expect(error.message).toContain(fix);
  });

  it('gives the whole message for the common case', () => {
    expect(errorOf(() => new LockKeyTemplate('invoice-{0}', where, 1)).message).toBe(
      `@WithLock('invoice-{0}') on InvoiceService.pay: "{0}" is not a placeholder here: the key would contain it literally, so every call would wait for the same lock. Write 'invoice-<0>'. Placeholders are <N> for the N-th argument (from 0) or <N.property.path>, e.g. 'invoice-<0>' or 'order-<1.customer.id>'. Braces around a number or a name, and %s, %d or %i, are not allowed as literal text in a template; use other characters, or call LockService.withLock() with the key.`,
    );
  });

  it('rejects another syntax mixed with <N>, on a method without parameters, and when the count is unknown', () => {
    const mixed = errorOf(() => new LockKeyTemplate('invoice-<0>-{1}', where, 2));
    expect(mixed).toBeInstanceOf(LockValidationError);
    expect(mixed.message).toContain(`"{1}" is not a placeholder here: the key would contain it literally. Write 'invoice-<0>-<1>'.`);
    expect(errorOf(() => new LockKeyTemplate('<0>-%s', where, 2)).message).toContain("Write '<0>-<1>'.");

    // No parameters: the key is constant by design, but '{0}' can never mean anything there.
    const constant = errorOf(() => new LockKeyTemplate('report-{0}', where, 0));
    expect(constant).toBeInstanceOf(LockValidationError);
    expect(constant.message).toContain('"{0}" is not a placeholder here: the key would contain it literally. Name the argument');
    // Without decorator metadata the count is unknown: still rejected.
    expect(errorOf(() => new LockKeyTemplate('invoice-${0}', where)).message).toContain("Write 'invoice-<0>'.");
    // A rewrite that would itself be invalid is not suggested.
    expect(errorOf(() => new LockKeyTemplate('{0}{1}', where, 2)).message).toContain('Name the argument by its position instead.');
    expect(errorOf(() => new LockKeyTemplate('invoice-{3}', where, 1)).message).toContain('Name the argument by its position instead.');
  });

  it.each(['shard:0', 'cost$0', 'price-$1', '100%', '<0>-100%', 'caf%C3%A9-<0>', '%sales', '{', 'a}b', 'x{-}', 'json-{"a":1}'])(
    'accepts %p: not a placeholder of another syntax',
    (template) => {
      expect(() => new LockKeyTemplate(template, where, 1)).not.toThrow();
    },
  );

  it('rejects a blank template at definition and a blank value at call time, like toStoredKey', () => {
    const blank = errorOf(() => new LockKeyTemplate(' \t ', where, 0));
    expect(blank).toBeInstanceOf(LockValidationError);
    expect(blank.message).toContain('@WithLock on InvoiceService.pay: the key template " \\t " is only whitespace');
    for (const [value, shown] of [
      ['   ', '"   "'],
      ['\t', '"\\t"'],
      ['\n', '"\\n"'],
      ['\u00a0', '"\\u00a0"'],
    ]) {
      const error = errorOf(() => new LockKeyTemplate('invoice-<0>', where, 1).render([value]));
      expect(error).toBeInstanceOf(LockValidationError);
      expect(error.message).toBe(
        `@WithLock('invoice-<0>') on ${where}: <0> is only whitespace (${shown}) in this call, so the key would not identify anything.`,
      );
    }
    // Whitespace inside or around a value is part of it.
    expect(new LockKeyTemplate('invoice-<0>', where, 1).render([' a b '])).toBe('invoice- a b ');
  });

  it('throws a LockKeyError naming the problem for a value that makes no key, and a plain LockValidationError for a bad template', () => {
    const template = new LockKeyTemplate('order-<0.customer.id>', where, 1);
    for (const [id, problem] of [
      [undefined, 'missing'],
      ['', 'empty'],
      ['  ', 'blank'],
      [{ n: 1 }, 'object'],
      [new Date(Number.NaN), 'invalid-date'],
    ] as const) {
      const error = errorOf(() => template.render([{ customer: { id } }]));
      expect(error).toBeInstanceOf(LockKeyError);
      expect((error as LockKeyError).problem).toBe(problem);
    }
    const definition = errorOf(() => new LockKeyTemplate('order-<1>', where, 1));
    expect(definition).toBeInstanceOf(LockValidationError);
    expect(definition).not.toBeInstanceOf(LockKeyError);
  });

  it('names the missing property path', () => {
    const error = errorOf(() => new LockKeyTemplate('order-<0.customer.id>', where, 1).render([{ customer: {} }]));
    expect(error.message).toMatch(/<0.customer.id> is undefined/);
  });
});

/**
 * `@WithLock` key templates checked where the class is defined: a template in another templating
 * syntax fails there, naming the method, instead of serialising every call on one constant key.
 */
import { describe, expect, it } from '@jest/globals';
import { LockValidationError, WithLock } from '../../lib';
import { hasRestParameter } from '../../lib/decorators/rest-parameter';

describe('@WithLock key template at class definition', () => {
  it("rejects @WithLock('invoice-{0}') on a method with parameters, naming the method and the fix", () => {
    const define = () => {
      class InvoiceService {
        @WithLock('invoice-{0}')
        async pay(invoiceId: string): Promise<string> {
          return invoiceId;
        }
      }
      return InvoiceService;
    };
    expect(define).toThrow(LockValidationError);
    expect(define).toThrow(
      /^@WithLock\('invoice-\{0\}'\) on InvoiceService\.pay: "\{0\}" is not a placeholder here: the key would contain it literally, so every call would wait for the same lock\. Write 'invoice-<0>'\./,
    );
  });

  it("rejects '{0}' on a method without parameters too, and still accepts 'invoice-<0>' and a constant key", () => {
    const defineReports = (template: string) => {
      class Reports {
        @WithLock(template)
        async nightly(): Promise<void> {}

        @WithLock('invoice-<0>')
        async pay(invoiceId: string): Promise<string> {
          return invoiceId;
        }
      }
      return Reports;
    };
    expect(() => defineReports('report-{0}')).toThrow(LockValidationError);
    expect(() => defineReports('report-{0}')).toThrow(
      'on Reports.nightly: "{0}" is not a placeholder here: the key would contain it literally. Name the argument',
    );
    expect(() => defineReports('nightly-report')).not.toThrow();
  });
});

describe('@WithLock on a method with a rest parameter', () => {
  it('accepts a placeholder for any argument the rest parameter takes, and renders it', () => {
    const define = () => {
      class Batches {
        @WithLock('batch-<2>')
        async run(first: string, ...rest: string[]): Promise<string> {
          return [first, ...rest].join(',');
        }
      }
      return Batches;
    };
    expect(define).not.toThrow();
  });

  it('tells rest parameters from others by the parameter list alone', () => {
    expect(
      hasRestParameter(function (a: string, ...b: string[]) {
        return [a, ...b];
      }),
    ).toBe(true);
    expect(hasRestParameter((...ids: string[]) => ids)).toBe(true);
    expect(
      hasRestParameter(function ({ a, ...others }: Record<string, number>, b = [1, 2]) {
        return [a, others, b];
      }),
    ).toBe(false);
    expect(
      hasRestParameter(function (a: number) {
        return [...[a]];
      }),
    ).toBe(false);
  });
});

describe('@WithLock placeholder counts in messages', () => {
  it('names the placeholders a method with several parameters has', () => {
    const define = () => {
      class Transfers {
        @WithLock('transfer-<3>')
        async move(from: string, to: string, amount: number): Promise<string> {
          return `${from}${to}${amount}`;
        }
      }
      return Transfers;
    };
    expect(define).toThrow(/it declares 3 parameters, so <0> to <2> are available\)\.$/);
  });
});

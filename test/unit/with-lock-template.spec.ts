/**
 * `@WithLock` key templates checked where the class is defined: a template in another templating
 * syntax fails there, naming the method, instead of serialising every call on one constant key.
 */
import { describe, expect, it } from '@jest/globals';
import { LockValidationError, WithLock } from '../../lib';

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

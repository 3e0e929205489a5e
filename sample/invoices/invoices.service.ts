import { Injectable, Logger, NotFoundException } from '@nestjs/common';
import { LockService, WithLock } from 'nestjs-dynamo-lock';
import { type Invoice, InvoiceDatabase } from './invoice.database';

/** Pays invoices, one payment per invoice at a time across every instance of the app. */
@Injectable()
export class InvoicesService {
  private readonly logger = new Logger(InvoicesService.name);
  constructor(
    private readonly locks: LockService,
    private readonly invoices: InvoiceDatabase,
  ) {}

  /** Looks an invoice up. */
  find(id: string): Invoice {
    const invoice = this.invoices.get(id);
    if (!invoice) throw new NotFoundException(`Invoice ${id} does not exist`);
    return invoice;
  }

  /**
   * Pays an invoice while holding `invoice-<id>`. A second request for the same invoice fails
   * at once (`wait: false`), and LockInterceptor turns that into 409 Conflict.
   */
  @WithLock('invoice-<0>', { wait: false, leaseDuration: '10s' })
  async pay(id: string): Promise<Invoice> {
    const lock = this.locks.current()!;
    const invoice = this.find(id);
    if (invoice.status === 'paid') return invoice;
    this.logger.log(`Paying invoice ${id} under fencing token ${lock.fencingToken}`);
    await new Promise((resolve) => setTimeout(resolve, 500)); // the slow payment provider
    lock.signal.throwIfAborted(); // never act on a lock that was lost meanwhile
    invoice.status = 'paid';
    invoice.paidWithToken = lock.fencingToken;
    return invoice;
  }

  /** Re-opens an invoice so the demo can run again. Waits for a running payment instead of failing. */
  @WithLock('invoice-<0>', { wait: '15s' })
  async reopen(id: string): Promise<Invoice> {
    const invoice = this.find(id);
    invoice.status = 'open';
    delete invoice.paidWithToken;
    return invoice;
  }
}

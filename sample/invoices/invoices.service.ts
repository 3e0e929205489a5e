import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { ConflictException, Injectable, Logger, NotFoundException } from '@nestjs/common';
import { type Lock, LockFencedError, LockService, WithLock } from 'nestjs-dynamo-lock';
import { type Invoice, InvoiceTable, toInvoice } from './invoice.table';

/** Pays invoices, one payment per invoice at a time across every instance of the app. */
@Injectable()
export class InvoicesService {
  private readonly logger = new Logger(InvoicesService.name);
  constructor(
    private readonly locks: LockService,
    private readonly invoices: InvoiceTable,
  ) {}

  /** Looks an invoice up. */
  async find(id: string): Promise<Invoice> {
    const invoice = await this.invoices.get(id);
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
    const invoice = await this.find(id);
    if (invoice.status === 'paid') return invoice;
    this.logger.log(`Paying invoice ${id} under fencing token ${lock.fencingToken}`);
    await new Promise((resolve) => setTimeout(resolve, 500)); // the slow payment provider
    // Not `lock.signal.throwIfAborted()` and then a plain write: a pause between the two (GC, a
    // frozen container) would let this write land after another instance took the lock over. The
    // fenced write is refused by DynamoDB itself once a later holder of the lock wrote the invoice.
    // Its own condition (still open) joins the fence's: the invoice is never marked paid twice.
    try {
      return await this.write(lock, id, 'SET #status = :paid, paidWithToken = :token', '#status = :open', {
        ':paid': 'paid',
        ':open': 'open',
        ':token': lock.fencingToken,
      });
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      return this.find(id); // paid meanwhile
    }
  }

  /** Re-opens an invoice so the demo can run again. Waits for a running payment instead of failing. */
  @WithLock('invoice-<0>', { wait: '15s' })
  async reopen(id: string): Promise<Invoice> {
    const lock = this.locks.current()!;
    await this.find(id);
    return this.write(lock, id, 'SET #status = :open REMOVE paidWithToken', 'attribute_exists(id)', { ':open': 'open' });
  }

  /**
   * Updates the invoice under `lock` if `condition` holds: the item gets the lock's fencing token
   * (attribute `lockFence`), and the update lands only if the item carries no newer one. A failed
   * `condition` throws DynamoDB's ConditionalCheckFailedException, as a plain write would.
   */
  private async write(lock: Lock, id: string, update: string, condition: string, values: Record<string, unknown>): Promise<Invoice> {
    try {
      const { attributes } = await lock.fencedWrite(
        {
          Update: {
            TableName: this.invoices.tableName,
            Key: { id },
            UpdateExpression: update,
            ConditionExpression: condition,
            ExpressionAttributeNames: { '#status': 'status' },
            ExpressionAttributeValues: values,
          },
        },
        { form: 'document', returnValues: 'ALL_NEW' },
      );
      return toInvoice(attributes!);
    } catch (error) {
      if (!(error instanceof LockFencedError)) throw error;
      // A later holder of the lock (another instance, after this one stalled past its lease) wrote
      // the invoice: this write did not land, and this instance must not act on the invoice again.
      this.logger.warn(error.message);
      throw new ConflictException(
        `Invoice ${id} was written meanwhile by a later holder of its lock (fencing token ${error.newerToken}); nothing was written here.`,
      );
    }
  }
}

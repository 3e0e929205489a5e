/** An invoice of the sample's "database". */
export interface Invoice {
  id: string;
  amount: number;
  status: 'open' | 'paid';
  /** Fencing token of the lock under which it was paid: the guard against a stale holder. */
  paidWithToken?: number;
}

/**
 * Stands in for the database every instance of the app shares: the instances that `npm start`
 * runs in one process are given one of these, so a payment made through one shows through all.
 */
export class InvoiceDatabase {
  private readonly invoices = new Map<string, Invoice>([
    ['42', { id: '42', amount: 100, status: 'open' }],
    ['43', { id: '43', amount: 250, status: 'open' }],
  ]);

  /** The invoice with this id, if there is one. */
  get(id: string): Invoice | undefined {
    return this.invoices.get(id);
  }
}

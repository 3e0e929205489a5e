// invoices.service.ts
import { Injectable } from '@nestjs/common';
import { LockService, WithLock } from 'nestjs-dynamo-lock';
import { PaymentsService } from './payments.service.js';

@Injectable()
export class InvoicesService {
  constructor(
    private readonly locks: LockService,
    private readonly payments: PaymentsService,
  ) {}

  @WithLock('invoice-<0>', { wait: '10s' })
  async pay(invoiceId: string): Promise<void> {
    const lock = this.locks.current()!; // the held lock: fencing token, signal
    await this.payments.charge(invoiceId, { fencingToken: lock.fencingToken });
  }
}

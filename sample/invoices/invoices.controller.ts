import { Controller, Get, Param, Post, UseInterceptors } from '@nestjs/common';
import { LockInterceptor, LockService } from 'nestjs-dynamo-lock';
import type { Invoice } from './invoice.table';
import { InvoicesService } from './invoices.service';

/** HTTP API of the sample. A busy invoice answers 409 thanks to LockInterceptor. */
@Controller('invoices')
@UseInterceptors(LockInterceptor)
export class InvoicesController {
  constructor(
    private readonly invoices: InvoicesService,
    private readonly locks: LockService,
  ) {}

  @Get(':id')
  find(@Param('id') id: string): Promise<Invoice> {
    return this.invoices.find(id);
  }

  @Post(':id/pay')
  pay(@Param('id') id: string): Promise<Invoice> {
    return this.invoices.pay(id);
  }

  @Post(':id/reopen')
  reopen(@Param('id') id: string): Promise<Invoice> {
    return this.invoices.reopen(id);
  }

  /** Who holds the invoice's lock right now. */
  @Get(':id/lock')
  async lock(@Param('id') id: string) {
    return (await this.locks.inspect(`invoice-${id}`)) ?? { held: false };
  }
}

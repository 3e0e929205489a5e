import { Module } from '@nestjs/common';
import { ConfigModule } from '@nestjs/config';
import { InvoiceTable } from './invoice.table';
import { InvoicesController } from './invoices.controller';
import { InvoicesService } from './invoices.service';

@Module({
  imports: [ConfigModule],
  controllers: [InvoicesController],
  providers: [InvoiceTable, InvoicesService],
})
export class InvoicesModule {}

import { Injectable } from '@nestjs/common';

/** Stands for the app's payment client in the README's snippets (`./payments.service`). */
@Injectable()
export class PaymentsService {
  async charge(_invoiceId: string, _options: { fencingToken: number }): Promise<void> {}
}

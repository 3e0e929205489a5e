import { Injectable } from '@nestjs/common';

/** A message of the app's order queue. */
export interface OrderMessage {
  orderId: string;
}

/** Stands for the app's order handling in the README's queue-consumer snippets (`./orders.service`). */
@Injectable()
export class OrdersService {
  async apply(_message: OrderMessage, _options: { fencingToken: number; signal: AbortSignal }): Promise<void> {}
}

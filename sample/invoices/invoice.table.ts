import {
  ConditionalCheckFailedException,
  CreateTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  ResourceInUseException,
  ResourceNotFoundException,
} from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { Injectable, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { setTimeout as sleep } from 'node:timers/promises';

/** An invoice of the sample, as its item in the invoice table holds it. */
export interface Invoice {
  id: string;
  amount: number;
  status: 'open' | 'paid';
  /** Fencing token of the lock under which it was paid. */
  paidWithToken?: number;
  /** Fencing token of the lock its last write was made under (`lock.fencedWrite()` keeps it): older ones are refused. */
  lockFence?: number;
}

/** The invoices every instance starts with, written when the table does not have them yet. */
const SEED: readonly Invoice[] = [
  { id: '42', amount: 100, status: 'open' },
  { id: '43', amount: 250, status: 'open' },
];

/**
 * The invoices, in a DynamoDB table of their own (`SAMPLE_INVOICE_TABLE`, default
 * `sample-invoices`, partition key `id`) on the server that holds the locks: every instance of the
 * app reads and writes the same items, as copies of one app share a database. Created at start
 * when missing, like the lock table (`createTable: true`), with invoices 42 and 43.
 *
 * The table does not write: payments go through `lock.fencedWrite()` (see InvoicesService), which
 * stamps each item with the fencing token of the lock it was written under (`lockFence`).
 */
@Injectable()
export class InvoiceTable implements OnModuleInit, OnModuleDestroy {
  /** The table's name. */
  readonly tableName: string;
  private readonly dynamo: DynamoDBClient;
  private readonly documents: DynamoDBDocumentClient;

  constructor(config: ConfigService) {
    this.tableName = config.get('SAMPLE_INVOICE_TABLE', 'sample-invoices');
    this.dynamo = new DynamoDBClient({ endpoint: config.get('DYNAMODB_ENDPOINT') });
    this.documents = DynamoDBDocumentClient.from(this.dynamo);
  }

  async onModuleInit(): Promise<void> {
    await this.ensureTable();
    for (const invoice of SEED) {
      try {
        await this.documents.send(
          new PutCommand({ TableName: this.tableName, Item: invoice, ConditionExpression: 'attribute_not_exists(id)' }),
        );
      } catch (error) {
        // Kept from an earlier run, or written by an instance that started first.
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
      }
    }
  }

  onModuleDestroy(): void {
    this.dynamo.destroy();
  }

  /** The invoice with this id (a strongly consistent read), if there is one. */
  async get(id: string): Promise<Invoice | undefined> {
    const { Item } = await this.documents.send(new GetCommand({ TableName: this.tableName, Key: { id }, ConsistentRead: true }));
    return Item && toInvoice(Item);
  }

  /** Creates the table unless it exists, and waits until it is ACTIVE. */
  private async ensureTable(): Promise<void> {
    try {
      await this.dynamo.send(
        new CreateTableCommand({
          TableName: this.tableName,
          AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
          KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
          BillingMode: 'PAY_PER_REQUEST',
        }),
      );
    } catch (error) {
      // Another instance created it, or an earlier run did.
      if (!(error instanceof ResourceInUseException)) throw error;
    }
    for (let tries = 0; tries < 600; tries++) {
      try {
        const { Table } = await this.dynamo.send(new DescribeTableCommand({ TableName: this.tableName }));
        if (Table?.TableStatus === 'ACTIVE') return;
      } catch (error) {
        // A table just created may not be visible at once.
        if (!(error instanceof ResourceNotFoundException)) throw error;
      }
      await sleep(100);
    }
    throw new Error(`The invoice table "${this.tableName}" did not become ACTIVE within 60 s`);
  }
}

/** An invoice from its item (plain values, as the document client and `form: 'document'` return them). */
export function toInvoice(item: Record<string, unknown>): Invoice {
  const invoice: Invoice = { id: String(item.id), amount: Number(item.amount), status: item.status === 'paid' ? 'paid' : 'open' };
  if (item.paidWithToken !== undefined) invoice.paidWithToken = Number(item.paidWithToken);
  if (item.lockFence !== undefined) invoice.lockFence = Number(item.lockFence);
  return invoice;
}

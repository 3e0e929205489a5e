/**
 * Inside a `@WithLock` method, `this.locks.current()!.transact(...)` and `fencedWrite(...)` write
 * under the method's lock; `DynamoLockModule.forTesting()` runs such a method without DynamoDB, the
 * memory store handing the checked writes to `onWrite`.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { DynamoLockModule, LockService, MemoryLockStore, type MemoryWrite, WithLock } from '../../lib';
import { MemoryLogger } from '../support/lock-fixture';

@Injectable()
class InvoiceService {
  constructor(private readonly locks: LockService) {}

  @WithLock('invoice-<0>')
  async pay(id: string): Promise<void> {
    const lock = this.locks.current()!;
    await lock.transact(
      [{ Update: { TableName: 'invoices', Key: { id }, UpdateExpression: 'SET paid = :t', ExpressionAttributeValues: { ':t': true } } }],
      {
        form: 'document',
      },
    );
    await lock.fencedWrite({ Put: { TableName: 'payments', Item: { id, amount: 10 } } }, { form: 'document' });
  }
}

describe('fenced writes in a @WithLock method on forTesting()', () => {
  const writes: MemoryWrite[] = [];
  let moduleRef: TestingModule;
  beforeAll(async () => {
    const store = new MemoryLockStore({ onWrite: (write) => void writes.push(write), tableKeys: { payments: ['id'] } });
    moduleRef = await Test.createTestingModule({ imports: [DynamoLockModule.forTesting({ store })], providers: [InvoiceService] })
      .setLogger(new MemoryLogger())
      .compile();
    await moduleRef.init();
  });
  afterAll(() => moduleRef.close());

  it("hands the method's writes to onWrite, under the method's lock and token", async () => {
    await moduleRef.get(InvoiceService).pay('7');
    expect(writes.map((write) => write.kind)).toEqual(['transact', 'fencedWrite']);
    const [transact, fenced] = writes as [Extract<MemoryWrite, { kind: 'transact' }>, Extract<MemoryWrite, { kind: 'fencedWrite' }>];
    expect(transact.key).toBe('invoice-7');
    expect(transact.items[0]).toMatchObject({ Update: { Key: { id: { S: '7' } }, ExpressionAttributeValues: { ':t': { BOOL: true } } } });
    expect(fenced.fencingToken).toBe(transact.fencingToken);
    expect(fenced.item).toMatchObject({
      Put: { Item: { id: { S: '7' }, amount: { N: '10' }, lockFence: { N: String(fenced.fencingToken) } } },
    });
  });
});

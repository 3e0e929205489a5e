// invoices.service.spec.ts, with vitest
import { Test, type TestingModule } from '@nestjs/testing';
import { DynamoLockModule, LockBusyError, LockService } from 'nestjs-dynamo-lock';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { InvoicesService } from './invoices.service.js';
import { PaymentsService } from './payments.service.js';

describe('InvoicesService', () => {
  let moduleRef: TestingModule;

  beforeEach(async () => {
    vi.useFakeTimers(); // pay() waits up to 10 s for a busy invoice: the test skips that time
    moduleRef = await Test.createTestingModule({
      imports: [DynamoLockModule.forTesting()],
      providers: [InvoicesService, { provide: PaymentsService, useValue: { charge: async () => undefined } }],
    }).compile();
  });

  afterEach(async () => {
    await moduleRef.close();
    vi.useRealTimers();
  });

  it('pays an invoice under its lock', async () => {
    await expect(moduleRef.get(InvoicesService).pay('42')).resolves.toBeUndefined();
  });

  it('fails with LockBusyError while another instance pays the same invoice', async () => {
    const held = await moduleRef.get(LockService).acquire('invoice-42'); // not re-entrant for the code under test
    const paying = expect(moduleRef.get(InvoicesService).pay('42')).rejects.toBeInstanceOf(LockBusyError);
    await vi.advanceTimersByTimeAsync(10_000); // the method's whole wait, in no time
    await paying;
    await held.release();
  });
});

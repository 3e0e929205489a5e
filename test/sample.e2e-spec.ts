import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { SchedulerRegistry } from '@nestjs/schedule';
import { GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { setTimeout as sleep } from 'node:timers/promises';
import { AppModule } from '../sample/app.module';
import { ReportJob } from '../sample/reports/report.job';
import { createTestClient, deleteTable, describeEachServer, uniqueTableName } from './support/servers';

describeEachServer('sample app (HTTP)', (server) => {
  const table = uniqueTableName('sample');
  const invoiceTable = uniqueTableName('sample-invoices');
  const apps: INestApplication[] = [];
  const urls: string[] = [];
  const saved = { ...process.env };

  beforeAll(async () => {
    Object.assign(process.env, {
      DYNAMODB_ENDPOINT: server.endpoint,
      DYNAMO_LOCK_TABLE: table,
      SAMPLE_INVOICE_TABLE: invoiceTable,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
    });
    for (const instance of ['A', 'B']) {
      const app = await NestFactory.create(AppModule.forInstance(instance), { logger: false });
      await app.listen(0, '127.0.0.1');
      apps.push(app);
      urls.push((await app.getUrl()).replace('[::1]', '127.0.0.1'));
    }
  });

  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
    process.env = saved;
    const client = createTestClient(server);
    await deleteTable(client, table);
    await deleteTable(client, invoiceTable);
    client.destroy();
  });

  /**
   * The lock of invoice `id` once instance B sees instance A hold it while `request` (A's payment)
   * runs. The tests used to wait a fixed 150 ms for the payment to take the lock; under load (two
   * CPU hogs and other test runs) the request took longer than that to get there, and B's request
   * took the lock first (a 409 for the payment). Polling through B (10 ms apart) finds the payment's
   * 500 ms hold whatever the machine's load; a request that ends first fails the test.
   */
  async function heldByA(id: string, request: Promise<Response>): Promise<{ fencingToken: number }> {
    let ended = false;
    request.then(
      () => (ended = true),
      () => (ended = true),
    );
    for (;;) {
      const info = (await (await fetch(`${urls[1]}/invoices/${id}/lock`)).json()) as { owner?: string; fencingToken: number };
      if (info.owner?.startsWith('sample-A:')) return info;
      if (ended) throw new Error(`the request ended before B saw A hold invoice-${id}`);
      await sleep(10);
    }
  }

  it('pays an invoice once when two instances are asked at the same time: one 201, one 409', async () => {
    const [a, b] = await Promise.all(urls.map((url) => fetch(`${url}/invoices/42/pay`, { method: 'POST' })));
    const statuses = [a.status, b.status].sort();
    expect(statuses).toEqual([201, 409]);
    const conflict = a.status === 409 ? a : b;
    expect(conflict.headers.get('retry-after')).toBe('10');
    // The holder (host:pid) is an internal detail: not in the body by default.
    expect(await conflict.json()).toEqual({
      statusCode: 409,
      error: 'Conflict',
      message: 'Resource "invoice-42" is locked by another operation; try again later.',
      resource: 'invoice-42',
    });
    const paid = a.status === 201 ? a : b;
    const invoice = (await paid.json()) as { paidWithToken: number };
    expect(invoice).toMatchObject({ id: '42', status: 'paid', paidWithToken: expect.any(Number) });
    // Paid with a fenced write: the item in the invoice table carries the token it was written under.
    const client = createTestClient(server);
    const { Item } = await client.send(new GetItemCommand({ TableName: invoiceTable, Key: { id: { S: '42' } }, ConsistentRead: true }));
    client.destroy();
    expect(Item).toEqual({
      id: { S: '42' },
      amount: { N: '100' },
      status: { S: 'paid' },
      paidWithToken: { N: String(invoice.paidWithToken) },
      lockFence: { N: String(invoice.paidWithToken) },
    });
  });

  it('shows the holder while a payment runs, and nobody after', async () => {
    const paying = fetch(`${urls[0]}/invoices/43/pay`, { method: 'POST' });
    const during = await heldByA('43', paying);
    expect(during).toMatchObject({ key: 'invoice-43', owner: expect.stringMatching(/^sample-A:/), leaseDuration: 10_000 });
    expect((await paying).status).toBe(201);
    expect(await (await fetch(`${urls[1]}/invoices/43/lock`)).json()).toEqual({ held: false });
  });

  it('lets a waiting request through after the payment instead of failing (reopen waits)', async () => {
    expect((await fetch(`${urls[0]}/invoices/42/reopen`, { method: 'POST' })).status).toBe(201);
    const paying = fetch(`${urls[0]}/invoices/42/pay`, { method: 'POST' });
    await heldByA('42', paying);
    const reopened = await fetch(`${urls[1]}/invoices/42/reopen`, { method: 'POST' });
    expect((await paying).status).toBe(201);
    expect(reopened.status).toBe(201);
    expect(await reopened.json()).toMatchObject({ status: 'open' });
  });

  it('shares its invoices between instances through the invoice table: a payment through one shows through the other, and is not made twice', async () => {
    expect((await fetch(`${urls[0]}/invoices/42/reopen`, { method: 'POST' })).status).toBe(201);
    expect(await (await fetch(`${urls[1]}/invoices/42`)).json()).toMatchObject({ status: 'open' });
    const paid = await (await fetch(`${urls[1]}/invoices/42/pay`, { method: 'POST' })).json();
    expect(paid).toMatchObject({ status: 'paid', paidWithToken: expect.any(Number) });
    expect(await (await fetch(`${urls[0]}/invoices/42`)).json()).toEqual(paid);
    // Paid already: the other instance pays nothing again.
    expect(await (await fetch(`${urls[0]}/invoices/42/pay`, { method: 'POST' })).json()).toEqual(paid);
  });

  it('writes nothing when the invoice was paid meanwhile (its own condition of the fenced write), and answers with it as it is', async () => {
    expect((await fetch(`${urls[0]}/invoices/43/reopen`, { method: 'POST' })).status).toBe(201);
    const paying = fetch(`${urls[0]}/invoices/43/pay`, { method: 'POST' });
    await heldByA('43', paying);
    const client = createTestClient(server);
    await client.send(
      new UpdateItemCommand({
        TableName: invoiceTable,
        Key: { id: { S: '43' } },
        UpdateExpression: 'SET #status = :paid, paidWithToken = :one',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':paid': { S: 'paid' }, ':one': { N: '1' } },
      }),
    );
    client.destroy();
    const answer = await paying;
    expect(answer.status).toBe(201);
    expect(await answer.json()).toMatchObject({ id: '43', status: 'paid', paidWithToken: 1 });
  });

  it("refuses a payment once a later holder of the invoice's lock wrote the invoice: 409, and the later write stays", async () => {
    expect((await fetch(`${urls[0]}/invoices/43/reopen`, { method: 'POST' })).status).toBe(201);
    const paying = fetch(`${urls[0]}/invoices/43/pay`, { method: 'POST' });
    // While A waits for its payment provider, a holder with a newer token writes the invoice (as one
    // would after A stalled past its lease and lost the lock).
    const { fencingToken } = await heldByA('43', paying);
    const client = createTestClient(server);
    await client.send(
      new UpdateItemCommand({
        TableName: invoiceTable,
        Key: { id: { S: '43' } },
        UpdateExpression: 'SET lockFence = :newer, amount = :amount',
        ExpressionAttributeValues: { ':newer': { N: String(fencingToken + 1) }, ':amount': { N: '300' } },
      }),
    );
    client.destroy();
    const refused = await paying;
    expect(refused.status).toBe(409);
    expect(await refused.json()).toMatchObject({ message: expect.stringContaining(`fencing token ${fencingToken + 1}`) });
    expect(await (await fetch(`${urls[1]}/invoices/43`)).json()).toEqual({
      id: '43',
      amount: 300,
      status: 'open',
      lockFence: fencingToken + 1,
    });
  });

  it('registers the guarded report job on each instance', () => {
    for (const app of apps) {
      expect(app.get(SchedulerRegistry).getCronJob('report')).toBeDefined();
      expect(app.get(ReportJob)).toBeInstanceOf(ReportJob);
    }
  });
});

import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { SchedulerRegistry } from '@nestjs/schedule';
import { AppModule } from '../sample/app.module';
import { InvoiceDatabase } from '../sample/invoices/invoice.database';
import { ReportJob } from '../sample/reports/report.job';
import { createTestClient, deleteTable, describeEachServer, uniqueTableName } from './support/servers';

describeEachServer('sample app (HTTP)', (server) => {
  const table = uniqueTableName('sample');
  const apps: INestApplication[] = [];
  const urls: string[] = [];
  const saved = { ...process.env };

  beforeAll(async () => {
    Object.assign(process.env, {
      DYNAMODB_ENDPOINT: server.endpoint,
      DYNAMO_LOCK_TABLE: table,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
    });
    const database = new InvoiceDatabase();
    for (const instance of ['A', 'B']) {
      const app = await NestFactory.create(AppModule.forInstance(instance, database), { logger: false });
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
    client.destroy();
  });

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
    expect(await paid.json()).toMatchObject({ id: '42', status: 'paid', paidWithToken: expect.any(Number) });
  });

  it('shows the holder while a payment runs, and nobody after', async () => {
    const paying = fetch(`${urls[0]}/invoices/43/pay`, { method: 'POST' });
    await new Promise((resolve) => setTimeout(resolve, 150));
    const during = await (await fetch(`${urls[1]}/invoices/43/lock`)).json();
    expect(during).toMatchObject({ key: 'invoice-43', owner: expect.stringMatching(/^sample-A:/), leaseDuration: 10_000 });
    expect((await paying).status).toBe(201);
    expect(await (await fetch(`${urls[1]}/invoices/43/lock`)).json()).toEqual({ held: false });
  });

  it('lets a waiting request through after the payment instead of failing (reopen waits)', async () => {
    const paying = fetch(`${urls[0]}/invoices/42/reopen`, { method: 'POST' }).then(() =>
      fetch(`${urls[0]}/invoices/42/pay`, { method: 'POST' }),
    );
    await new Promise((resolve) => setTimeout(resolve, 150));
    const reopened = await fetch(`${urls[1]}/invoices/42/reopen`, { method: 'POST' });
    expect((await paying).status).toBe(201);
    expect(reopened.status).toBe(201);
    expect(await reopened.json()).toMatchObject({ status: 'open' });
  });

  it('shares its invoices between instances: a payment through one shows through the other, and is not made twice', async () => {
    expect((await fetch(`${urls[0]}/invoices/42/reopen`, { method: 'POST' })).status).toBe(201);
    expect(await (await fetch(`${urls[1]}/invoices/42`)).json()).toMatchObject({ status: 'open' });
    const paid = await (await fetch(`${urls[1]}/invoices/42/pay`, { method: 'POST' })).json();
    expect(paid).toMatchObject({ status: 'paid', paidWithToken: expect.any(Number) });
    expect(await (await fetch(`${urls[0]}/invoices/42`)).json()).toEqual(paid);
    // Paid already: the other instance pays nothing again.
    expect(await (await fetch(`${urls[0]}/invoices/42/pay`, { method: 'POST' })).json()).toEqual(paid);
  });

  it('registers the guarded report job on each instance', () => {
    for (const app of apps) {
      expect(app.get(SchedulerRegistry).getCronJob('report')).toBeDefined();
      expect(app.get(ReportJob)).toBeInstanceOf(ReportJob);
    }
  });
});

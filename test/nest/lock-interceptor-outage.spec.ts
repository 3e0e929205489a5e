import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { Controller, type INestApplication, Param, Post, UseInterceptors } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { DynamoLockModule, LockInterceptor, type LockUnavailableBody, WithLock } from '../../lib';
import { type HungServer, startHungServer } from '../support/hung-server';
import { LockFixture } from '../support/lock-fixture';
import { describeEachServer } from '../support/servers';

@Controller('jobs')
@UseInterceptors(LockInterceptor)
class JobController {
  @Post(':id/run')
  @WithLock('job-<0>', { wait: false })
  async run(@Param('id') id: string) {
    return { ran: id };
  }
}

describeEachServer('LockInterceptor during a DynamoDB outage', (server) => {
  const fixture = new LockFixture(server);
  let hung: HungServer;
  let app: INestApplication;
  let baseUrl: string;

  beforeAll(async () => {
    hung = await startHungServer();
    const moduleRef = await Test.createTestingModule({
      imports: [
        DynamoLockModule.forRoot(
          fixture.moduleOptions({
            clientConfig: { ...fixture.moduleOptions().clientConfig, endpoint: hung.endpoint },
            verifyTable: false,
            requestTimeout: 300,
          }),
        ),
      ],
      controllers: [JobController],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    baseUrl = (await app.getUrl()).replace('[::1]', '127.0.0.1');
  });
  afterAll(async () => {
    await app?.close();
    await hung?.close();
    await fixture.close();
  });

  it('answers 503 with Retry-After and the resource, not 409, when DynamoDB does not answer', async () => {
    const started = performance.now();
    const response = await fetch(`${baseUrl}/jobs/7/run`, { method: 'POST', signal: AbortSignal.timeout(5_000) });
    expect(performance.now() - started).toBeLessThan(300 + 2_000);
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('1');
    const body = (await response.json()) as LockUnavailableBody;
    expect(body).toMatchObject({ statusCode: 503, error: 'Service Unavailable', resource: 'job-7' });
    // The DynamoDB error (table names, endpoints) stays in the app.
    expect(body.message).not.toContain(fixture.tableName);
  });
});

import 'reflect-metadata';
import { type INestApplication, Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module';
import { runDemo } from './support/demo';
import { startSampleDynamoDB } from './support/embedded-dynamodb';

/**
 * Starts the sample: a DynamoDB server (embedded dynalite unless `DYNAMODB_ENDPOINT` is set),
 * then `SAMPLE_INSTANCES` (default 3) copies of the app in this process, on ports `PORT`
 * (default 3000) and up — as a scaled-out service would run them on separate hosts. They share
 * nothing in memory: their locks and their invoices are in DynamoDB.
 */
async function main(): Promise<void> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const logger = new Logger('Sample');
  const dynamodb = await startSampleDynamoDB();
  logger.log(dynamodb.embedded ? `Embedded DynamoDB (dynalite) at ${dynamodb.endpoint}` : `DynamoDB at ${dynamodb.endpoint}`);

  const count = Number(process.env.SAMPLE_INSTANCES ?? 3);
  const port = Number(process.env.PORT ?? 3000);
  const apps: INestApplication[] = [];
  const urls: string[] = [];
  for (let i = 0; i < count; i++) {
    const name = String.fromCharCode(65 + i);
    const app = await NestFactory.create(AppModule.forInstance(name), { logger: ['log', 'warn', 'error'] });
    await app.listen(port + i, '127.0.0.1');
    apps.push(app);
    urls.push(`http://127.0.0.1:${port + i}`);
    logger.log(`Instance ${name} listening on ${urls[i]}`);
  }

  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    logger.log('Shutting down: releasing locks ...');
    await Promise.all(apps.map((app) => app.close()));
    await dynamodb.stop();
    process.exit(0);
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);

  logger.log(
    `Try: curl -X POST ${urls[0]}/invoices/42/reopen; curl -X POST ${urls[0]}/invoices/42/pay & curl -X POST ${urls[1] ?? urls[0]}/invoices/42/pay`,
  );
  await runDemo(urls);
  logger.log('The report job runs every 5 s on exactly one instance. Press Ctrl+C to stop.');
}

main().catch((error: unknown) => {
  new Logger('Sample').error(error instanceof Error ? (error.stack ?? error.message) : String(error));
  process.exit(1);
});

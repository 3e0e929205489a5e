import { Logger } from '@nestjs/common';

/**
 * Shows the lock at work once the apps are up: two concurrent payments of one invoice, sent to
 * two different instances. One pays; the other gets 409 Conflict while the first holds the lock.
 */
export async function runDemo(urls: string[]): Promise<void> {
  const logger = new Logger('Demo');
  const [first, second = first] = urls;
  // A table kept from an earlier run (DynamoDB Local, AWS) may have it paid already.
  const invoice = (await (await fetch(`${first}/invoices/42`)).json()) as { status?: string };
  if (invoice.status === 'paid') await fetch(`${first}/invoices/42/reopen`, { method: 'POST' });
  logger.log(`Paying invoice 42 twice at once, via ${first} and ${second} ...`);
  const answers = await Promise.all(
    [first, second].map(async (url) => {
      const response = await fetch(`${url}/invoices/42/pay`, { method: 'POST' });
      return { url, status: response.status, body: await response.json() };
    }),
  );
  for (const { url, status, body } of answers) {
    logger.log(`${url} answered ${status}: ${JSON.stringify(body)}`);
  }
}

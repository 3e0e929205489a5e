/**
 * Waiters read the item eventually consistently while they only look for the line moving or their
 * turn. Such a read may show an old copy: DynamoDB Local and dynalite never do, so a middleware of
 * the waiter's client answers its eventually consistent `GetItem`s with a copy kept from earlier
 * (a fault as DynamoDB may produce it: strongly consistent reads and writes go to the server).
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { type AttributeValue, type DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Lock } from '../../lib';
import { LockFixture } from '../support/lock-fixture';
import { describeEachServer } from '../support/servers';

/** What the middleware does with the client's eventually consistent `GetItem`s. */
interface ReadControl {
  /** Set: the next eventually consistent read is held here (not sent) until {@link answerHeld}. */
  holdNext: boolean;
  /** Whether a read is held now. */
  readonly holding: boolean;
  /** Answers the held read with `item`, as an old copy from a replica would be (no request). */
  answerHeld(item: Record<string, AttributeValue> | undefined): void;
  /** While set, eventually consistent reads are answered with this copy, without a request. */
  staleItem?: Record<string, AttributeValue>;
  /** Eventually consistent reads answered with an old copy. */
  staleAnswers: number;
}

function controlReads(client: DynamoDBClient): ReadControl {
  let answer: ((item: Record<string, AttributeValue> | undefined) => void) | undefined;
  const control: ReadControl = {
    holdNext: false,
    staleAnswers: 0,
    get holding() {
      return answer !== undefined;
    },
    answerHeld(item) {
      answer?.(item);
      answer = undefined;
    },
  };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const eventual = context.commandName === 'GetItemCommand' && (args.input as { ConsistentRead?: boolean }).ConsistentRead !== true;
      if (!eventual) return next(args);
      let item = control.staleItem;
      if (control.holdNext) {
        control.holdNext = false;
        item = await new Promise<Record<string, AttributeValue> | undefined>((resolve) => (answer = resolve));
      } else if (!item) return next(args);
      control.staleAnswers++;
      return { output: { Item: item, $metadata: {} }, response: {} } as Awaited<ReturnType<typeof next>>;
    },
    { step: 'initialize', name: 'testStaleReads' },
  );
  return control;
}

describeEachServer('eventually consistent reads while waiting', (server) => {
  const fixture = new LockFixture(server);
  beforeAll(() => fixture.setup());
  afterAll(() => fixture.close());

  it('an old copy showing a waiter served, after it was passed, never makes it hold: its lease counts from its last strongly consistent answer', async () => {
    const key = 'stale-served';
    // The waiters' 1.5 s leases: a promoted waiter that does not show up is passed after a 1.5 s
    // claim lease (the holder's long lease survives a slow moment of the server). The sleeper's
    // requests may take 10 s: its held read is answered, not timed out.
    const holder = fixture.manager({ ownerName: 'holder', leaseDuration: 20_000 });
    const sleeper = fixture.manager({ ownerName: 'sleeper', leaseDuration: 1_500, requestTimeout: '10s' });
    const next = fixture.manager({ ownerName: 'next', leaseDuration: 1_500 });
    const reads = controlReads(sleeper.client);

    const first = await holder.acquire(key);
    let sleeperLock: Lock | undefined;
    const sleeping = sleeper.acquire(key, { wait: '30s' }).then((lock) => (sleeperLock = lock));
    await waitForTicket(fixture.client, fixture.tableName, key, 1);
    const nextLock = next.acquire(key, { wait: '30s' });
    await waitForTicket(fixture.client, fixture.tableName, key, 2);

    // Next in line with the release overdue, the sleeper polls eventually consistently: one of
    // those reads gets no answer for now (a slow replica), and the release serves its ticket.
    reads.holdNext = true;
    for (let i = 0; i < 100 && !reads.holding; i++) await sleep(20);
    expect(reads.holding).toBe(true);
    expect(await first.release()).toBe(true);
    const served = await readItem(fixture.client, fixture.tableName, key);
    expect(served?.token).toBeUndefined();

    // The next waiter passes the silent head after its claim lease and holds.
    const passer = await nextLock;
    expect(passer.isHeld).toBe(true);

    // The held read is answered with a copy from just after the release (its ticket served), and
    // so are the sleeper's next eventually consistent reads.
    reads.staleItem = served;
    reads.answerHeld(served);
    const until = Date.now() + 2_000;
    while (Date.now() < until) {
      // Never two holders: the sleeper does not get the lock while the passer holds it.
      expect(sleeperLock).toBeUndefined();
      await sleep(50);
    }
    expect(reads.staleAnswers).toBeGreaterThan(0);
    expect(passer.isHeld).toBe(true);
    expect((await holder.inspect(key))?.owner).toBe('next');

    // Fresh copies again: the sleeper queues anew and is served after the passer.
    reads.staleItem = undefined;
    expect(await passer.release()).toBe(true);
    const lock = await sleeping;
    expect(lock.fencingToken).toBeGreaterThan(passer.fencingToken);
    await lock.release();
  }, 30_000);

  it('a waiter learns it is served from an eventually consistent read, and holds without a write', async () => {
    const key = 'eventual-served';
    const holder = fixture.manager({ ownerName: 'holder', leaseDuration: 3_000 });
    const waiter = fixture.manager({ ownerName: 'waiter', leaseDuration: 3_000 });
    const reads = controlReads(waiter.client);
    /** The waiter's requests in order: 'strong', 'eventual' or the command name of a write. */
    const requests: string[] = [];
    waiter.client.middlewareStack.add(
      (next, context) => async (args) => {
        const consistent = (args.input as { ConsistentRead?: boolean }).ConsistentRead === true;
        requests.push(context.commandName === 'GetItemCommand' ? (consistent ? 'strong' : 'eventual') : String(context.commandName));
        return next(args);
      },
      { step: 'initialize', name: 'testReadKinds' },
    );
    const first = await holder.acquire(key);
    const waiting = waiter.acquire(key, { wait: '10s' });
    await waitForTicket(fixture.client, fixture.tableName, key, 1);
    // Held past any hold this waiter knows: it polls for the release.
    await sleep(300);
    const before = requests.length;
    expect(await first.release()).toBe(true);
    const lock = await waiting;
    expect(lock.isHeld).toBe(true);
    // Only reads since the release, the last (which showed it served) eventually consistent: half
    // the price, and no write before the caller got the lock.
    const since = requests.slice(before);
    expect(since.length).toBeGreaterThan(0);
    expect(since.every((request) => request === 'strong' || request === 'eventual')).toBe(true);
    expect(since.at(-1)).toBe('eventual');
    expect(reads.staleAnswers).toBe(0);
    const info = await holder.inspect(key);
    expect(info?.fencingToken).toBe(lock.fencingToken);
    await lock.release();
  }, 30_000);
});

/** Waits until `count` tickets wait in the key's line. */
async function waitForTicket(client: DynamoDBClient, tableName: string, key: string, count: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const item = await readItem(client, tableName, key);
    const head = Number(item?.head?.N ?? 0);
    const tail = Number(item?.tail?.N ?? 0);
    if (tail - head - 1 >= count) return;
    await sleep(20);
  }
  throw new Error(`${count} ticket(s) never waited for ${key}`);
}

async function readItem(client: DynamoDBClient, tableName: string, key: string): Promise<Record<string, AttributeValue> | undefined> {
  const { Item } = await client.send(new GetItemCommand({ TableName: tableName, Key: { key: { S: key } }, ConsistentRead: true }));
  return Item;
}

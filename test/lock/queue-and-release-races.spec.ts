/**
 * Races and edge cases of waiting and releasing, each found by review and reproduced first:
 * a release answered late while other callers of the process come and go; a promoted waiter
 * with `heartbeat: false` or with data; lock data near the item size limit while others queue;
 * `extend()` racing `release()`.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { setTimeout as sleep } from 'node:timers/promises';
import { type LockEvent, type LockEventOf, type LockInfo, LockLostError, type LockManager } from '../../lib';
import { injectFaults } from '../support/fault-injection';
import { LockFixture } from '../support/lock-fixture';
import { describeEachServer } from '../support/servers';

let seq = 0;
const newKey = (name: string) => `${name}-${++seq}`;

/** The key's lock as `inspect()` shows it once `done` holds (a promoted holder writes its own lease and data just after). */
async function inspectUntil(manager: LockManager, key: string, done: (info: LockInfo | null) => boolean): Promise<LockInfo | null> {
  let info = await manager.inspect(key);
  for (let i = 0; i < 100 && !done(info); i++) {
    await sleep(50);
    info = await manager.inspect(key);
  }
  return info;
}

/** Delays this client's next release request (an UpdateItem recording a released token) by `ms`. */
function delayNextRelease(client: DynamoDBClient, ms: number): void {
  let armed = true;
  client.middlewareStack.add(
    (next) => async (args) => {
      const input = (args as { input?: { UpdateExpression?: string } }).input;
      if (armed && input?.UpdateExpression?.includes('#released = :token')) {
        armed = false;
        await sleep(ms);
      }
      return next(args);
    },
    { step: 'finalizeRequest' },
  );
}

describeEachServer('queue and release races', (server) => {
  const fixture = new LockFixture(server);
  beforeAll(() => fixture.setup());
  afterAll(() => fixture.close());

  it('keeps the local queue of a key across a release answered late: the next caller is handed the lock, once', async () => {
    const events: LockEvent[] = [];
    const manager = fixture.manager({ ownerName: 'local', onEvent: (event) => events.push(event) });
    const key = newKey('late-release');
    const first = await manager.acquire(key);
    delayNextRelease(manager.client, 150);
    const releasing = first.release();
    await sleep(20);
    // While the release is on the wire: a busy answer, then a caller that waits for the key.
    expect(await manager.tryAcquire(key)).toBeNull();
    const second = manager.acquire(key, { wait: '10s' });
    expect(await releasing).toBe(true);
    const holder = await second;
    // A third caller must queue behind the second in this process, and get it by hand-over.
    const third = manager.acquire(key, { wait: '10s', leaseDuration: '20s' });
    await sleep(50);
    expect(await holder.release()).toBe(true);
    const last = await third;
    const acquired = events.filter((e): e is LockEventOf<'acquired'> => e.type === 'acquired');
    expect(acquired.map((e) => e.fencingToken)).toEqual([first.fencingToken, holder.fencingToken, last.fencingToken]);
    expect(acquired[2].via).toBe('handover');
    expect(last.isHeld).toBe(true);
    // Held once, with its own lease (not a promotion's claim lease).
    expect(await manager.inspect(key)).toMatchObject({ fencingToken: last.fencingToken, leaseDuration: 20_000 });
    expect(await last.release()).toBe(true);
    expect(await manager.inspect(key)).toBeNull();
  });

  it('gives a promoted waiter without heartbeats its own lease and its data', async () => {
    // The holder learns of the queued waiter at a heartbeat (every 500 ms) and promotes it on release.
    const holder = fixture.manager({ ownerName: 'holder', leaseDuration: 1_500 });
    const waiter = fixture.manager({ ownerName: 'lambda' });
    const key = newKey('promoted-manual');
    const held = await holder.acquire(key);
    const waiting = waiter.acquire(key, { wait: '10s', heartbeat: false, leaseDuration: '20s', data: { job: 7 } });
    await sleep(800);
    await held.release();
    const lock = await waiting;
    expect(await inspectUntil(waiter, key, (i) => i?.leaseDuration === 20_000)).toMatchObject({
      owner: 'lambda',
      fencingToken: lock.fencingToken,
      leaseDuration: 20_000,
      data: { job: 7 },
    });
    // Not the 5 s claim lease a promotion starts with: nothing would renew it.
    expect(lock.isHeld).toBe(true);
    await lock.release();
  });

  it('lets callers with data at the size limit queue for a busy key', async () => {
    const big = 'x'.repeat(1_000);
    const holder = fixture.manager({ ownerName: 'a', leaseDuration: 1_500 });
    const waiter = fixture.manager({ ownerName: 'b' });
    const key = newKey('big-data');
    const held = await holder.acquire(key, { data: { big } });
    const waiting = waiter.acquire(key, { wait: '10s', data: { big, by: 'b' } });
    await sleep(800);
    await held.release();
    const lock = await waiting;
    const info = await inspectUntil(waiter, key, (i) => i?.data !== undefined);
    expect(info).toMatchObject({ owner: 'b', fencingToken: lock.fencingToken });
    expect((info?.data as { by: string }).by).toBe('b');
    await lock.release();
  }, 20_000);

  it('writes the data of a promoted waiter before it gets the lock, retrying a write that fails for a while', async () => {
    const events: LockEvent[] = [];
    const holder = fixture.manager({ ownerName: 'holder', leaseDuration: 1_500 });
    const waiter = fixture.manager({ ownerName: 'waiter', onEvent: (event) => events.push(event) });
    const key = newKey('promoted-throttled');
    const held = await holder.acquire(key);
    // A promoted waiter holds from a read; with data, it writes the data (and its lease) first, so
    // the item shows them while it holds.
    const waiting = waiter.acquire(key, { wait: '20s', data: { job: 9, note: 'n'.repeat(300) } });
    for (let i = 0; i < 100 && !events.some((e) => e.type === 'waiting'); i++) await sleep(10);
    await sleep(600); // the holder's heartbeat sees the queue, so its release promotes
    const faults = injectFaults(waiter.client).failNext('UpdateItem', { kind: 'server-error', times: 12 });
    await held.release();
    const lock = await waiting;
    expect(events.find((e) => e.type === 'acquired')).toMatchObject({ via: 'promotion' });
    // Written before the caller got the lock: the item shows it at once.
    const info = await waiter.inspect(key);
    expect(info).toMatchObject({ owner: 'waiter', fencingToken: lock.fencingToken, data: { job: 9 } });
    expect((info?.data as { note: string }).note).toHaveLength(300);
    // Every injected failure hit the data write, which was retried past them.
    expect(faults.injected.map((f) => f.command)).toEqual(Array(12).fill('UpdateItemCommand'));
    expect(lock.isHeld).toBe(true);
    await lock.release();
  });

  it('extends a promoted lock to the lease it asked for, not the claim lease it started on', async () => {
    const holder = fixture.manager({ ownerName: 'holder', leaseDuration: 1_500 });
    const waiter = fixture.manager({ ownerName: 'waiter' });
    const key = newKey('promoted-extend');
    const held = await holder.acquire(key);
    const waiting = waiter.acquire(key, { wait: '5s', leaseDuration: '20s' });
    await sleep(800);
    await held.release();
    const lock = await waiting;
    await lock.extend();
    expect(await waiter.inspect(key)).toMatchObject({ fencingToken: lock.fencingToken, leaseDuration: 20_000 });
    await lock.release();
  });

  it('rejects an extend() that loses the race with release() with a LockLostError', async () => {
    const manager = fixture.manager();
    const lock = await manager.acquire(newKey('extend-release'));
    const extending = lock.extend('1m');
    const releasing = lock.release();
    const [extended, released] = await Promise.allSettled([extending, releasing]);
    expect(released).toEqual({ status: 'fulfilled', value: true });
    expect(extended.status).toBe('rejected');
    expect((extended as PromiseRejectedResult).reason).toBeInstanceOf(LockLostError);
    // The release aborted the lock's signal, and extend() rejects with what it carries.
    expect(((extended as PromiseRejectedResult).reason as LockLostError).reason).toBe('released');
    // Extending after the release always rejects the same way.
    await expect(lock.extend('1m')).rejects.toBeInstanceOf(LockLostError);
  });
});

import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import { DeleteItemCommand } from '@aws-sdk/client-dynamodb';
import type { LockEvent, LockEventOf } from '../../lib';
import { injectFaults } from '../support/fault-injection';
import { LockFixture } from '../support/lock-fixture';
import { describeEachServer } from '../support/servers';

let seq = 0;
const newKey = (name: string) => `${name}-${++seq}`;

describeEachServer('lock events (onEvent)', (server) => {
  const fixture = new LockFixture(server);
  beforeAll(() => fixture.setup());
  afterAll(() => fixture.close());

  function recorded() {
    const events: LockEvent[] = [];
    return {
      events,
      onEvent: (event: LockEvent) => events.push(event),
      types: () => events.map((e) => `${e.type}${'via' in e ? `:${e.via}` : ''}`),
    };
  }

  it('reports acquired, extended and released, in order, with tokens and timings', async () => {
    const log = recorded();
    const manager = fixture.manager({ ownerName: 'ev', onEvent: log.onEvent });
    const key = newKey('basic');
    const lock = await manager.acquire(key);
    await lock.extend('40s');
    await lock.release();
    expect(log.types()).toEqual(['acquired:free', 'extended', 'released']);
    expect(log.events[0]).toMatchObject({ key, owner: 'ev', fencingToken: lock.fencingToken, waitedMs: expect.any(Number) });
    expect(log.events[1]).toMatchObject({ leaseMs: 40_000 });
    expect(log.events[2]).toMatchObject({ fencingToken: lock.fencingToken, handedOver: false, heldMs: expect.any(Number) });
  });

  it('reports a local hand-over and a busy attempt', async () => {
    const log = recorded();
    const manager = fixture.manager({ onEvent: log.onEvent });
    const other = fixture.manager({ onEvent: log.onEvent, ownerName: 'other' });
    const key = newKey('handover');
    const first = await manager.acquire(key);
    const second = manager.acquire(key);
    expect(await other.tryAcquire(key)).toBeNull();
    await first.release();
    await (await second).release();
    expect(log.types()).toEqual(['acquired:free', 'waiting', 'busy', 'released', 'acquired:handover', 'released']);
    expect(log.events[1]).toMatchObject({
      type: 'waiting',
      owner: manager.options.ownerName,
      holder: { fencingToken: first.fencingToken },
    });
    expect(log.events[2]).toMatchObject({ type: 'busy', owner: 'other', holder: { fencingToken: first.fencingToken } });
    expect(log.events[3]).toMatchObject({ type: 'released', handedOver: true });
  });

  it('reports a takeover to the new holder and the loss to the old one', async () => {
    const log = recorded();
    const dead = fixture.manager({ ownerName: 'dead', onEvent: log.onEvent });
    const waiter = fixture.manager({ ownerName: 'waiter', onEvent: log.onEvent });
    const key = newKey('takeover');
    await dead.acquire(key, { leaseDuration: 600, heartbeat: false });
    const lock = await waiter.acquire(key, { wait: '10s' });
    await sleep(50);
    const types = log.events.map((e) => `${e.owner}:${e.type}${'via' in e ? `:${e.via}` : ''}${'reason' in e ? `:${e.reason}` : ''}`);
    expect(types).toEqual(['dead:acquired:free', 'waiter:waiting', 'dead:lost:expired', 'waiter:takeover', 'waiter:acquired:takeover']);
    const deadToken = (log.events[0] as LockEventOf<'acquired'>).fencingToken;
    expect(log.events[1]).toMatchObject({ holder: { owner: 'dead', fencingToken: deadToken } });
    expect(log.events[3]).toMatchObject({ fencingToken: lock.fencingToken, previousHolder: { owner: 'dead', fencingToken: deadToken } });
    await lock.release();
  });

  it('reports a waiter of another process: waiting (with the holder), then its turn', async () => {
    const log = recorded();
    const holder = fixture.manager({ ownerName: 'holder', onEvent: log.onEvent });
    const waiter = fixture.manager({ ownerName: 'waiter', onEvent: log.onEvent });
    const key = newKey('remote');
    const held = await holder.acquire(key);
    const waiting = waiter.acquire(key, { wait: '10s' });
    for (let i = 0; i < 200 && !log.events.some((e) => e.type === 'waiting'); i++) await sleep(10);
    await held.release();
    const lock = await waiting;
    await lock.release();
    const types = log.events.map((e) => `${e.owner}:${e.type}${'via' in e ? `:${e.via}` : ''}`);
    // Promoted by the release when the holder had seen the queue (its heartbeat), else first of the queue.
    const granted = log.events.find((e) => e.owner === 'waiter' && e.type === 'acquired') as LockEventOf<'acquired'>;
    const via = granted.via;
    // Two managers answer in their own time: the waiter may read the release before the holder's answer to it.
    expect(types.filter((t) => t.startsWith('holder:'))).toEqual(['holder:acquired:free', 'holder:released']);
    expect(types.filter((t) => t.startsWith('waiter:'))).toEqual(['waiter:waiting', `waiter:acquired:${via}`, 'waiter:released']);
    expect(types.slice(0, 2)).toEqual(['holder:acquired:free', 'waiter:waiting']);
    expect(['promotion', 'queue-head']).toContain(via);
    expect(log.events[1]).toMatchObject({ key, holder: { owner: 'holder', fencingToken: held.fencingToken } });
    expect(lock.fencingToken).toBe(held.fencingToken + 1);
  });

  it('adds and removes listeners with subscribe(), next to onEvent', async () => {
    const log = recorded();
    const seen: string[] = [];
    const manager = fixture.manager({ onEvent: log.onEvent });
    const unsubscribe = manager.subscribe((event) => seen.push(event.type));
    const key = newKey('subscribe');
    await (await manager.acquire(key)).release();
    unsubscribe();
    await (await manager.acquire(key)).release();
    expect(seen).toEqual(['acquired', 'released']);
    expect(log.types()).toEqual(['acquired:free', 'released', 'acquired:free', 'released']);
  });

  it('reports release-failed when the release write fails, and when the lock was no longer held', async () => {
    const log = recorded();
    const manager = fixture.manager({ ownerName: 'rf', onEvent: log.onEvent });
    const failing = await manager.acquire(newKey('release-error'));
    injectFaults(manager.client).failNext('UpdateItem', { kind: 'server-error', times: 20 });
    await expect(failing.release()).rejects.toThrow(/Injected fault/);
    // Another manager (the faults left over stay with the first one's client).
    const gone = await fixture.manager({ ownerName: 'rf', onEvent: log.onEvent }).acquire(newKey('release-gone'));
    // The item disappears under the holder (deleted by hand): its release finds nothing to release.
    await fixture.client.send(new DeleteItemCommand({ TableName: fixture.tableName, Key: { key: { S: gone.key } } }));
    expect(await gone.release()).toBe(false);
    expect(log.types()).toEqual(['acquired:free', 'release-failed', 'acquired:free', 'release-failed']);
    expect(log.events[1]).toMatchObject({
      key: failing.key,
      fencingToken: failing.fencingToken,
      outcome: 'error',
      error: expect.any(Error),
    });
    expect(log.events[3]).toMatchObject({ key: gone.key, fencingToken: gone.fencingToken, outcome: 'not-held' });
    expect(log.events[3]).not.toHaveProperty('error', expect.anything());
  });

  it('tells of a lock whose caller gave up while its write was in flight only that it was cleaned up, and frees it', async () => {
    const log = recorded();
    const manager = fixture.manager({ onEvent: log.onEvent });
    // Every request of this manager takes 300 ms more.
    manager.client.middlewareStack.add((next) => async (args) => (await sleep(300), next(args)), { step: 'finalizeRequest' });
    const key = newKey('gave-up');
    const controller = new AbortController();
    const attempt = manager.acquire(key, { signal: controller.signal });
    await sleep(100);
    controller.abort(new Error('caller gave up'));
    await expect(attempt).rejects.toThrow('caller gave up');
    // The write lands, the lock is held by nobody who knows it, and it is released at once.
    for (let i = 0; i < 100 && (await fixture.manager().inspect(key)) === null; i++) await sleep(20);
    for (let i = 0; i < 100 && (await fixture.manager().inspect(key)) !== null; i++) await sleep(20);
    expect(await fixture.manager().inspect(key)).toBeNull();
    // No acquired/released pair (no caller ever held it): one clean-up.
    expect(log.events).toEqual([{ type: 'cleanup', key, owner: manager.options.ownerName, outcome: 'released' }]);
  });

  it('logs the rejection of an async listener instead of leaving it unhandled', async () => {
    const manager = fixture.manager({
      onEvent: async (event) => {
        await sleep(1);
        throw new Error(`async listener bug on ${event.type}`);
      },
    });
    await (await manager.acquire(newKey('async-listener'))).release();
    await sleep(20);
    const warnings = manager.logger.at('warn');
    expect(warnings.filter((m) => m.includes('Lock event listener threw on "acquired"'))).toHaveLength(1);
    expect(warnings.some((m) => m.includes('async listener bug on released'))).toBe(true);
  });

  it('reports retries after transient errors, and survives a listener that throws', async () => {
    const events: LockEvent[] = [];
    const manager = fixture.manager({
      onEvent: (event) => {
        events.push(event);
        throw new Error('listener bug');
      },
    });
    injectFaults(manager.client).failNext('UpdateItem', { kind: 'server-error', times: 4 });
    const lock = await manager.acquire(newKey('retry'), { wait: '20s' });
    expect(events.map((e) => e.type)).toEqual(['retry', 'acquired']);
    expect(events[0]).toMatchObject({ operation: 'acquire', delayMs: expect.any(Number) });
    expect(manager.logger.at('warn').some((m) => m.includes('Lock event listener threw on "retry"'))).toBe(true);
    await lock.release();
  }, 30_000);
});

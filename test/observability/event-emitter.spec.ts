/**
 * `@nestjs/event-emitter`: lock events reach `@OnEvent` listeners of a Nest app as
 * `dynamo-lock.<type>`, in order, from a `@WithLock` method and from a second app instance;
 * the `eventEmitter` option turns the bridge off, or makes a missing EventEmitterModule a
 * start-up error. Locks on a real server.
 */
import { afterAll, afterEach, beforeAll, expect, it } from '@jest/globals';
import { Injectable, type INestApplication, type ModuleMetadata } from '@nestjs/common';
import { EventEmitterModule, OnEvent } from '@nestjs/event-emitter';
import { Test } from '@nestjs/testing';
import {
  DynamoLockModule,
  type DynamoLockOptions,
  LOCK_EVENT_NAMES,
  type LockEvent,
  type LockEventOf,
  LockBusyError,
  LockService,
  WithLock,
} from '../../lib';
import { LockFixture } from '../support/lock-fixture';
import { describeEachServer } from '../support/servers';

@Injectable()
class LockEventLog {
  readonly events: LockEvent[] = [];
  readonly lost: LockEventOf<'lost'>[] = [];

  @OnEvent('dynamo-lock.*')
  onAny(event: LockEvent) {
    this.events.push(event);
  }

  @OnEvent(LOCK_EVENT_NAMES.lost)
  onLost(event: LockEventOf<'lost'>) {
    this.lost.push(event);
  }

  types(): string[] {
    return this.events.map((e) => `${e.owner}:${e.type}`);
  }
}

@Injectable()
class InvoiceService {
  @WithLock('invoice-<0>', { wait: false })
  async pay(id: string): Promise<string> {
    return `paid ${id}`;
  }
}

let seq = 0;

describeEachServer('lock events on @nestjs/event-emitter', (server) => {
  const fixture = new LockFixture(server);
  const apps: INestApplication[] = [];
  beforeAll(() => fixture.setup());
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });
  afterAll(() => fixture.close());

  const options = (extra: DynamoLockOptions = {}): DynamoLockOptions => fixture.moduleOptions(extra);

  async function boot(imports: ModuleMetadata['imports'], providers: ModuleMetadata['providers'] = []) {
    const moduleRef = await Test.createTestingModule({ imports, providers }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    apps.push(app);
    await app.init();
    return app;
  }

  it('emits every event of a @WithLock call and of LockService, in order, to @OnEvent listeners', async () => {
    const app = await boot(
      [EventEmitterModule.forRoot({ wildcard: true }), DynamoLockModule.forRoot(options({ ownerName: 'app' }))],
      [LockEventLog, InvoiceService],
    );
    const log = app.get(LockEventLog);
    const id = `e-${++seq}`;
    expect(await app.get(InvoiceService).pay(id)).toBe(`paid ${id}`);
    const locks = app.get(LockService);
    const lock = await locks.acquire(`invoice-${id}`);
    await lock.extend('1m');
    await expect(app.get(InvoiceService).pay(id)).rejects.toThrow(LockBusyError);
    await lock.release();
    expect(log.types()).toEqual(['app:acquired', 'app:released', 'app:acquired', 'app:extended', 'app:busy', 'app:released']);
    expect(log.events.every((e) => e.key === `invoice-${id}`)).toBe(true);
    expect(log.events[2]).toMatchObject({ type: 'acquired', fencingToken: lock.fencingToken, via: 'free' });
    expect(log.events[4]).toMatchObject({ type: 'busy', holder: { owner: 'app', fencingToken: lock.fencingToken } });
  });

  it('delivers the loss of a lock to a listener of its exact name', async () => {
    const app = await boot([EventEmitterModule.forRoot(), DynamoLockModule.forRoot(options({ ownerName: 'a' }))], [LockEventLog]);
    const log = app.get(LockEventLog);
    const locks = app.get(LockService);
    const key = `lost-${++seq}`;
    const lost = await locks.acquire(key, { leaseDuration: 300, heartbeat: false });
    await new Promise((resolve) => setTimeout(resolve, 350));
    expect(lost.isHeld).toBe(false);
    expect(log.lost).toEqual([expect.objectContaining({ key, reason: 'expired', fencingToken: lost.fencingToken })]);
    // Without wildcards only the exact names are delivered: the catch-all saw nothing.
    expect(log.events).toEqual([]);
  });

  it("emits nothing with eventEmitter: false, and 'auto' boots without EventEmitterModule", async () => {
    const off = await boot(
      [EventEmitterModule.forRoot({ wildcard: true }), DynamoLockModule.forRoot(options({ eventEmitter: false }))],
      [LockEventLog],
    );
    await (await off.get(LockService).acquire(`off-${++seq}`)).release();
    expect(off.get(LockEventLog).events).toEqual([]);

    const auto = await boot([DynamoLockModule.forRoot(options())]);
    await (await auto.get(LockService).acquire(`auto-${++seq}`)).release();
  });

  it('fails the start-up with eventEmitter: true and no EventEmitterModule, naming the fix', async () => {
    const moduleRef = await Test.createTestingModule({ imports: [DynamoLockModule.forRoot(options({ eventEmitter: true }))] }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await expect(app.init()).rejects.toThrow(
      /"eventEmitter" is true, but the app has no EventEmitter2: install @nestjs\/event-emitter and import EventEmitterModule\.forRoot\(\)/,
    );
    await app.close();
  });

  it('works with the in-memory store of forTesting()', async () => {
    const app = await boot(
      [EventEmitterModule.forRoot({ wildcard: true }), DynamoLockModule.forTesting({ ownerName: 'mem' })],
      [LockEventLog],
    );
    await app.get(LockService).withLock(`mem-${++seq}`, () => undefined);
    expect(app.get(LockEventLog).types()).toEqual(['mem:acquired', 'mem:released']);
  });
});

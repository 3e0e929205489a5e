import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  Body,
  Controller,
  type DynamicModule,
  Get,
  type INestApplication,
  Injectable,
  Module,
  Param,
  Post,
  Scope,
  UseInterceptors,
} from '@nestjs/common';
import { Cron, Interval, ScheduleModule, SchedulerRegistry } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { setTimeout as sleep } from 'node:timers/promises';
import { from, lastValueFrom, map, Observable, switchMap, take, timer } from 'rxjs';
import {
  DynamoLockModule,
  type DynamoLockOptions,
  LockBusyError,
  LockConfigurationError,
  LockInterceptor,
  type LockKeyInvalidBody,
  type LockKeyProblem,
  LockKeyTemplate,
  LockService,
  LockValidationError,
  WithLock,
  type WithLockOptions,
} from '../../lib';
import { LockFixture, MemoryLogger } from '../support/lock-fixture';
import { describeEachServer } from '../support/servers';

/** A service whose locked methods record what they saw. */
@Injectable()
class InvoiceService {
  readonly seen: { key?: string; token?: number }[] = [];
  inside = 0;
  maxInside = 0;

  constructor(readonly locks: LockService) {}

  @WithLock('invoice-<0>', { wait: '10s' })
  async pay(id: string, delayMs = 20): Promise<string> {
    this.inside++;
    this.maxInside = Math.max(this.maxInside, this.inside);
    const lock = this.locks.current();
    this.seen.push({ key: lock?.key, token: lock?.fencingToken });
    await sleep(delayMs);
    this.inside--;
    return `paid ${id}`;
  }

  /** Calls a locked method of its own: re-entrant on the same key. */
  @WithLock('invoice-<0>')
  async payTwice(id: string): Promise<string> {
    const outer = this.locks.current()!.fencingToken;
    await this.pay(id, 1);
    return `${outer === this.seen.at(-1)?.token}`;
  }

  @WithLock('order-<0.customer.id>', { wait: false })
  async order(_order: { customer: { id: number } }): Promise<number> {
    return this.locks.current()!.fencingToken;
  }

  @WithLock('plain')
  async plainValue(): Promise<number> {
    return 7;
  }

  @WithLock('stream-<0>')
  stream(_id: string): Observable<number> {
    return timer(0, 30).pipe(take(3));
  }

  /** An Observable whose stream calls a locked method on the same key: re-entrant, as in a Promise. */
  @WithLock('invoice-<0>')
  streamPay(id: string): Observable<string> {
    return timer(5).pipe(
      switchMap(() => from(this.pay(id, 1))),
      map(() => `${this.locks.current()?.key} ${this.seen.at(-1)?.key}`),
    );
  }

  @WithLock('skip-<0>', { onBusy: 'skip', holdAtLeast: 0 })
  async skippable(id: string): Promise<string | undefined> {
    await sleep(200);
    return `ran ${id}`;
  }

  @WithLock('fails')
  async fails(): Promise<void> {
    throw new Error('business error');
  }
}

/** Another provider calling the locked service. */
@Injectable()
class BillingRun {
  constructor(private readonly invoices: InvoiceService) {}
  run(ids: string[]) {
    return Promise.all(ids.map((id) => this.invoices.pay(id)));
  }
}

@Injectable({ scope: Scope.REQUEST })
class RequestScopedService {
  constructor(private readonly locks: LockService) {}
  @WithLock('scoped-<0>')
  async work(_id: string) {
    return this.locks.current()?.key;
  }
}

@Controller('invoices')
@UseInterceptors(LockInterceptor)
class InvoiceController {
  constructor(
    private readonly invoices: InvoiceService,
    private readonly scoped: RequestScopedService,
  ) {}

  @Post(':id/pay')
  @WithLock('invoice-<0>', { wait: false })
  async pay(@Param('id') id: string) {
    // The service's lock on the same key is re-entrant: locked once, not twice.
    return { result: await this.invoices.pay(id, 300) };
  }

  @Post(':id/pay-exposed')
  @UseInterceptors(new LockInterceptor({ exposeHolder: true }))
  @WithLock('invoice-<0>', { wait: false })
  async payExposed(@Param('id') id: string) {
    return { result: await this.invoices.pay(id, 300) };
  }

  /** The key comes from the request body: a body without the customer makes no key. */
  @Post('orders')
  async order(@Body() order: { customer: { id: number } }) {
    return { token: await this.invoices.order(order) };
  }

  @Get(':id/scoped')
  async scopedWork(@Param('id') id: string) {
    return this.scoped.work(id);
  }
}

/** Cron jobs with the decorators in both orders. */
@Injectable()
class Jobs {
  readonly runs: Record<string, number> = { cronAbove: 0, cronBelow: 0, interval: 0 };

  @Cron('* * * * * *', { name: 'cron-above' })
  @WithLock('job-cron-above', { onBusy: 'skip', holdAtLeast: 0 })
  async cronAbove() {
    this.runs.cronAbove++;
  }

  @WithLock('job-cron-below', { onBusy: 'skip', holdAtLeast: 0 })
  @Cron('* * * * * *', { name: 'cron-below' })
  async cronBelow() {
    this.runs.cronBelow++;
  }

  @WithLock('job-interval', { onBusy: 'skip', holdAtLeast: 0 })
  @Interval('interval-job', 200)
  async interval() {
    this.runs.interval++;
  }
}

describeEachServer('@WithLock', (server) => {
  const fixture = new LockFixture(server);
  let app: INestApplication;
  let baseUrl: string;

  const options = (extra: DynamoLockOptions = {}): DynamoLockOptions => fixture.moduleOptions(extra);
  /** Resolves once `key` is held (the first request got its lock), however slow the machine. */
  const untilHeld = async (key: string): Promise<void> => {
    const reader = fixture.manager();
    for (let i = 0; i < 500 && !(await reader.inspect(key)); i++) await sleep(5);
  };

  beforeAll(async () => {
    await fixture.setup();
    const moduleRef = await Test.createTestingModule({
      imports: [DynamoLockModule.forRoot(options({ ownerName: 'decorated' })), ScheduleModule.forRoot()],
      providers: [InvoiceService, BillingRun, RequestScopedService, Jobs],
      controllers: [InvoiceController],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    baseUrl = await app.getUrl();
    baseUrl = baseUrl.replace('[::1]', '127.0.0.1');
  });
  afterAll(async () => {
    await app?.close();
    await fixture.close();
  });

  it('locks on the rendered key and exposes the lock through current()', async () => {
    const service = app.get(InvoiceService);
    expect(await service.pay('A-1')).toBe('paid A-1');
    expect(service.seen.at(-1)?.key).toBe('invoice-A-1');
    expect(await service.order({ customer: { id: 9 } })).toBeGreaterThan(0);
    expect(await fixture.manager().inspect('invoice-A-1')).toBeNull();
  });

  it('excludes concurrent calls from other providers on one key, not on different keys', async () => {
    const service = app.get(InvoiceService);
    service.maxInside = 0;
    await app.get(BillingRun).run(['same', 'same', 'same']);
    expect(service.maxInside).toBe(1);
    service.maxInside = 0;
    await app.get(BillingRun).run(['x1', 'x2', 'x3']);
    expect(service.maxInside).toBeGreaterThan(1);
  });

  it('is re-entrant for this.method() calls on the same key', async () => {
    expect(await app.get(InvoiceService).payTwice('re')).toBe('true');
  });

  it('returns a Promise for plain values and releases when the method throws', async () => {
    const service = app.get(InvoiceService);
    await expect(service.plainValue()).resolves.toBe(7);
    await expect(service.fails()).rejects.toThrow('business error');
    expect(await fixture.manager().inspect('fails')).toBeNull();
  });

  it('holds the lock while an Observable result runs, releasing when it completes', async () => {
    const service = app.get(InvoiceService);
    const probe = fixture.manager();
    // What happened in order, by the lock's own events (a read of the item, timed by a sleep, can
    // land after a 60 ms stream ended on a loaded server).
    const order: string[] = [];
    let released: () => void = () => undefined;
    const releasedNow = new Promise<void>((resolve) => (released = resolve));
    const stop = app.get(LockService).subscribe((event) => {
      if (event.key !== 'stream-s1' || (event.type !== 'acquired' && event.type !== 'released')) return;
      order.push(event.type);
      if (event.type === 'released') released();
    });
    const values: number[] = [];
    const done = lastValueFrom(
      service.stream('s1').pipe(
        map((v) => {
          order.push(`value ${v}`);
          return values.push(v);
        }),
      ),
    );
    await done;
    // Released as the stream completes (its finalizer writes the release).
    await releasedNow;
    stop();
    expect(values).toEqual([0, 1, 2]);
    expect(order).toEqual(['acquired', 'value 0', 'value 1', 'value 2', 'released']);
    expect(await probe.inspect('stream-s1')).toBeNull();
  });

  it('runs an Observable result holding the lock: current() and re-entrant calls work inside the stream', async () => {
    const service = app.get(InvoiceService);
    const started = performance.now();
    expect(await lastValueFrom(service.streamPay('o1'))).toBe('invoice-o1 invoice-o1');
    // The nested call did not wait for its caller's lock (10 s of waiting, then busy).
    expect(performance.now() - started).toBeLessThan(3_000);
  });

  it('releases when an Observable result is unsubscribed', async () => {
    const service = app.get(InvoiceService);
    const probe = fixture.manager();
    const subscription = service.stream('s2').subscribe();
    await sleep(40);
    expect(await probe.inspect('stream-s2')).not.toBeNull();
    subscription.unsubscribe();
    await sleep(50);
    expect(await probe.inspect('stream-s2')).toBeNull();
  });

  it('skips without running when busy and onBusy is skip', async () => {
    const service = app.get(InvoiceService);
    const [first, second] = await Promise.all([service.skippable('k'), sleep(50).then(() => service.skippable('k'))]);
    expect(first).toBe('ran k');
    expect(second).toBeUndefined();
  });

  it('throws LockBusyError when busy and onBusy is throw', async () => {
    const holder = fixture.manager({ ownerName: 'other-instance' });
    const lock = await holder.acquire('order-77');
    const error = await app
      .get(InvoiceService)
      .order({ customer: { id: 77 } })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockBusyError);
    expect((error as LockBusyError).holder?.owner).toBe('other-instance');
    await lock.release();
  });

  it('rejects a call whose argument cannot make a key, without locking', async () => {
    const error = await app
      .get(InvoiceService)
      .order({ customer: {} } as never)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockValidationError);
    expect((error as Error).message).toMatch(/<0.customer.id> is undefined in this call/);
  });

  it('works on request-scoped providers', async () => {
    const response = await fetch(`${baseUrl}/invoices/r1/scoped`);
    expect(response.status).toBe(200);
    expect(await response.text()).toBe('scoped-r1');
  });

  describe('LockInterceptor', () => {
    it('answers 409 with the resource and Retry-After while the invoice is locked, and locks once per request', async () => {
      const slow = fetch(`${baseUrl}/invoices/H1/pay`, { method: 'POST' });
      await untilHeld('invoice-H1');
      const busy = await fetch(`${baseUrl}/invoices/H1/pay`, { method: 'POST' });
      expect(busy.status).toBe(409);
      // Nothing is known of how long this key is held: the holder's lease.
      expect(busy.headers.get('retry-after')).toBe('30');
      const body = (await busy.json()) as Record<string, unknown>;
      // The holder (host:pid) and its fencing token are internal: not told by default.
      expect(body).toEqual({
        statusCode: 409,
        error: 'Conflict',
        message: 'Resource "invoice-H1" is locked by another operation; try again later.',
        resource: 'invoice-H1',
      });
      const ok = await slow;
      expect(ok.status).toBe(201);
      expect(await ok.json()).toEqual({ result: 'paid H1' });
    });

    it('tells the holder only with exposeHolder, and Retry-After from how long the key is usually held', async () => {
      // Two holds of ~300 ms teach this process how long the key is usually held.
      for (let i = 0; i < 2; i++) expect((await fetch(`${baseUrl}/invoices/H2/pay`, { method: 'POST' })).status).toBe(201);
      const slow = fetch(`${baseUrl}/invoices/H2/pay-exposed`, { method: 'POST' });
      await untilHeld('invoice-H2');
      const busy = await fetch(`${baseUrl}/invoices/H2/pay-exposed`, { method: 'POST' });
      expect(busy.status).toBe(409);
      expect(busy.headers.get('retry-after')).toBe('1');
      const body = (await busy.json()) as Record<string, unknown>;
      expect(body).toMatchObject({ statusCode: 409, resource: 'invoice-H2', holder: 'decorated', fencingToken: expect.any(Number) });
      expect(body.message).toMatch(/^Lock "invoice-H2" is held by "decorated" \(fencing token \d+\)/);
      expect((await slow).status).toBe(201);
    });

    it("answers 400, naming neither class nor template nor value, when the request's values make no key", async () => {
      const post = (path: string, body?: unknown) =>
        fetch(`${baseUrl}${path}`, {
          method: 'POST',
          ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
        });
      const cases: [Response, LockKeyProblem, string][] = [
        [await post('/invoices/%20%20/pay'), 'blank', 'a value it is built from is only whitespace'],
        [await post(`/invoices/${'x'.repeat(2_100)}/pay`), 'too-long', 'it would be too long'],
        [await post('/invoices/orders', { customer: {} }), 'missing', 'a value it is built from is missing'],
        [
          await post('/invoices/orders', { customer: { id: { nested: 1 } } }),
          'object',
          'a value it is built from is an object, not a text or a number',
        ],
      ];
      for (const [response, problem, reason] of cases) {
        expect(response.status).toBe(400);
        expect(await response.json()).toEqual({
          statusCode: 400,
          error: 'Bad Request',
          problem,
          message: `This request does not make a valid lock key: ${reason}. Check the request's values.`,
        } satisfies LockKeyInvalidBody);
      }
      // A valid body still gets its lock.
      const ok = await post('/invoices/orders', { customer: { id: 5 } });
      expect(ok.status).toBe(201);
      expect(await ok.json()).toEqual({ token: expect.any(Number) });
    });

    it('leaves other errors alone', async () => {
      const response = await fetch(`${baseUrl}/invoices/none/unknown`);
      expect(response.status).toBe(404);
    });
  });

  describe('with @nestjs/schedule', () => {
    it('keeps cron and interval jobs registered and running in either decorator order', async () => {
      const registry = app.get(SchedulerRegistry);
      expect(registry.getCronJob('cron-above')).toBeDefined();
      expect(registry.getCronJob('cron-below')).toBeDefined();
      expect(registry.getInterval('interval-job')).toBeDefined();
      const jobs = app.get(Jobs);
      await sleep(2_300);
      expect(jobs.runs.cronAbove).toBeGreaterThanOrEqual(2);
      expect(jobs.runs.cronBelow).toBeGreaterThanOrEqual(2);
      expect(jobs.runs.interval).toBeGreaterThanOrEqual(5);
    });
  });
});

describe('@WithLock at start-up', () => {
  it('rejects a template naming a missing argument when the class is defined', () => {
    let error: unknown;
    try {
      class Broken {
        @WithLock('invoice-<1>')
        async pay(id: string) {
          return id;
        }
      }
      void Broken;
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(LockValidationError);
    expect((error as Error).message).toMatch(/^@WithLock\('invoice-<1>'\) on Broken\.pay: <1> names an argument the method does not have/);
  });

  it('rejects, when the class is defined, fixed text that leaves no room for a key', () => {
    expect(() => {
      class Broken {
        @WithLock(`${'x'.repeat(2_047)}-<0>`)
        async pay(id: string) {
          return id;
        }
      }
      void Broken;
    }).toThrow(/^@WithLock\('x{100}.*'\) on Broken\.pay: every key it makes is at least 2049 bytes in UTF-8; DynamoDB allows at most 2048/);
    expect(() => {
      class Fits {
        @WithLock(`${'x'.repeat(2_046)}-<0>`)
        async pay(id: string) {
          return id;
        }
      }
      void Fits;
    }).not.toThrow();
  });

  it('fails the boot, naming the method, when a template makes every key too long with keyPrefix (or a semaphore suffix); a request-scoped class at its call, as a logged 500', async () => {
    const bootError = async (provider: new (...args: never[]) => unknown) => {
      const moduleRef = await Test.createTestingModule({
        imports: [DynamoLockModule.forTesting({ keyPrefix: 'p'.repeat(60) })],
        providers: [provider],
      }).compile();
      const app = moduleRef.createNestApplication({ logger: false });
      const error = await app.init().catch((e: unknown) => e);
      await app.close();
      return error;
    };
    @Injectable()
    class Reports {
      @WithLock(`${'r'.repeat(2_000)}-<0>`)
      async run(id: string) {
        return id;
      }
    }
    const error = await bootError(Reports);
    expect(error).toBeInstanceOf(LockConfigurationError);
    expect((error as Error).message).toMatch(
      /^@WithLock\('r{100}.*'\) on Reports\.run: every key it makes is at least 2062 bytes in UTF-8 with keyPrefix "p{60}"; .* Use shorter fixed text or a shorter keyPrefix\.$/,
    );
    // Fits as a mutex with the prefix (2,047 bytes at least), not as a semaphore (10 bytes more).
    @Injectable()
    class Pool {
      @WithLock(`${'s'.repeat(1_985)}-<0>`, { limit: 2 })
      async run(id: string) {
        return id;
      }
    }
    const semaphore = await bootError(Pool);
    expect(semaphore).toBeInstanceOf(LockConfigurationError);
    expect((semaphore as Error).message).toMatch(
      /^@WithLock\('s{100}.*'\) on Pool\.run: every key it makes is at least 2057 bytes .* and the 10-byte suffix/,
    );
    // A method named by a symbol is checked too.
    const job = Symbol('job');
    @Injectable()
    class Symbolic {
      @WithLock(`${'r'.repeat(2_000)}-<0>`)
      async [job](id: string) {
        return id;
      }
    }
    expect(await bootError(Symbolic)).toMatchObject({
      message: expect.stringMatching(/ on Symbolic\.Symbol\(job\): every key it makes is at least 2062 bytes/),
    });

    const logged: string[] = [];
    @Controller({ path: 'reports', scope: Scope.REQUEST })
    @UseInterceptors(LockInterceptor)
    class ReportController {
      @Post(':id')
      @WithLock(`${'r'.repeat(2_000)}-<0>`)
      async run(@Param('id') id: string) {
        return id;
      }

      /** Fits as a mutex key with the prefix, not as a semaphore's. */
      @Post('pool/:id')
      @WithLock(`${'s'.repeat(1_985)}-<0>`, { limit: 2 })
      async pool(@Param('id') id: string) {
        return id;
      }
    }
    const scoped = await Test.createTestingModule({
      imports: [DynamoLockModule.forTesting({ keyPrefix: 'p'.repeat(60) })],
      controllers: [ReportController],
    }).compile();
    const web = scoped.createNestApplication({
      logger: { log() {}, warn() {}, debug() {}, verbose() {}, error: (message: unknown) => void logged.push(String(message)) },
    });
    await web.listen(0, '127.0.0.1');
    const url = (await web.getUrl()).replace('[::1]', '127.0.0.1');
    // Not the request's fault: a server error that Nest logs, not a silent 400.
    expect((await fetch(`${url}/reports/7`, { method: 'POST' })).status).toBe(500);
    expect(logged.join('\n')).toMatch(/on ReportController\.run: every key it makes is at least 2062 bytes/);
    expect((await fetch(`${url}/reports/pool/7`, { method: 'POST' })).status).toBe(500);
    expect(logged.join('\n')).toMatch(/on ReportController\.pool: every key it makes is at least 2057 bytes .* and the 10-byte suffix/);
    await web.close();
  });

  it('boots with a stand-in LockService that has no options (a unit test of a decorated class)', async () => {
    @Injectable()
    class Reports {
      @WithLock('report-<0>')
      async run(id: string) {
        return id;
      }
    }
    const moduleRef = await Test.createTestingModule({
      providers: [Reports, { provide: LockService, useValue: { acquire: () => Promise.reject(new Error('not in this test')) } }],
    }).compile();
    await expect(moduleRef.init()).resolves.toBeDefined();
    await moduleRef.close();
  });

  it('rejects a malformed template when the class is defined', () => {
    expect(() => {
      class Broken {
        @WithLock('invoice-<id>')
        async pay(id: string) {
          return id;
        }
      }
      void Broken;
    }).toThrow(/@WithLock\('invoice-<id>'\) on Broken.pay: malformed template/);
  });

  /** An app (not yet started) whose `@WithLock` class sits in a module that does not import `locks`. */
  async function appWithIsolatedClass(locks: DynamicModule): Promise<INestApplication> {
    @Injectable()
    class Isolated {
      @WithLock('iso')
      async run() {
        return 1;
      }
    }
    @Module({ providers: [Isolated] })
    class IsolatedModule {}
    @Module({ imports: [locks] })
    class LocksModule {}
    const moduleRef = await Test.createTestingModule({ imports: [LocksModule, IsolatedModule] }).compile();
    return moduleRef.createNestApplication({ logger: false });
  }

  it('fails the boot, naming the class, when its module cannot reach LockService', async () => {
    const app = await appWithIsolatedClass(DynamoLockModule.forRoot({ isGlobal: false, verifyTable: false, logger: new MemoryLogger() }));
    const error = await app.init().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockConfigurationError);
    expect((error as Error).message).toMatch(
      /^Isolated\.run uses @WithLock, but no LockService is available to it\. Import DynamoLockModule/,
    );
    await app.close();
  });

  it('rejects bad options when the class is defined, naming the method and the option', () => {
    const define = (options: Record<string, unknown>) => () => {
      class Job {
        @WithLock('job', options as WithLockOptions)
        async run() {
          return 1;
        }
      }
      void Job;
    };
    expect(define({ wait: '10 secs!' })).toThrow(/^@WithLock on Job\.run: wait must be a positive duration; got "10 secs!"/);
    expect(define({ leaseDuration: 'abc' })).toThrow(/^@WithLock on Job\.run: leaseDuration must be a positive duration; got "abc"/);
    expect(define({ holdAtLeast: '-1s' })).toThrow(/^@WithLock on Job\.run: holdAtLeast must be a positive duration/);
    expect(define({ onBusy: 'Skip' })).toThrow(`@WithLock on Job.run: option "onBusy" must be 'throw' or 'skip'; got "Skip".`);
    expect(define({ heartbeat: 'no' })).toThrow(`@WithLock on Job.run: option "heartbeat" must be true or false; got "no".`);
    expect(define({ onbusy: 'skip' })).toThrow(/^@WithLock on Job\.run has no option "onbusy"; did you mean "onBusy"\?/);
    expect(define({ wait: 0, leaseDuration: '1m', onBusy: 'skip', heartbeat: false, holdAtLeast: 0 })).not.toThrow();
  });

  it('rejects, when the class is defined, a method declared to return neither a Promise nor an Observable', () => {
    const defineSync = () => {
      class Calculator {
        // @ts-expect-error a synchronous result cannot stay synchronous under a lock
        @WithLock('calc')
        add(a: number, b: number): number {
          return a + b;
        }
      }
      return Calculator;
    };
    expect(defineSync).toThrow(LockValidationError);
    expect(defineSync).toThrow(
      /Calculator\.add: the method must return a Promise or an Observable, but is declared to return Number\. Make it async/,
    );
    class Invoice {}
    const defineClass = () => {
      class Invoices {
        // @ts-expect-error a class instance cannot stay synchronous under a lock either
        @WithLock('invoices')
        load(): Invoice {
          return new Invoice();
        }
      }
      return Invoices;
    };
    expect(defineClass).toThrow(/Invoices\.load: .*declared to return Invoice/);
  });

  it('accepts async methods whatever their declared type says, and leaves unreadable declarations to run time', () => {
    // As tsc records them: `Object` for a type alias (`type Paid = Promise<string>`), `import type`,
    // a union or `unknown`; swc may record something else, so the metadata is set by hand here.
    const decorate = (declared: unknown, method: (id: string) => unknown) => {
      class Payments {}
      const proto = Payments.prototype as { method?: (id: string) => unknown };
      proto.method = method;
      Reflect.defineMetadata('design:returntype', declared, proto, 'method');
      const descriptor = Object.getOwnPropertyDescriptor(proto, 'method')!;
      return () => WithLock('payments-<0>')(proto, 'method', descriptor as TypedPropertyDescriptor<(id: string) => Promise<unknown>>);
    };
    expect(decorate(Object, async (id) => id)).not.toThrow();
    expect(decorate(Number, async (id) => id)).not.toThrow();
    expect(decorate(Object, (id) => timer(Number(id)))).not.toThrow();
    expect(decorate(undefined, (id) => id)).not.toThrow();
    expect(decorate(Number, (id) => id.length)).toThrow(/declared to return Number/);
  });

  it('without decorator metadata, rejects an Observable result instead of resolving to it, and releases', async () => {
    // Plain JavaScript (or a compiler without emitDecoratorMetadata): nothing tells the result's kind.
    class Feed {
      constructor(readonly locks: LockService) {}
      stream(id: string): Observable<string> {
        return timer(1).pipe(map(() => `${id} ${this.locks.current()?.key}`));
      }
    }
    const descriptor = Object.getOwnPropertyDescriptor(Feed.prototype, 'stream')!;
    WithLock('feed-<0>')(Feed.prototype, 'stream', descriptor as TypedPropertyDescriptor<(id: string) => Observable<string>>);
    Object.defineProperty(Feed.prototype, 'stream', descriptor);
    Reflect.decorate([Injectable(), Reflect.metadata('design:paramtypes', [LockService])], Feed);
    const moduleRef = await Test.createTestingModule({ imports: [DynamoLockModule.forTesting()], providers: [Feed] }).compile();
    await moduleRef.init();
    try {
      const result: unknown = moduleRef.get(Feed).stream('f1');
      expect(result).toBeInstanceOf(Promise);
      await expect(result).rejects.toThrow(
        /Feed\.stream: the method returned an Observable, but its declared result could not be read before the call/,
      );
      expect(moduleRef.get(LockService).heldCount).toBe(0);
    } finally {
      await moduleRef.close();
    }
  });

  it('rejects a getter when the class is defined, and a call without its instance with a named error', async () => {
    expect(() => {
      class Broken {
        // @ts-expect-error a getter is not a method
        @WithLock('x')
        get value() {
          return 1;
        }
      }
      void Broken;
    }).toThrow('@WithLock on Broken.value: only methods can be decorated, not getters, setters or properties.');

    @Injectable()
    class Detached {
      @WithLock('detached')
      async run() {
        return 1;
      }
    }
    const moduleRef = await Test.createTestingModule({ imports: [DynamoLockModule.forTesting()], providers: [Detached] }).compile();
    const { run } = moduleRef.get(Detached);
    expect(() => run()).toThrow(/^Detached\.run was called without its instance/);
    await moduleRef.close();
  });

  it('checks the parameter count only when decorator metadata gives it', () => {
    expect(() => new LockKeyTemplate('job-<2>', 'Plain.run')).not.toThrow();
    expect(() => new LockKeyTemplate('job-<2>', 'Plain.run', 2)).toThrow(/<2> names an argument the method does not have/);
  });

  it('boots a transient provider that uses @WithLock, and locks in it', async () => {
    @Injectable({ scope: Scope.TRANSIENT })
    class PerConsumer {
      constructor(readonly locks: LockService) {}
      @WithLock('transient-<0>')
      async run(_id: string) {
        return this.locks.current()?.key;
      }
    }
    @Injectable()
    class Consumer {
      constructor(readonly job: PerConsumer) {}
    }
    const moduleRef = await Test.createTestingModule({
      imports: [DynamoLockModule.forTesting()],
      providers: [PerConsumer, Consumer],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    expect(await app.get(Consumer).job.run('1')).toBe('transient-1');
    await app.close();
  });

  it('forTesting({ isGlobal: false }) is as visible as forRoot({ isGlobal: false })', async () => {
    const app = await appWithIsolatedClass(DynamoLockModule.forTesting({ isGlobal: false }));
    await expect(app.init()).rejects.toThrow(/^Isolated\.run uses @WithLock, but no LockService is available to it/);
    await app.close();
  });

  it('fails the boot naming the class when no DynamoLockModule exists at all (and, before boot, the first call)', async () => {
    let ownInitRan = false;
    @Injectable()
    class Orphan {
      onModuleInit() {
        ownInitRan = true;
      }
      @WithLock('orphan')
      async run() {
        return 1;
      }
    }
    const moduleRef = await Test.createTestingModule({ providers: [Orphan] }).compile();
    await expect(moduleRef.get(Orphan).run()).rejects.toThrow(/^Orphan\.run uses @WithLock, but no LockService is available/);
    await expect(moduleRef.init()).rejects.toThrow(/^Orphan\.run uses @WithLock, but no LockService is available/);
    expect(ownInitRan).toBe(false);
    await moduleRef.close();
  });

  it("runs a class's own onModuleInit after the check when a LockService is there", async () => {
    let ownInitRan = false;
    @Injectable()
    class Hooked {
      onModuleInit() {
        ownInitRan = true;
      }
      @WithLock('hooked')
      async run() {
        return 1;
      }
    }
    const moduleRef = await Test.createTestingModule({ imports: [DynamoLockModule.forTesting()], providers: [Hooked] }).compile();
    await moduleRef.init();
    expect(ownInitRan).toBe(true);
    await moduleRef.close();
  });

  it('rejects at boot a holdAtLeast that reaches the period of the @Interval or @Cron schedule, naming the method', async () => {
    @Injectable()
    class EverySecond {
      @Interval(1_000)
      @WithLock('every-second', { onBusy: 'skip', holdAtLeast: '1s' })
      async tick() {}
    }
    @Injectable()
    class EveryTwoSeconds {
      @WithLock('every-two', { onBusy: 'skip', holdAtLeast: '3s' })
      @Cron('*/2 * * * * *')
      async tick() {}
    }
    for (const [job, pattern] of [
      [EverySecond, /EverySecond\.tick: holdAtLeast \(1000 ms\) reaches the period of its schedule \(1000 ms\)/],
      [EveryTwoSeconds, /EveryTwoSeconds\.tick: holdAtLeast \(3000 ms\) reaches the period of its schedule \(2000 ms\)/],
    ] as const) {
      const moduleRef = await Test.createTestingModule({ imports: [DynamoLockModule.forTesting()], providers: [job] }).compile();
      const init = moduleRef.init();
      await expect(init).rejects.toThrow(LockConfigurationError);
      await expect(init).rejects.toThrow(pattern);
      await moduleRef.close();
    }
  });
});

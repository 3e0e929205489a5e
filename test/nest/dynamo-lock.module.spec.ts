import { CreateTableCommand, DescribeTimeToLiveCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { DynamoLockModule, type DynamoLockOptions, LockConfigurationError, LockService, LockTableError } from '../../lib';
import { LockFixture, MemoryLogger } from '../support/lock-fixture';
import {
  createTestClient,
  deleteTable,
  deleteTableAndWait,
  describeEachServer,
  testClientConfig,
  uniqueTableName,
} from '../support/servers';

describeEachServer('DynamoLockModule', (server) => {
  const fixture = new LockFixture(server);
  beforeAll(() => fixture.setup());
  afterAll(() => fixture.close());

  const options = (extra: DynamoLockOptions = {}): DynamoLockOptions => fixture.moduleOptions(extra);

  async function boot(imports: NonNullable<Parameters<typeof Test.createTestingModule>[0]['imports']>) {
    const moduleRef = await Test.createTestingModule({ imports }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    return app;
  }

  it('forRoot registers a global LockService that locks on the table', async () => {
    @Injectable()
    class Consumer {
      constructor(readonly locks: LockService) {}
    }
    @Module({ providers: [Consumer] })
    class FeatureModule {}

    const app = await boot([DynamoLockModule.forRoot(options({ ownerName: 'root-app' })), FeatureModule]);
    const locks = app.get(Consumer).locks;
    expect(locks).toBeInstanceOf(LockService);
    const lock = await locks.acquire('module-key');
    expect((await locks.inspect('module-key'))?.owner).toBe('root-app');
    await lock.release();
    await app.close();
  });

  it('forRootAsync reads options from a factory with injected dependencies', async () => {
    @Injectable()
    class LockConfig {
      readonly owner = 'from-config';
    }
    @Module({ providers: [LockConfig], exports: [LockConfig] })
    class ConfigModule {}

    const app = await boot([
      DynamoLockModule.forRootAsync({
        imports: [ConfigModule],
        inject: [LockConfig],
        useFactory: (config: LockConfig) => options({ ownerName: config.owner }),
      }),
    ]);
    const locks = app.get(LockService);
    expect(locks.options.ownerName).toBe('from-config');
    await app.close();
  });

  it('forRootAsync accepts an options class', async () => {
    class LockOptionsFactory {
      createDynamoLockOptions(): DynamoLockOptions {
        return options({ ownerName: 'from-class', leaseDuration: '45s' });
      }
    }
    const app = await boot([DynamoLockModule.forRootAsync({ useClass: LockOptionsFactory })]);
    expect(app.get(LockService).options).toMatchObject({ ownerName: 'from-class', leaseMs: 45_000, heartbeatMs: undefined });
    await app.close();
  });

  it('is not global with isGlobal: false', async () => {
    @Injectable()
    class Consumer {
      constructor(readonly locks: LockService) {}
    }
    @Module({ providers: [Consumer] })
    class FeatureModule {}
    await expect(boot([DynamoLockModule.forRoot({ ...options(), isGlobal: false }), FeatureModule])).rejects.toThrow(/LockService/);
  });

  it('releases held locks on application shutdown', async () => {
    const app = await boot([DynamoLockModule.forRoot(options())]);
    const locks = app.get(LockService);
    await locks.acquire('held-at-shutdown');
    await locks.acquire('held-at-shutdown-2');
    await app.close();
    const probe = fixture.manager();
    expect(await probe.inspect('held-at-shutdown')).toBeNull();
    expect(await probe.inspect('held-at-shutdown-2')).toBeNull();
  });

  it('keeps two apps in one process apart: each its own service, excluding each other', async () => {
    const a = await boot([DynamoLockModule.forRoot(options({ ownerName: 'app-a' }))]);
    const b = await boot([DynamoLockModule.forRoot(options({ ownerName: 'app-b' }))]);
    const lockA = await a.get(LockService).acquire('two-apps');
    expect(await b.get(LockService).tryAcquire('two-apps')).toBeNull();
    await a.close();
    const lockB = await b.get(LockService).acquire('two-apps', { wait: '5s' });
    expect(lockB.fencingToken).toBeGreaterThan(lockA.fencingToken);
    await b.close();
  });

  describe('table checks at start-up', () => {
    it('fails start-up on a missing table, saying where it looked (region, endpoint) and how to create it there', async () => {
      const missing = uniqueTableName('missing');
      const region = String(testClientConfig(server).region);
      const error = await boot([DynamoLockModule.forRoot(options({ tableName: missing }))]).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockTableError);
      expect(error).toMatchObject({ problem: 'missing', location: { region, endpoint: server.endpoint } });
      const { message } = error as LockTableError;
      expect(message).toContain(
        `table "${missing}" for locks does not exist in region ${region} at "${server.endpoint}" (from the clientConfig.endpoint option). If you made it in another region`,
      );
      expect(message).toContain(`use those (AWS_REGION, or clientConfig.region) rather than creating a second table.`);
      expect(message).toContain(
        `Create it with \`createTable: true\` in DynamoLockModule.forRoot(), with \`npx dynamo-lock table-create --table ${missing} --region ${region} --endpoint ${server.endpoint}\``,
      );
      expect(message).toMatch(/--billing-mode PAY_PER_REQUEST --region \S+ --endpoint-url \S+$/);
    });

    it('with createTable on, a table deleted while the app runs says at the next request that a restart creates it', async () => {
      const table = uniqueTableName('deleted');
      const client = createTestClient(server);
      let app: Awaited<ReturnType<typeof boot>> | undefined;
      try {
        app = await boot([DynamoLockModule.forRoot(options({ tableName: table, createTable: true }))]);
        await deleteTableAndWait(client, table);
        const error = await app
          .get(LockService)
          .acquire('after-delete', { wait: 300 })
          .catch((e: unknown) => e);
        expect(error).toBeInstanceOf(LockTableError);
        const { message } = error as LockTableError;
        expect(message).toContain(`DynamoDB table "${table}" for locks does not exist in region`);
        expect(message).toMatch(
          /createTable is on, but it creates a missing table only at start-up: this one was deleted while the app ran\. Restart the app to create it again\.$/,
        );
        expect(message).not.toMatch(/createTable: true|init\(\)/);
      } finally {
        await app?.close();
        await deleteTable(client, table);
        client.destroy();
      }
    });

    it('fails start-up on a table with another key schema, showing the expected one', async () => {
      const wrong = uniqueTableName('wrong');
      const client = createTestClient(server);
      await client.send(
        new CreateTableCommand({
          TableName: wrong,
          AttributeDefinitions: [
            { AttributeName: 'pk', AttributeType: 'S' },
            { AttributeName: 'sk', AttributeType: 'N' },
          ],
          KeySchema: [
            { AttributeName: 'pk', KeyType: 'HASH' },
            { AttributeName: 'sk', KeyType: 'RANGE' },
          ],
          BillingMode: 'PAY_PER_REQUEST',
        }),
      );
      try {
        const error = await boot([DynamoLockModule.forRoot(options({ tableName: wrong }))]).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(LockConfigurationError);
        const schema = `DynamoDB table "${wrong}" has the wrong key schema for locks: HASH "pk" (S), RANGE "sk" (N). Expected exactly one partition key named "key" of type String (S) and no sort key.`;
        expect((error as Error).message).toBe(
          `${schema} Point tableName at another table, or at a name no table uses and set \`createTable: true\` to have it created.`,
        );
        // With createTable already on, the advice is not to turn it on.
        const again = await boot([DynamoLockModule.forRoot(options({ tableName: wrong, createTable: true }))]).catch((e: unknown) => e);
        expect((again as Error).message).toBe(
          `${schema} createTable only creates a missing table and never changes an existing one: point tableName at a name no table uses (it is then created), or at a table with that schema.`,
        );
      } finally {
        await deleteTable(client, wrong);
        client.destroy();
      }
    });

    it('creates a missing table with createTable: true (TTL on where the server supports it), said in one line', async () => {
      const created = uniqueTableName('created');
      const logger = new MemoryLogger();
      const app = await boot([DynamoLockModule.forRoot(options({ tableName: created, createTable: true, logger }))]);
      // One honest line: TTL on, or the table without TTL and why (dynalite has no TTL API).
      const lines = logger.lines.filter((line) => line.message.includes(created));
      expect(lines).toHaveLength(1);
      if (server.name === 'dynalite') {
        expect(lines[0]).toMatchObject({ level: 'warn', message: expect.stringMatching(/, but TTL could not be enabled on it/) });
      } else {
        expect(lines[0]).toEqual({
          level: 'log',
          message: `Created DynamoDB lock table "${created}" (on-demand, TTL on attribute "ttl").`,
        });
      }
      const locks = app.get(LockService);
      const lock = await locks.acquire('in-new-table');
      expect(lock.isHeld).toBe(true);
      if (server.name === 'dynamodb-local') {
        const ttl = await locks.client.send(new DescribeTimeToLiveCommand({ TableName: created }));
        expect(ttl.TimeToLiveDescription).toMatchObject({ TimeToLiveStatus: 'ENABLED', AttributeName: 'ttl' });
      }
      await app.close();
      const client = createTestClient(server);
      await deleteTable(client, created);
      client.destroy();
    });

    it.each([
      [{ leaseDuration: 'thirty seconds' }, /leaseDuration must be a positive duration; got "thirty seconds"/],
      [
        { leaseDuration: '10s', heartbeatInterval: '10s' },
        /heartbeatInterval \(10000 ms\) must be shorter than leaseDuration \(10000 ms\)/,
      ],
      [{ ttlDays: -1 }, /option "ttlDays" must be a number of days, 0 or more; got -1/],
      [{ tableName: 'x' }, /option "tableName" must be a DynamoDB table name/],
      [
        { leaseDurration: '5s' },
        /^DynamoLockModule\.forRoot\(\) has no option "leaseDurration"; did you mean "leaseDuration"\? Its options: tableName, /,
      ],
      [{ store: {} }, /^DynamoLockModule\.forRoot\(\) option "store" must be a MemoryLockStore/],
      [{ createTable: 'false' }, /option "createTable" must be true or false \(a boolean, not a string\); got "false"/],
      [{ keyPrefix: 'p'.repeat(2048) }, /option "keyPrefix" leaves no room for keys \(DynamoDB keys are at most 2048 bytes\)/],
      [{ keyPrefix: 'a\uD800' }, /option "keyPrefix" contains a lone surrogate/],
      [{ eventEmitter: 'yes' }, /option "eventEmitter" must be true, false or 'auto'; got "yes"/],
    ])('rejects bad options %p at start-up', async (bad, message) => {
      const error = await boot([DynamoLockModule.forRoot(options(bad as DynamoLockOptions))]).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockConfigurationError);
      expect((error as Error).message).toMatch(message);
    });

    it('names forRootAsync when its factory returns no options object', async () => {
      for (const value of [undefined, null, 'locks']) {
        const error = await boot([DynamoLockModule.forRootAsync({ useFactory: () => value as never })]).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(LockConfigurationError);
        expect((error as Error).message).toMatch(
          /^DynamoLockModule\.forRootAsync\(\) options must be an object, such as \{ tableName: 'locks' \}; got .*With forRootAsync\(\), make useFactory/,
        );
      }
    });

    it('names forRootAsync for an options class that returns no object, and for a bad option from a factory or a class', async () => {
      class NoOptions {
        createDynamoLockOptions() {
          return undefined as unknown as DynamoLockOptions;
        }
      }
      const none = await boot([DynamoLockModule.forRootAsync({ useClass: NoOptions })]).catch((e: unknown) => e);
      expect(none).toBeInstanceOf(LockConfigurationError);
      expect((none as Error).message).toMatch(/^DynamoLockModule\.forRootAsync\(\) options must be an object, .*got undefined/);
      const fromFactory = await boot([DynamoLockModule.forRootAsync({ useFactory: () => options({ keyPrefix: 'p'.repeat(2048) }) })]).catch(
        (e: unknown) => e,
      );
      expect((fromFactory as Error).message).toMatch(/^DynamoLockModule\.forRootAsync\(\) option "keyPrefix" leaves no room for keys/);
      class BadOptions {
        createDynamoLockOptions() {
          return options({ ttlDays: -1 });
        }
      }
      const fromClass = await boot([DynamoLockModule.forRootAsync({ useClass: BadOptions })]).catch((e: unknown) => e);
      expect((fromClass as Error).message).toMatch(/^DynamoLockModule\.forRootAsync\(\) option "ttlDays" must be a number of days/);
    });

    it('names forRoot when it is given no options object', () => {
      for (const value of [null, 'locks']) {
        expect(() => DynamoLockModule.forRoot(value as never)).toThrow(
          /^DynamoLockModule\.forRoot\(\) options must be an object, such as \{ tableName: 'locks' \}; got /,
        );
      }
    });
  });
});

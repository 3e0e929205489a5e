/**
 * The start-up check of a table shared with the app (options `partitionKey` and `sortKey`), with
 * `DynamoLockModule.forRoot()` and a standalone `LockManager`, on every server: a table whose keys
 * differ from the configuration fails the boot naming both, and how to fit the options to it when
 * its keys are Strings; `createTable: true` creates the configured keys; a missing table says how
 * to create it with them.
 */
import { CreateTableCommand, DescribeTableCommand, DescribeTimeToLiveCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Test } from '@nestjs/testing';
import { DynamoLockModule, type DynamoLockOptions, LockConfigurationError, LockManager, LockService, LockTableError } from '../../lib';
import { MemoryLogger } from '../support/lock-fixture';
import { createLockTable, createTestClient, deleteTable, describeEachServer, testClientConfig, uniqueTableName } from '../support/servers';

const PK_SK = { partitionKey: 'PK', sortKey: { name: 'SK', value: 'LOCK' } } as const;

describeEachServer('shared table at start-up', (server) => {
  const client = createTestClient(server);
  const tables: string[] = [];
  /** A table named for `label`, deleted at the end. */
  const tableFor = (label: string) => {
    const name = uniqueTableName(label);
    tables.push(name);
    return name;
  };
  const pkSkTable = tableFor('pk-sk');
  const pkTable = tableFor('pk-only');

  beforeAll(async () => {
    await createLockTable(client, pkSkTable, { partitionKey: 'PK', sortKey: 'SK' });
    await createLockTable(client, pkTable, { partitionKey: 'pk' });
  });
  afterAll(async () => {
    for (const table of tables) await deleteTable(client, table).catch(() => undefined);
    client.destroy();
  });

  const options = (tableName: string, extra: DynamoLockOptions = {}): DynamoLockOptions => ({
    tableName,
    clientConfig: testClientConfig(server),
    logger: new MemoryLogger(),
    ...extra,
  });

  /** The error of `LockManager.init()` with these options (the manager closed). */
  async function standaloneError(tableName: string, extra: DynamoLockOptions = {}): Promise<unknown> {
    const manager = new LockManager(options(tableName, extra));
    try {
      await manager.init();
      return undefined;
    } catch (error) {
      return error;
    } finally {
      await manager.close();
    }
  }

  /** The error of booting a Nest app with `DynamoLockModule.forRoot()` of these options (compiling it, or its init). */
  async function moduleError(tableName: string, extra: DynamoLockOptions = {}): Promise<unknown> {
    const compiled = await Test.createTestingModule({ imports: [DynamoLockModule.forRoot(options(tableName, extra))] })
      .compile()
      .catch((error: unknown) => ({ error }));
    if ('error' in compiled) return compiled.error;
    const app = compiled.createNestApplication({ logger: false });
    try {
      await app.init();
      return undefined;
    } catch (error) {
      return error;
    } finally {
      await app.close().catch(() => undefined);
    }
  }

  describe('a table whose keys differ from the configuration fails the boot, naming both', () => {
    const pkSkToDefault = (table: string) =>
      `DynamoDB table "${table}" has the wrong key schema for locks: HASH "PK" (S), RANGE "SK" (S). ` +
      'Expected exactly one partition key named "key" of type String (S) and no sort key. ' +
      `To keep locks in this table with your items, set partitionKey: 'PK' and sortKey: { name: 'SK', value: 'LOCK' } (any value none of your items has in "SK"). ` +
      'Otherwise: point tableName at another table, or at a name no table uses and set `createTable: true` to have it created.';

    it('DynamoLockModule.forRoot() without the options, on a PK/SK table', async () => {
      const error = await moduleError(pkSkTable);
      expect(error).toBeInstanceOf(LockTableError);
      expect(error).toMatchObject({ problem: 'wrong-schema', tableName: pkSkTable });
      expect((error as Error).message).toBe(pkSkToDefault(pkSkTable));
    });

    it('a standalone LockManager without the options, on a PK/SK table', async () => {
      const error = await standaloneError(pkSkTable);
      expect(error).toBeInstanceOf(LockTableError);
      expect((error as Error).message).toBe(pkSkToDefault(pkSkTable));
    });

    it('partitionKey without sortKey, on a PK/SK table', async () => {
      const error = await standaloneError(pkSkTable, { partitionKey: 'PK' });
      expect((error as Error).message).toContain(
        `has the wrong key schema for locks: HASH "PK" (S), RANGE "SK" (S). Expected exactly one partition key named "PK" of type String (S) and no sort key, as option partitionKey says. To keep locks in this table with your items, set partitionKey: 'PK' and sortKey: { name: 'SK', value: 'LOCK' }`,
      );
    });

    it('both options, on a table with a partition key only (and createTable on: it never changes a table)', async () => {
      const error = await moduleError(pkTable, { ...PK_SK, sortKey: { name: 'SK', value: 'LOCKS' }, createTable: true });
      expect(error).toBeInstanceOf(LockTableError);
      expect((error as Error).message).toBe(
        `DynamoDB table "${pkTable}" has the wrong key schema for locks: HASH "pk" (S). ` +
          'Expected a partition key named "PK" and a sort key named "SK", both of type String (S), as options partitionKey and sortKey say. ' +
          "To keep locks in this table with your items, set partitionKey: 'pk' and leave sortKey out. " +
          'Otherwise: createTable only creates a missing table and never changes an existing one: point tableName at a name no table uses (it is then created), or at a table with that schema.',
      );
    });

    it('a sort key of another name, or not a String: no advice to use keys locks cannot have', async () => {
      const renamed = await standaloneError(pkSkTable, { partitionKey: 'PK', sortKey: { name: 'sk', value: 'LOCK' } });
      expect((renamed as Error).message).toContain(
        `Expected a partition key named "PK" and a sort key named "sk", both of type String (S), as options partitionKey and sortKey say. To keep locks in this table with your items, set partitionKey: 'PK' and sortKey: { name: 'SK', value: 'LOCK' }`,
      );
      const numeric = tableFor('sk-number');
      await client.send(
        new CreateTableCommand({
          TableName: numeric,
          AttributeDefinitions: [
            { AttributeName: 'PK', AttributeType: 'S' },
            { AttributeName: 'SK', AttributeType: 'N' },
          ],
          KeySchema: [
            { AttributeName: 'PK', KeyType: 'HASH' },
            { AttributeName: 'SK', KeyType: 'RANGE' },
          ],
          BillingMode: 'PAY_PER_REQUEST',
        }),
      );
      const error = await standaloneError(numeric, PK_SK);
      expect((error as Error).message).toBe(
        `DynamoDB table "${numeric}" has the wrong key schema for locks: HASH "PK" (S), RANGE "SK" (N). ` +
          'Expected a partition key named "PK" and a sort key named "SK", both of type String (S), as options partitionKey and sortKey say. ' +
          'Point tableName at another table, or at a name no table uses and set `createTable: true` to have it created.',
      );
    });

    it('boots when the options match the table', async () => {
      expect(await moduleError(pkSkTable, PK_SK)).toBeUndefined();
      expect(await standaloneError(pkTable, { partitionKey: 'pk' })).toBeUndefined();
    });
  });

  it('a missing table: says how to create it with the configured keys', async () => {
    const missing = uniqueTableName('missing');
    const error = await standaloneError(missing, PK_SK);
    expect(error).toBeInstanceOf(LockTableError);
    const { message } = error as Error;
    // Where it looked (region, endpoint) is tested with the default keys in the module and outage specs.
    expect(message).toMatch(
      new RegExp(
        `^DynamoDB table "${missing}" for locks does not exist in region \\S+ at .*\\(configured with partition key "PK" and sort key "SK" \\(lock items: "LOCK"\\)\\)\\. `,
      ),
    );
    expect(message).toContain('Create it with `createTable: true` in the LockManager options, ');
    expect(message).toContain(`\`npx dynamo-lock table-create --table ${missing} --partition-key PK --sort-key SK=LOCK --region `);
    expect(message).toContain(
      `aws dynamodb create-table --table-name ${missing} --attribute-definitions AttributeName=PK,AttributeType=S AttributeName=SK,AttributeType=S ` +
        '--key-schema AttributeName=PK,KeyType=HASH AttributeName=SK,KeyType=RANGE --billing-mode PAY_PER_REQUEST --region ',
    );
    expect(message).toMatch(/; or point tableName at the table that holds your items\.$/);
  });

  it('createTable: true creates the table with the configured keys, said in one line, and locks work in it', async () => {
    const created = tableFor('created');
    const logger = new MemoryLogger();
    const moduleRef = await Test.createTestingModule({
      imports: [DynamoLockModule.forRoot(options(created, { ...PK_SK, createTable: true, logger }))],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    try {
      const table = (await client.send(new DescribeTableCommand({ TableName: created }))).Table;
      expect(table?.KeySchema).toEqual([
        { AttributeName: 'PK', KeyType: 'HASH' },
        { AttributeName: 'SK', KeyType: 'RANGE' },
      ]);
      expect(table?.AttributeDefinitions).toEqual(
        expect.arrayContaining([
          { AttributeName: 'PK', AttributeType: 'S' },
          { AttributeName: 'SK', AttributeType: 'S' },
        ]),
      );
      const lines = logger.lines.filter((line) => line.message.includes(created));
      expect(lines).toHaveLength(1);
      if (server.name === 'dynalite') {
        expect(lines[0]).toMatchObject({ level: 'warn', message: expect.stringMatching(/, but TTL could not be enabled on it/) });
      } else {
        expect(lines[0]).toEqual({
          level: 'log',
          message: `Created DynamoDB lock table "${created}" (on-demand, partition key "PK" and sort key "SK" (lock items: "LOCK"), TTL on attribute "ttl").`,
        });
        const ttl = await client.send(new DescribeTimeToLiveCommand({ TableName: created }));
        expect(ttl.TimeToLiveDescription).toMatchObject({ TimeToLiveStatus: 'ENABLED', AttributeName: 'ttl' });
      }
      const locks = app.get(LockService);
      const lock = await locks.acquire('in-new-table');
      expect((await locks.list()).map((info) => info.key)).toEqual(['in-new-table']);
      await lock.release();
    } finally {
      await app.close();
    }
  });

  it("a bad option fails before any request, naming it: in the constructor, and at the module's boot", async () => {
    const bad = { partitionKey: 'PK', sortKey: { name: 'PK', value: 'LOCK' } };
    expect(() => new LockManager(options(pkSkTable, bad))).toThrow(LockConfigurationError);
    const error = await moduleError(pkSkTable, bad);
    expect(error).toBeInstanceOf(LockConfigurationError);
    expect((error as Error).message).toMatch(/"partitionKey" and "sortKey.name" are both "PK"/);
  });
});

/**
 * `--partition-key` and `--sort-key NAME=VALUE` (and their variables): the built CLI against both
 * servers, in a `PK`/`SK` table it creates and shares with an app's items. table-create and
 * table-check with the configured keys, a key-schema mismatch in the CLI's words, TTL of an
 * existing shared table left alone; acquire, inspect, list, release and exec --limit there, the
 * app's items untouched; malformed values refused before any request.
 */
import { DescribeTableCommand, DescribeTimeToLiveCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { describeEachServer, uniqueTableName } from '../support/servers';
import { SHARED_LAYOUTS, SharedTable } from '../support/shared-table';
import { Cli, type CliResult } from './support/cli-process';

const KEYS = ['--partition-key', 'PK', '--sort-key', 'SK=LOCK'];

/** The lines of a stream's output. */
const lines = (text: string) => text.split('\n').filter((line) => line !== '');

/** `expect` with the whole result in the failure message. */
function expectExit(result: CliResult, code: number): void {
  if (result.code !== code) {
    throw new Error(`expected exit ${code}, got ${result.code ?? result.signal}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`);
  }
}

describe('dynamo-lock --partition-key, --sort-key: usage errors', () => {
  it('exits 2 for a --sort-key that is not NAME=VALUE, and for a key named as a lock attribute, before any request', async () => {
    const cli = new Cli();
    for (const bad of ['SK', '=LOCK', 'SK=']) {
      const result = await cli.run(['list', '--table', 'locks', '--endpoint', 'http://127.0.0.1:1', '--sort-key', bad]);
      expectExit(result, 2);
      expect(lines(result.stderr)).toEqual([
        `dynamo-lock: --sort-key (or DYNAMO_LOCK_SORT_KEY): "${bad}" is not NAME=VALUE: give the table's sort key attribute and the value lock items have in it, e.g. --sort-key SK=LOCK (the value is everything after the first "=").`,
      ]);
    }
    const clash = await cli.run(['list', '--table', 'locks', '--endpoint', 'http://127.0.0.1:1', '--partition-key', 'owner']);
    expectExit(clash, 2);
    expect(clash.stderr).toMatch(
      /^dynamo-lock: invalid setting: --partition-key \(or DYNAMO_LOCK_PARTITION_KEY\) is "owner", an attribute lock items write/,
    );
  });
});

describeEachServer('dynamo-lock in a table shared with the app', (server) => {
  const layout = SHARED_LAYOUTS[0];
  const table = new SharedTable(server, layout);
  const cli = new Cli(server, ['--table', table.tableName]);
  const shared = new Cli(server, ['--table', table.tableName, ...KEYS]);

  beforeAll(async () => {
    const created = await shared.run(['table-create']);
    expectExit(created, 0);
    expect(lines(created.stderr)[0]).toBe(`Created lock table "${table.tableName}" (on-demand, partition key "PK", sort key "SK").`);
    const described = await table.client.send(new DescribeTableCommand({ TableName: table.tableName }));
    expect(described.Table?.KeySchema).toEqual([
      { AttributeName: 'PK', KeyType: 'HASH' },
      { AttributeName: 'SK', KeyType: 'RANGE' },
    ]);
    await table.putAppItems(['deploy', 'exports'], 'never-locked');
  }, 30_000);
  afterAll(() => table.close());

  it('table-check passes with the keys, and says a mismatch without them in the CLI words (exit 4)', async () => {
    const check = await shared.run(['table-check']);
    expectExit(check, 0);
    expect(lines(check.stderr)[0]).toBe(
      `Lock table "${table.tableName}" is ACTIVE with the right key schema (partition key "PK", sort key "SK", both String); lock items are those with "SK" = "LOCK".`,
    );
    const wrong = await cli.run(['table-check']);
    expectExit(wrong, 4);
    expect(lines(wrong.stderr)).toEqual([
      `dynamo-lock: lock table "${table.tableName}" has key schema HASH "PK" (S), RANGE "SK" (S), but the locks are configured with partition key "key" and no sort key: to keep locks in this table, pass --partition-key PK and --sort-key SK=LOCK (any value none of your items has in "SK"); or name another table with --table.`,
    ]);
    // table-create too checks the table it did not create.
    const again = await new Cli(server, ['--table', table.tableName, '--partition-key', 'PK']).run(['table-create']);
    expectExit(again, 4);
    expect(again.stderr).toContain(
      'but the locks are configured with partition key "PK" and no sort key: to keep locks in this table, pass',
    );
  });

  it('acquire, inspect, list and release in the shared table: only the lock is listed, the app items stay', async () => {
    const acquired = await shared.run(['acquire', 'deploy', '--no-wait', '--owner', 'alice', '--data', '{"v":1}']);
    expectExit(acquired, 0);
    const lease = acquired.stdout.trim();
    const listed = await shared.run(['list', '--json']);
    expectExit(listed, 0);
    expect((JSON.parse(listed.stdout) as { key: string; owner: string }[]).map(({ key, owner }) => ({ key, owner }))).toEqual([
      { key: 'deploy', owner: 'alice' },
    ]);
    // The variables name the keys as the options do.
    const env = { DYNAMO_LOCK_PARTITION_KEY: 'PK', DYNAMO_LOCK_SORT_KEY: 'SK=LOCK' };
    const inspected = await cli.run(['inspect', 'deploy', '--json'], { env });
    expectExit(inspected, 0);
    expect(JSON.parse(inspected.stdout)).toMatchObject({ key: 'deploy', owner: 'alice', data: { v: 1 } });
    expect(await table.readLockItem('deploy')).toMatchObject({ PK: { S: 'deploy' }, SK: { S: 'LOCK' }, owner: { S: 'alice' } });
    expectExit(await shared.run(['release', 'deploy', lease]), 0);
    const after = await shared.run(['list']);
    expectExit(after, 0);
    expect(after.stderr).toContain('No locks held.');
    await table.expectAppItemsUntouched();
  }, 30_000);

  it('exec --limit holds a semaphore slot in the shared table', async () => {
    const ran = await shared.run(['exec', 'exports', '--limit', '2', '--', process.execPath, '-e', 'process.exit(0)']);
    expectExit(ran, 0);
    expect(await table.readLockItem('exports\u001fsemaphore')).toMatchObject({
      SK: { S: 'LOCK' },
      limit: { N: '2' },
      holderCount: { N: '0' },
    });
    await table.expectAppItemsUntouched();
  });

  it('a missing table: says how to create it with the keys', async () => {
    const missing = uniqueTableName('missing');
    const result = await new Cli(server, ['--table', missing, ...KEYS]).run(['table-check']);
    expectExit(result, 4);
    const [line, ...rest] = lines(result.stderr);
    expect(rest).toEqual([]);
    // Where it looked (region and endpoint) comes first; the command to create it carries the keys.
    expect(line).toMatch(
      new RegExp(`^dynamo-lock: DynamoDB table "${missing}" does not exist in region \\S+ at \\S+: name the table you use with --table`),
    );
    expect(line).toContain(`create this one with \`dynamo-lock table-create --table ${missing} --partition-key PK --sort-key SK=LOCK\`.`);
  });
});

describeEachServer('dynamo-lock table-create on an existing shared table', (server) => {
  const table = new SharedTable(server, SHARED_LAYOUTS[0]);
  beforeAll(() => table.create());
  afterAll(() => table.close());

  it('checks its keys and leaves its TTL as it is: the app may need its own TTL attribute', async () => {
    const result = await new Cli(server, ['--table', table.tableName, ...KEYS]).run(['table-create']);
    expectExit(result, 0);
    expect(lines(result.stderr)).toEqual([
      `Lock table "${table.tableName}" already exists with the right key schema.`,
      `TTL: disabled on "${table.tableName}", a table shared with your items, so left as it is (a table has one TTL attribute, and your items may need it). Without TTL, lock items stay after release, a few hundred bytes each: enable TTL on "ttl" yourself, or see "Locks in your own table" in docs/infrastructure.md.`,
    ]);
    if (server.name !== 'dynalite') {
      const ttl = await table.client.send(new DescribeTimeToLiveCommand({ TableName: table.tableName }));
      expect(ttl.TimeToLiveDescription?.TimeToLiveStatus).toBe('DISABLED');
    }
  });
});

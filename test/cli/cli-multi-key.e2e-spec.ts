/**
 * `dynamo-lock exec NAME --and NAME2 -- COMMAND`: a multi-key lock from the shell, against both
 * servers. Who runs at once on an account is counted with files, not timed.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Cli, type CliResult } from './support/cli-process';
import { createLockTable, createTestClient, deleteTable, describeEachServer, uniqueTableName } from '../support/servers';

/** A command inside accounts `ids`: records, per account, how many commands were inside it with it; stays 150 ms. */
const transfer = (dir: string, name: string, ids: string[]) => [
  process.execPath,
  '-e',
  `const fs = require('fs'), p = require('path'), d = ${JSON.stringify(dir)}, ids = ${JSON.stringify(ids)};
   for (const id of ids) fs.writeFileSync(p.join(d, 'in-' + id + '-${name}'), '');
   for (const id of ids) fs.appendFileSync(p.join(d, 'counts'), fs.readdirSync(d).filter((f) => f.startsWith('in-' + id + '-')).length + '\\n');
   setTimeout(() => { for (const id of ids) fs.rmSync(p.join(d, 'in-' + id + '-${name}')); }, 150);`,
];

const expectExit = (result: CliResult, code: number) =>
  expect({ code: result.code, stderr: result.stderr }).toEqual({ code, stderr: expect.any(String) });

describeEachServer('dynamo-lock exec --and', (server) => {
  const tableName = uniqueTableName('cli-multi');
  const client = createTestClient(server);
  const cli = new Cli(server, ['--table', tableName]);
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'dynamo-lock-multi-'));
    await createLockTable(client, tableName);
  });
  afterAll(async () => {
    await deleteTable(client, tableName).catch(() => undefined);
    client.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('commands naming the same accounts in opposite orders all run, never two inside one account', async () => {
    const work = mkdtempSync(path.join(dir, 'accounts-'));
    const runs = Array.from({ length: 6 }, (_, i) => {
      const [first, second] = i % 2 === 0 ? ['a', 'b'] : ['b', 'a'];
      return cli.run([
        'exec',
        `acct-${first}`,
        '--and',
        `acct-${second}`,
        '--wait',
        '60s',
        '--',
        ...transfer(work, String(i), [first, second]),
      ]);
    });
    const results = await Promise.all(runs);
    for (const result of results) expectExit(result, 0);
    const counts = readFileSync(path.join(work, 'counts'), 'utf8').trim().split('\n').map(Number);
    expect(counts).toHaveLength(12);
    expect(Math.max(...counts)).toBe(1);
  }, 90_000);

  it('--no-wait exits 1 naming the busy lock, and leaves the other one free', async () => {
    const holder = cli.start(['exec', 'pair-2', '--', process.execPath, '-e', 'setTimeout(() => {}, 8000)']);
    let busy: CliResult | undefined;
    for (let i = 0; i < 50 && busy?.code !== 1; i++) busy = await cli.run(['exec', 'pair-1', '--and', 'pair-2', '--no-wait', '--', 'true']);
    expectExit(busy!, 1);
    expect(busy!.stderr).toContain('"pair-2"');
    const other = await cli.run(['exec', 'pair-1', '--no-wait', '--', 'true']);
    expectExit(other, 0);
    holder.process.kill('SIGTERM');
    await holder.result;
  }, 60_000);
});

describe('dynamo-lock exec --and: usage errors (exit 2), with no server to ask', () => {
  const cli = new Cli(undefined, ['--table', 'nowhere']);
  it.each([
    [['--limit', '2'], '--limit cannot be used with --and'],
    [['--data', '{"a":1}'], '--data cannot be used with --and'],
  ])('%j', async (extra, message) => {
    const result = await cli.run(['exec', 'x', '--and', 'y', ...extra, '--', 'true']);
    expectExit(result, 2);
    expect(result.stderr).toContain(message);
  });

  it('documents --and in the help', async () => {
    const result = await cli.run(['exec', '--help']);
    expect(result.stdout).toContain('--and <name>');
    expect(result.stdout).toContain('exec account-1 --and account-2 -- ./transfer.sh');
  });
});

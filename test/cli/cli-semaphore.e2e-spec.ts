/**
 * `dynamo-lock exec --limit n`: a counting semaphore from the shell, against both servers. Who
 * runs at once is counted with files, not timed: each command creates its own file, counts the
 * files, and removes its own when it ends.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Cli, type CliResult } from './support/cli-process';
import { createLockTable, createTestClient, deleteTable, describeEachServer, uniqueTableName } from '../support/servers';

/** A command that counts the commands inside `dir` with it, appends the count to `dir/counts`, and stays 300 ms. */
const counting = (dir: string, name: string) => [
  process.execPath,
  '-e',
  `const fs = require('fs'), p = require('path'), d = ${JSON.stringify(dir)};
   const mine = p.join(d, 'in-${name}'); fs.writeFileSync(mine, '');
   const inside = fs.readdirSync(d).filter((f) => f.startsWith('in-')).length;
   fs.appendFileSync(p.join(d, 'counts'), inside + '\\n');
   setTimeout(() => fs.rmSync(mine), 300);`,
];

const expectExit = (result: CliResult, code: number) =>
  expect({ code: result.code, stderr: result.stderr }).toEqual({ code, stderr: expect.any(String) });

describeEachServer('dynamo-lock exec --limit', (server) => {
  const tableName = uniqueTableName('cli-sem');
  const client = createTestClient(server);
  const cli = new Cli(server, ['--table', tableName]);
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'dynamo-lock-sem-'));
    await createLockTable(client, tableName);
  });
  afterAll(async () => {
    await deleteTable(client, tableName).catch(() => undefined);
    client.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('five commands with --limit 2: at most two run at once, all run, each exits 0', async () => {
    const work = mkdtempSync(path.join(dir, 'five-'));
    const runs = Array.from({ length: 5 }, (_, i) => cli.run(['exec', 'encoder', '--limit', '2', '--', ...counting(work, String(i))]));
    const results = await Promise.all(runs);
    for (const result of results) expectExit(result, 0);
    const counts = readFileSync(path.join(work, 'counts'), 'utf8').trim().split('\n').map(Number);
    expect(counts).toHaveLength(5);
    expect(Math.max(...counts)).toBeLessThanOrEqual(2);
  }, 60_000);

  it('--no-wait exits 1 when every slot is taken, naming the limit', async () => {
    const hold = (i: number) =>
      cli.start(['exec', 'full', '--limit', '1', '--', process.execPath, '-e', `setTimeout(() => {}, ${8_000 + i})`]);
    const holder = hold(0);
    // Wait until it holds: a single attempt from here is then busy.
    let busy: CliResult | undefined;
    for (let i = 0; i < 50 && busy?.code !== 1; i++)
      busy = await cli.run(['exec', 'full', '--limit', '1', '--no-wait', '--', process.execPath, '-e', '']);
    expectExit(busy!, 1);
    expect(busy!.stderr).toContain(`all 1 slot of "full" are taken or callers wait ahead; not waiting (--no-wait).`);
    holder.process.kill('SIGTERM');
    await holder.result;
  }, 60_000);
});

describe('dynamo-lock exec --limit: usage errors (exit 2), with no server to ask', () => {
  const cli = new Cli(undefined, ['--table', 'nowhere']);
  it.each(['0', '-1', '1.5', '33', 'three'])('--limit %s', async (value) => {
    const result = await cli.run(['exec', 'x', '--limit', value, '--', 'true']);
    expectExit(result, 2);
    expect(result.stderr).toContain(`--limit: "${value}" is not a whole number from 1 to 32`);
  });

  it('--limit with --data', async () => {
    const result = await cli.run(['exec', 'x', '--limit', '2', '--data', '{"a":1}', '--', 'true']);
    expectExit(result, 2);
    expect(result.stderr).toContain('--data cannot be used with --limit');
  });
});

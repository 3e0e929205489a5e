/**
 * The command line's read locks (`--read` on `exec` and `acquire`): two `exec --read` commands run
 * at once, an `exec` without it waits for both, a reader's lease id from `acquire --read` works
 * with `renew` and `release`, and `--read` with `--limit` or `--data` is a usage error. The BUILT
 * CLI (`dist/cli/main.js`; `npm run build` first) runs as a child process against the real servers.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { createLockTable, createTestClient, deleteTable, describeEachServer, uniqueTableName } from '../support/servers';
import { Cli, type CliResult } from './support/cli-process';

function expectExit(result: CliResult, code: number): void {
  if (result.code !== code) {
    throw new Error(`expected exit ${code}, got ${result.code ?? result.signal}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`);
  }
}

describeEachServer('dynamo-lock CLI: read locks', (server) => {
  const tableName = uniqueTableName('cli-read');
  const client = createTestClient(server);
  const cli = new Cli(server, ['--table', tableName]);
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'dynamo-lock-cli-read-'));
    await createLockTable(client, tableName);
  }, 30_000);

  afterAll(async () => {
    await deleteTable(client, tableName).catch(() => undefined);
    client.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A command that appends `<name> start` and, after `ms`, `<name> end` to the log file. */
  const section = (log: string, name: string, ms: number) => [
    process.execPath,
    '-e',
    `const fs=require('node:fs');fs.appendFileSync(${JSON.stringify(log)},'${name} start\\n');setTimeout(()=>fs.appendFileSync(${JSON.stringify(log)},'${name} end\\n'),${ms})`,
  ];

  it('two exec --read run at once; an exec without --read runs alone, after them', async () => {
    const log = path.join(dir, 'sections.log');
    const key = 'catalog';
    const first = cli.start(['exec', key, '--read', '--wait', '60s', '--', ...section(log, 'r1', 1_500)]);
    const second = cli.start(['exec', key, '--read', '--wait', '60s', '--', ...section(log, 'r2', 1_500)]);
    // Both readers are in before the writer starts.
    const deadline = performance.now() + 30_000;
    while ((readFileSync(log, { flag: 'a+' }).toString().match(/start/g) ?? []).length < 2) {
      if (performance.now() > deadline) throw new Error(`readers did not start: ${readFileSync(log, { flag: 'a+' }).toString()}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const writer = cli.start(['exec', key, '--wait', '60s', '--', ...section(log, 'w', 10)]);
    for (const run of [await first.result, await second.result, await writer.result]) expectExit(run, 0);
    const lines = readFileSync(log).toString().trim().split('\n');
    // Both readers started before either ended; the writer started after both ended.
    expect(lines.slice(0, 2).sort()).toEqual(['r1 start', 'r2 start']);
    expect(lines.slice(2, 4).sort()).toEqual(['r1 end', 'r2 end']);
    expect(lines.slice(4)).toEqual(['w start', 'w end']);
  }, 90_000);

  it('acquire --read prints a reader lease id that renew and release accept; a writer is refused while it is held', async () => {
    const key = 'reader-lease';
    const held = await cli.run(['acquire', key, '--read', '--lease-duration', '1m']);
    expectExit(held, 0);
    const lease = held.stdout.trim();
    expect(lease).toMatch(/^r[0-9a-f]{31}$/);
    const second = await cli.run(['acquire', key, '--read', '--no-wait']);
    expectExit(second, 0);
    expectExit(await cli.run(['acquire', key, '--no-wait']), 1);
    expectExit(await cli.run(['renew', key, lease, '--lease-duration', '2m']), 0);
    expectExit(await cli.run(['release', key, lease]), 0);
    expectExit(await cli.run(['release', key, second.stdout.trim()]), 0);
    expectExit(await cli.run(['acquire', key, '--no-wait']), 0);
  }, 60_000);

  it('--read with --limit or --data is a usage error, before any request', async () => {
    const limit = await cli.run(['exec', 'bad', '--read', '--limit', '2', '--', process.execPath, '-e', '']);
    expectExit(limit, 2);
    expect(limit.stderr).toContain('--limit cannot be used with --read');
    const data = await cli.run(['acquire', 'bad', '--read', '--data', '{"a":1}']);
    expectExit(data, 2);
    expect(data.stderr).toContain('--data cannot be used with --read');
  }, 30_000);
});

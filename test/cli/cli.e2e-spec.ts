/**
 * End-to-end tests of the `dynamo-lock` command line: the BUILT CLI (`dist/cli/main.js`, build
 * with `npx tsc -p tsconfig.build.json` first) runs as a child process against the real servers,
 * as a shell script would run it. Each server gets a fresh table, created by the CLI itself.
 *
 * Child commands of `exec` are small Node scripts that leave marker files, so the tests see
 * what they did (started, got SIGTERM, finished) without comparing clocks.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { findFreePort } from '../../tools/free-port.mjs';
import { createTestClient, deleteTable, describeEachServer, uniqueTableName, stealLock } from '../support/servers';
import { type ProxyMode, type StallingProxy, startStallingProxy } from '../support/hung-server';
import { Cli, type CliResult, repoRoot, type RunningCli } from './support/cli-process';

const NODE = process.execPath;
/** What `acquire` prints: the lease id and a newline, nothing else. */
const LEASE_LINE = /^[0-9a-f]{32}\n$/;

/** The lines of a stream's output. */
function lines(text: string): string[] {
  return text.split('\n').filter((line) => line !== '');
}

/** Polls `condition` every 25 ms until it holds. */
async function waitFor(condition: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(25);
  }
}

/** `expect` with the whole result in the failure message. */
function expectExit(result: CliResult, code: number): void {
  if (result.code !== code) {
    throw new Error(`expected exit ${code}, got ${result.code ?? result.signal}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`);
  }
}

/** A Node one-liner for `exec`, with `fs` and the given files (by name) in scope. */
function script(files: Record<string, string>, body: string): string[] {
  const declarations = Object.entries(files)
    .map(([name, file]) => `const ${name} = ${JSON.stringify(file)};`)
    .join(' ');
  return [NODE, '-e', `const fs = require('node:fs'); ${declarations} ${body}`];
}

/** Whether a process exists. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('dynamo-lock CLI: help, version, usage errors', () => {
  const cli = () => new Cli();

  it('prints the version of package.json with --version', async () => {
    const { version } = JSON.parse(readFileSync(path.join(repoRoot(), 'package.json'), 'utf8')) as { version: string };
    const result = await cli().run(['--version']);
    expectExit(result, 0);
    expect(result.stdout).toBe(`${version}\n`);
  });

  it('shows examples, exit codes and environment variables in --help', async () => {
    const result = await cli().run(['--help']);
    expectExit(result, 0);
    expect(result.stdout).toMatch(/Examples:\n {2}\$ dynamo-lock /);
    expect(result.stdout).toMatch(/Exit codes:\n {2}0 +success\n {2}1 +lock busy/);
    for (const code of ['2', '3', '4']) expect(result.stdout).toMatch(new RegExp(`\\n  ${code} {2,}\\S`));
    expect(result.stdout).toContain('DYNAMO_LOCK_TABLE');
    for (const command of ['table-create', 'table-check', 'acquire', 'renew', 'release', 'exec', 'lead', 'inspect', 'list']) {
      expect(result.stdout).toContain(`  ${command} `);
    }
  });

  it.each(['table-create', 'table-check', 'acquire', 'renew', 'release', 'exec', 'lead', 'inspect', 'list'])(
    'has examples and the global options in "%s --help"',
    async (command) => {
      const result = await cli().run([command, '--help']);
      expectExit(result, 0);
      expect(result.stdout).toMatch(new RegExp(`Usage: dynamo-lock ${command}`));
      expect(result.stdout).toMatch(new RegExp(`Examples:\n {2}\\$ .*dynamo-lock ${command}\\b`));
      expect(result.stdout).toContain('--endpoint <url>');
    },
  );

  it('rejects a malformed duration with exit 2, listing the accepted forms, before any request', async () => {
    const result = await cli().run(['acquire', 'deploy', '--lease-duration', '5 parsecs']);
    expectExit(result, 2);
    expect(result.stdout).toBe('');
    expect(lines(result.stderr)).toEqual([
      expect.stringMatching(
        /^dynamo-lock: --lease-duration: "5 parsecs" is not a valid duration \(unknown unit "parsecs"\)\. Accepted forms: .*'15 minutes'.*'1h30m'.*'2 hours'/,
      ),
    ]);
    const bare = await cli().run(['exec', 'deploy', '--wait', '30', '--', 'true']);
    expectExit(bare, 2);
    expect(bare.stderr).toMatch(/^dynamo-lock: --wait: "30" is not a valid duration \(add a unit, e\.g\. '30s'\)\. Accepted forms: /);
  });

  it('exits 2 with one line for commander usage errors: unknown option, missing argument, unknown command', async () => {
    for (const args of [
      ['acquire', 'deploy', '--frobnicate'],
      ['release', 'deploy'],
      ['aquire', 'deploy'],
      ['exec', 'deploy', 'sh', '-c', 'true'],
    ]) {
      const result = await cli().run(args);
      expectExit(result, 2);
      expect(lines(result.stderr)).toEqual([expect.stringMatching(/^dynamo-lock: \S.*\(see dynamo-lock --help\)$/)]);
    }
  });

  it("exits 2 for an invalid --owner or --key-prefix, naming the flag and its variable (not the library's options)", async () => {
    const owner = await cli().run(['inspect', 'deploy', '--owner', 'o'.repeat(257)]);
    expectExit(owner, 2);
    expect(lines(owner.stderr)).toEqual([
      expect.stringMatching(
        /^dynamo-lock: invalid setting: --owner \(or DYNAMO_LOCK_OWNER\) must be a non-empty string of at most 256 characters; got "o+…"\.$/,
      ),
    ]);
    const prefix = await cli().run(['inspect', 'deploy'], { env: { DYNAMO_LOCK_KEY_PREFIX: 'p'.repeat(2048) } });
    expectExit(prefix, 2);
    expect(prefix.stderr).toMatch(/^dynamo-lock: invalid setting: --key-prefix \(or DYNAMO_LOCK_KEY_PREFIX\) leaves no room for keys/);
    expect(`${owner.stderr}${prefix.stderr}`).not.toContain('DynamoLockModule');
  });

  it('exits 2 for malformed --data JSON', async () => {
    const result = await cli().run(['acquire', 'deploy', '--data', '{oops']);
    expectExit(result, 2);
    expect(result.stderr).toMatch(/^dynamo-lock: --data must be JSON/);
  });

  it('exits 4 quickly, with one line, when the endpoint is unreachable', async () => {
    const port = await findFreePort();
    const result = await new Cli({ name: 'dynalite', endpoint: `http://127.0.0.1:${port}` }).run(['table-check']);
    expectExit(result, 4);
    expect(lines(result.stderr)).toEqual([
      `dynamo-lock: cannot reach DynamoDB at http://127.0.0.1:${port}: connect ECONNREFUSED 127.0.0.1:${port}.`,
    ]);
    expect(result.ms).toBeLessThan(5_000);
  });

  it('says an outage under --no-wait in its own words: the lock, the failure, not busy, one attempt', async () => {
    const port = await findFreePort();
    const result = await new Cli({ name: 'dynalite', endpoint: `http://127.0.0.1:${port}` }).run(['acquire', 'deploy', '--no-wait']);
    expectExit(result, 4);
    expect(lines(result.stderr)).toEqual([
      expect.stringMatching(
        /^dynamo-lock: lock "deploy" could not be taken: DynamoDB failed \(.*ECONNREFUSED.*\) and no answer showed another holder, .*not a busy lock; one attempt \(--no-wait\)\.$/,
      ),
    ]);
  });
});

describeEachServer('dynamo-lock CLI', { shortRunOn: 'dynalite' }, (server) => {
  const tableName = uniqueTableName('cli');
  const client = createTestClient(server);
  const cli = new Cli(server, ['--table', tableName]);
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'dynamo-lock-cli-'));
    const created = await cli.run(['table-create']);
    expectExit(created, 0);
    expect(created.stderr).toContain(`Created lock table "${tableName}"`);
    expect(created.stdout).toBe('');
  }, 30_000);

  afterAll(async () => {
    await deleteTable(client, tableName).catch(() => undefined);
    client.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  describe('table-create and table-check', () => {
    it('table-check passes on the table table-create made; table-create again is a no-op', async () => {
      const check = await cli.run(['table-check']);
      expectExit(check, 0);
      expect(check.stderr).toContain(`Lock table "${tableName}" is ACTIVE with the right key schema`);
      expect(check.stdout).toBe('');
      const again = await cli.run(['table-create']);
      expectExit(again, 0);
      expect(again.stderr).toContain(`Lock table "${tableName}" already exists`);
    });

    it('table-check exits 4 with one line on a missing table, naming the region and endpoint it looked at', async () => {
      const missing = uniqueTableName('missing');
      const missingTable = new Cli(server, ['--table', missing]);
      const region = missingTable.env().AWS_REGION;
      const result = await missingTable.run(['table-check']);
      expectExit(result, 4);
      expect(result.stdout).toBe('');
      expect(lines(result.stderr)).toEqual([
        `dynamo-lock: DynamoDB table "${missing}" does not exist in region ${region} at ${server.endpoint}: name the table you use with --table (or DYNAMO_LOCK_TABLE) and its region with --region (or AWS_REGION), or create this one with \`dynamo-lock table-create --table ${missing}\`.`,
      ]);
      // The first request of another command says the same.
      const inspect = await missingTable.run(['inspect', 'deploy']);
      expectExit(inspect, 4);
      expect(lines(inspect.stderr)).toEqual(lines(result.stderr));
    });
  });

  describe('acquire, renew, release', () => {
    it('prints only the lease id; renew prints it again; release frees the lock', async () => {
      const acquired = await cli.run([
        'acquire',
        'deploy',
        '--lease-duration',
        '15 minutes',
        '--data',
        '{"job":"deploy"}',
        '--owner',
        'alice',
      ]);
      expectExit(acquired, 0);
      expect(acquired.stdout).toMatch(LEASE_LINE);
      expect(acquired.stderr).toBe('');
      const lease = acquired.stdout.trim();

      // The lock outlived the command.
      const held = JSON.parse((await cli.run(['inspect', 'deploy', '--json'])).stdout) as Record<string, unknown>;
      expect(held).toMatchObject({ key: 'deploy', owner: 'alice', leaseDuration: 900_000, data: { job: 'deploy' } });

      const renewed = await cli.run(['renew', 'deploy', lease, '--lease-duration', '300s']);
      expectExit(renewed, 0);
      expect(renewed.stdout).toBe(`${lease}\n`);
      expect(JSON.parse((await cli.run(['inspect', 'deploy', '--json'])).stdout)).toMatchObject({
        leaseDuration: 300_000,
        fencingToken: held.fencingToken,
      });
      const renewedAgain = await cli.run(['renew', 'deploy', lease]);
      expectExit(renewedAgain, 0);
      expect(JSON.parse((await cli.run(['inspect', 'deploy', '--json'])).stdout)).toMatchObject({ leaseDuration: 300_000 });

      const released = await cli.run(['release', 'deploy', lease]);
      expectExit(released, 0);
      expect(released.stdout).toBe('');
      expect((await cli.run(['inspect', 'deploy', '--json'])).stdout).toBe('null\n');

      // A released lease can no longer be renewed.
      const late = await cli.run(['renew', 'deploy', lease]);
      expectExit(late, 3);
      expect(lines(late.stderr)).toEqual([
        'dynamo-lock: this lease id does not hold lock "deploy": the lock is free (the lease expired or was released).',
      ]);
      // Nine runs of the command, each a new Node.js process: slow on a loaded machine.
    }, 45_000);

    it('exits 3 for release and renew with another lease id, naming the holder, and leaves the lock alone', async () => {
      const lease = (await cli.run(['acquire', 'wrong-id', '--owner', 'bob'])).stdout.trim();
      // A well-formed lease id that is not this lock's.
      const other = '0123456789abcdef0123456789abcdef';
      for (const command of ['release', 'renew']) {
        const result = await cli.run([command, 'wrong-id', other]);
        expectExit(result, 3);
        expect(result.stdout).toBe('');
        expect(lines(result.stderr)).toEqual([
          expect.stringMatching(
            /^dynamo-lock: this lease id does not hold lock "wrong-id": it is held by "bob" \(fencing token \d+\) since /,
          ),
        ]);
      }
      expect(JSON.parse((await cli.run(['inspect', 'wrong-id', '--json'])).stdout)).toMatchObject({ owner: 'bob' });
      expectExit(await cli.run(['release', 'wrong-id', lease]), 0);
    });

    it('exits 2 for a malformed lease id (a usage error, not a lost lease), before any request, and leaves the lock alone', async () => {
      const lease = (await cli.run(['acquire', 'typo', '--owner', 'carol'])).stdout.trim();
      for (const [command, id] of [
        ['release', 'not-the-lease'],
        ['renew', lease.slice(0, -1)],
        ['release', `${lease} `],
      ]) {
        const result = await cli.run([command, 'typo', id]);
        expectExit(result, 2);
        expect(result.stdout).toBe('');
        expect(lines(result.stderr)).toEqual([
          `dynamo-lock: ${JSON.stringify(id)} is not a lease id: a lease id is the 32 characters \`dynamo-lock acquire\` printed, hexadecimal but for a reader's leading r (check for a truncated or mistyped copy).`,
        ]);
      }
      expect(JSON.parse((await cli.run(['inspect', 'typo', '--json'])).stdout)).toMatchObject({ owner: 'carol' });
      expectExit(await cli.run(['release', 'typo', lease]), 0);
    });

    it('exits 1 on a busy lock with --no-wait, and after --wait, with one stderr line naming the holder', async () => {
      const lease = (await cli.run(['acquire', 'busy', '--owner', 'holder-1'])).stdout.trim();
      const now = await cli.run(['acquire', 'busy', '--no-wait']);
      expectExit(now, 1);
      expect(now.stdout).toBe('');
      expect(lines(now.stderr)).toEqual([
        expect.stringMatching(/^dynamo-lock: lock "busy" is held by "holder-1" \(fencing token \d+\); not waiting \(--no-wait\)\.$/),
      ]);

      // Not a terminal: no progress line while waiting, just the outcome.
      const waited = await cli.run(['acquire', 'busy', '--wait', '1s']);
      expectExit(waited, 1);
      expect(waited.ms).toBeGreaterThanOrEqual(1_000);
      expect(lines(waited.stderr)).toEqual([
        expect.stringMatching(/^dynamo-lock: lock "busy" is held by "holder-1" .*; gave up after waiting 1(\.\d)?s\.$/),
      ]);
      expectExit(await cli.run(['release', 'busy', lease]), 0);
    });

    it('gets a lock that is released while it waits', async () => {
      const lease = (await cli.run(['acquire', 'handover'])).stdout.trim();
      const waiting = cli.start(['acquire', 'handover', '--wait', '20s', '--owner', 'second']);
      await sleep(800);
      expectExit(await cli.run(['release', 'handover', lease]), 0);
      const second = await waiting.result;
      expectExit(second, 0);
      expect(second.stdout).toMatch(LEASE_LINE);
      expect(JSON.parse((await cli.run(['inspect', 'handover', '--json'])).stdout)).toMatchObject({ owner: 'second' });
      expectExit(await cli.run(['release', 'handover', second.stdout.trim()]), 0);
    });

    it('exits 130 when SIGINT interrupts the wait', async () => {
      const lease = (await cli.run(['acquire', 'interrupted'])).stdout.trim();
      // --debug: its first line tells that the wait has begun (and its signal handlers are in place).
      const waiting = cli.start(['acquire', 'interrupted', '--wait', '20s', '--debug']);
      let stderr = '';
      waiting.process.stderr?.on('data', (chunk: string) => (stderr += chunk));
      await waitFor(() => stderr.includes('acquiring lock "interrupted"'), 'the wait to begin');
      await sleep(200);
      waiting.process.kill('SIGINT');
      const result = await waiting.result;
      expectExit(result, 130);
      // After these two lines, --debug adds the stack trace.
      expect(lines(result.stderr).slice(0, 2)).toEqual([
        'dynamo-lock: [debug] acquiring lock "interrupted": waiting up to 20s, lease 5m.',
        'dynamo-lock: interrupted by SIGINT while waiting for lock "interrupted".',
      ]);
      expectExit(await cli.run(['release', 'interrupted', lease]), 0);
    });
  });

  describe('exec', () => {
    it('runs exactly one of two concurrent jobs at a time', async () => {
      const log = path.join(dir, 'exclusive.log');
      const job = (id: string) =>
        script({ log }, `fs.appendFileSync(log, 'start ${id}\\n'); setTimeout(() => fs.appendFileSync(log, 'end ${id}\\n'), 700);`);
      const [a, b] = await Promise.all([
        cli.run(['exec', 'exclusive', '--wait', '20s', '--', ...job('A')]),
        cli.run(['exec', 'exclusive', '--wait', '20s', '--', ...job('B')]),
      ]);
      expectExit(a, 0);
      expectExit(b, 0);
      const order = lines(readFileSync(log, 'utf8'));
      expect(order).toHaveLength(4);
      const [first, second] = [order[0].split(' ')[1], order[2].split(' ')[1]];
      expect(order).toEqual([`start ${first}`, `end ${first}`, `start ${second}`, `end ${second}`]);
      expect(new Set([first, second])).toEqual(new Set(['A', 'B']));
      expect((await cli.run(['inspect', 'exclusive', '--json'])).stdout).toBe('null\n');
    });

    it("passes the command's exit code and output through, and releases the lock", async () => {
      const result = await cli.run([
        'exec',
        'exit-code',
        '--',
        ...script({}, `console.log('out'); console.error('err'); process.exit(7);`),
      ]);
      expectExit(result, 7);
      expect(result.stdout).toBe('out\n');
      expect(result.stderr).toBe('err\n');
      expect((await cli.run(['inspect', 'exit-code', '--json'])).stdout).toBe('null\n');

      const killed = await cli.run(['exec', 'exit-code', '--', ...script({}, `process.kill(process.pid, 'SIGKILL');`)]);
      expectExit(killed, 128 + 9);
      const missing = await cli.run(['exec', 'exit-code', '--', 'no-such-command-dynamo-lock-test']);
      expectExit(missing, 127);
      expect(lines(missing.stderr)).toEqual(['dynamo-lock: cannot run "no-such-command-dynamo-lock-test": command not found.']);
    });

    it('exits 1 with --no-wait while another holder has the lock, without running the command', async () => {
      const lease = (await cli.run(['acquire', 'exec-busy', '--owner', 'deployer'])).stdout.trim();
      const marker = path.join(dir, 'exec-busy.ran');
      const result = await cli.run(['exec', 'exec-busy', '--no-wait', '--', ...script({ marker }, `fs.writeFileSync(marker, 'ran');`)]);
      expectExit(result, 1);
      expect(result.stderr).toMatch(/^dynamo-lock: lock "exec-busy" is held by "deployer"/);
      expect(existsSync(marker)).toBe(false);
      expectExit(await cli.run(['release', 'exec-busy', lease]), 0);
    });

    it('forwards SIGTERM to the command, exits with its code, and releases the lock', async () => {
      const ready = path.join(dir, 'term.ready');
      const got = path.join(dir, 'term.got');
      const running = cli.start([
        'exec',
        'forwarded',
        '--',
        ...script(
          { ready, got },
          `process.on('SIGTERM', () => { fs.writeFileSync(got, 'SIGTERM'); process.exit(42); }); fs.writeFileSync(ready, ''); setInterval(() => {}, 1000);`,
        ),
      ]);
      await waitFor(() => existsSync(ready), 'the command to start');
      expect(JSON.parse((await cli.run(['inspect', 'forwarded', '--json'])).stdout)).toMatchObject({ key: 'forwarded' });
      running.process.kill('SIGTERM');
      const result = await running.result;
      expectExit(result, 42);
      expect(readFileSync(got, 'utf8')).toBe('SIGTERM');
      expect((await cli.run(['inspect', 'forwarded', '--json'])).stdout).toBe('null\n');
    });

    it('exits 128 + 15 when the forwarded SIGTERM ends the command', async () => {
      const ready = path.join(dir, 'term-default.ready');
      const running = cli.start([
        'exec',
        'forwarded-default',
        '--',
        ...script({ ready }, `fs.writeFileSync(ready, ''); setInterval(() => {}, 1000);`),
      ]);
      await waitFor(() => existsSync(ready), 'the command to start');
      running.process.kill('SIGTERM');
      expectExit(await running.result, 143);
      expect((await cli.run(['inspect', 'forwarded-default', '--json'])).stdout).toBe('null\n');
    });

    it.each(['exec', 'lead'])(
      '%s stops the command (SIGTERM, then SIGKILL) and exits 3 when the lock is lost',
      async (command) => {
        const name = `${command}-stolen`;
        const pidFile = path.join(dir, `${name}.pid`);
        const termFile = path.join(dir, `${name}.term`);
        // The command ignores SIGTERM, so only the SIGKILL after --kill-after ends it.
        const running = cli.start([
          command,
          name,
          '--lease-duration',
          '2s',
          '--kill-after',
          '500ms',
          '--',
          ...script(
            { pidFile, termFile },
            `process.on('SIGTERM', () => fs.writeFileSync(termFile, 'SIGTERM')); fs.writeFileSync(pidFile, String(process.pid)); setInterval(() => {}, 1000);`,
          ),
        ]);
        // The file exists, empty, before the pid is written into it (and process.kill(0) would signal our own group).
        await waitFor(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8') !== '', 'the command to start');
        const pid = Number(readFileSync(pidFile, 'utf8'));
        expect(pid).toBeGreaterThan(0);
        // Another owner takes the item over: the next heartbeat (every ~670 ms) finds a foreign token.
        await stealLock(client, tableName, name);
        const result = await running.result;
        expectExit(result, 3);
        expect(result.ms).toBeLessThan(10_000);
        expect(lines(result.stderr)).toEqual([
          expect.stringMatching(
            new RegExp(
              `^dynamo-lock: Lock "${name}" was lost: .*"thief".* Stopping ".*" \\(pid \\d+\\): SIGTERM now, SIGKILL after 500ms; exiting with 3\\.$`,
            ),
          ),
        ]);
        expect(readFileSync(termFile, 'utf8')).toBe('SIGTERM');
        // Killed: gone once its parent (or init, for a command run through a shell) has reaped it,
        // which a loaded machine may take a moment to do.
        await waitFor(() => !alive(pid), 'the command to be gone', 2_000);
        // The thief's lock was left alone.
        expect(JSON.parse((await cli.run(['inspect', name, '--json'])).stdout)).toMatchObject({ owner: 'thief' });
      },
      20_000,
    );
  });

  describe('lead', () => {
    it('runs the command on one host at a time; a follower takes over within a watch interval when it exits', async () => {
      const log = path.join(dir, 'lead.log');
      const job = (id: string) =>
        script(
          { log },
          `fs.appendFileSync(log, 'start ${id} ' + Date.now() + '\\n'); setTimeout(() => fs.appendFileSync(log, 'end ${id} ' + Date.now() + '\\n'), 700);`,
        );
      const [a, b] = await Promise.all(
        ['A', 'B'].map((id) => cli.run(['lead', 'lead-one', '--lease-duration', '10s', '--watch-interval', '200ms', '--', ...job(id)])),
      );
      expectExit(a, 0);
      expectExit(b, 0);
      const order = lines(readFileSync(log, 'utf8')).map((line) => line.split(' '));
      expect(order.map(([what]) => what)).toEqual(['start', 'end', 'start', 'end']);
      const [first, second] = [order[0][1], order[2][1]];
      expect(order.map(([, id]) => id)).toEqual([first, first, second, second]);
      expect(new Set([first, second])).toEqual(new Set(['A', 'B']));
      // The leader resigned when its command exited: the follower did not wait for the 10 s lease.
      expect(Number(order[2][2]) - Number(order[1][2])).toBeLessThan(5_000);
      expect((await cli.run(['inspect', 'lead-one', '--json'])).stdout).toBe('null\n');
    }, 20_000);

    it('exits 1 when not elected within --wait, without running the command', async () => {
      const lease = (await cli.run(['acquire', 'lead-busy', '--owner', 'incumbent'])).stdout.trim();
      const marker = path.join(dir, 'lead-busy.ran');
      const result = await cli.run([
        'lead',
        'lead-busy',
        '--wait',
        '500ms',
        '--',
        ...script({ marker }, `fs.writeFileSync(marker, 'ran');`),
      ]);
      expectExit(result, 1);
      expect(lines(result.stderr)).toEqual([
        'dynamo-lock: "lead-busy" is led by "incumbent"; following (the command starts when this host is elected).',
        expect.stringMatching(/^dynamo-lock: not elected leader of "lead-busy" within \d+ms: "incumbent" leads \(fencing token \d+\)\.$/),
      ]);
      expect(existsSync(marker)).toBe(false);
      expectExit(await cli.run(['release', 'lead-busy', lease]), 0);
      const bad = await cli.run(['lead', 'lead-busy', '--lease-duration', '2s', '--watch-interval', '5s', '--', 'true']);
      expectExit(bad, 2);
      expect(bad.stderr).toContain('watchInterval (5000 ms) must not be longer than the lease (2000 ms)');
    });
  });

  describe('lead --no-wait', () => {
    it('exits 1 at once without running the command when another host leads; runs it when nobody does', async () => {
      const lease = (await cli.run(['acquire', 'lead-now', '--owner', 'incumbent'])).stdout.trim();
      const token = (JSON.parse((await cli.run(['inspect', 'lead-now', '--json'])).stdout) as { fencingToken: number }).fencingToken;
      const marker = path.join(dir, 'lead-now.ran');
      const command = script({ marker }, `fs.writeFileSync(marker, 'ran');`);
      const busy = await cli.run(['lead', 'lead-now', '--no-wait', '--', ...command]);
      expectExit(busy, 1);
      expect(lines(busy.stderr)).toEqual([
        `dynamo-lock: "lead-now" is led by "incumbent" (fencing token ${token}); not waiting (--no-wait).`,
      ]);
      expect(busy.ms).toBeLessThan(5_000);
      expect(existsSync(marker)).toBe(false);
      expectExit(await cli.run(['release', 'lead-now', lease]), 0);
      const led = await cli.run(['lead', 'lead-now', '--no-wait', '--', ...command]);
      expectExit(led, 0);
      expect(readFileSync(marker, 'utf8')).toBe('ran');
      // It resigned when the command exited.
      expect((await cli.run(['inspect', 'lead-now', '--json'])).stdout).toBe('null\n');
    });
  });

  describe('lead --no-wait when DynamoDB fails after start-up', () => {
    const proxies: StallingProxy[] = [];
    afterAll(() => Promise.all(proxies.map((p) => p.close())));
    const proxied = async () => {
      const proxy = await startStallingProxy(server.endpoint);
      proxies.push(proxy);
      return { proxy, cli: new Cli({ name: server.name, endpoint: proxy.endpoint }, ['--table', tableName]) };
    };
    /**
     * A CLI whose start-up read of `name` (as `inspect --json` reads it: the lock, then a semaphore;
     * the text form of a free key also reads a job's last fire) passes, and whose later requests,
     * the campaign's, meet `mode`.
     */
    const failingAfterStart = async (name: string, mode: ProxyMode) => {
      const counter = await proxied();
      expectExit(await counter.cli.run(['inspect', name, '--json']), 0);
      const failing = await proxied();
      failing.proxy.switchAfter(counter.proxy.requests, mode);
      return { ...failing, startup: counter.proxy.requests };
    };
    /** The run's result, or null (and the process killed) if it still runs after `ms`. */
    const within = async (running: RunningCli, ms: number): Promise<CliResult | null> => {
      const result = await Promise.race([running.result, sleep(ms).then(() => null)]);
      if (!result) running.process.kill('SIGKILL');
      return result;
    };

    it('exits 4 at the first failed request of the campaign, without running the command', async () => {
      const { proxy, cli: failing, startup } = await failingAfterStart('lead-reset', { kind: 'reset' });
      const marker = path.join(dir, 'lead-reset.ran');
      const result = await within(
        failing.start(['lead', 'lead-reset', '--no-wait', '--', ...script({ marker }, `fs.writeFileSync(marker, 'ran');`)]),
        8_000,
      );
      expect(result).not.toBeNull();
      expectExit(result!, 4);
      expect(lines(result!.stderr)).toEqual([expect.stringMatching(/^dynamo-lock: /)]);
      expect(result!.stderr).not.toContain('led by');
      // A reset connection is not a time-out, whatever the SDK names it.
      expect(result!.stderr).not.toContain('TimeoutError');
      expect(proxy.requests).toBeGreaterThan(startup);
      expect(existsSync(marker)).toBe(false);
    });

    it("says a failed election write in the CLI's words: the lock, the failure, not busy, one attempt", async () => {
      // The campaign's first read (the item is free) passes; its write to take the term fails.
      const { proxy, cli: failing, startup } = await failingAfterStart('lead-write', { kind: 'pass' });
      proxy.switchAfter(startup + 1, { kind: 'reset' });
      const result = await within(failing.start(['lead', 'lead-write', '--no-wait', '--', NODE, '-e', '']), 8_000);
      expect(result).not.toBeNull();
      expectExit(result!, 4);
      expect(lines(result!.stderr)).toEqual([
        expect.stringMatching(
          /^dynamo-lock: lock "lead-write" could not be taken: DynamoDB failed \(.+\) and no answer showed another holder, .*not a busy lock; one attempt \(--no-wait\)\.$/,
        ),
      ]);
      expect(result!.stderr).not.toContain('TimeoutError');
    });

    it('exits 130 on SIGINT while the campaign waits for a hung DynamoDB (once the request in flight times out)', async () => {
      const { proxy, cli: hung, startup } = await failingAfterStart('lead-hung', { kind: 'hang' });
      const running = hung.start(['lead', 'lead-hung', '--no-wait', '--', NODE, '-e', '']);
      await waitFor(() => proxy.requests > startup, "the campaign's first read");
      await sleep(200);
      running.process.kill('SIGINT');
      const result = await within(running, 8_000);
      expect(result).not.toBeNull();
      expectExit(result!, 130);
      expect(lines(result!.stderr)).toEqual(['dynamo-lock: interrupted by SIGINT while waiting for lock "lead-hung".']);
    });
  });

  describe('inspect and list', () => {
    it('report holder, fencing token, times and data as JSON and as a table', async () => {
      const leases = new Map<string, string>();
      for (const [name, owner, extra] of [
        ['report-a', 'alice', ['--data', '{"run":1}']],
        ['report-b', 'bob', []],
        ['other-c', 'carol', []],
      ] as const) {
        const acquired = await cli.run(['acquire', name, '--owner', owner, ...extra]);
        expectExit(acquired, 0);
        leases.set(name, acquired.stdout.trim());
      }

      const listed = await cli.run(['list', '--prefix', 'report-', '--json']);
      expectExit(listed, 0);
      const locks = JSON.parse(listed.stdout) as Record<string, unknown>[];
      expect(locks.map((lock) => [lock.key, lock.owner])).toEqual([
        ['report-a', 'alice'],
        ['report-b', 'bob'],
      ]);
      expect(locks[0]).toMatchObject({ leaseDuration: 300_000, data: { run: 1 }, fencingToken: expect.any(Number) });
      expect(locks[1]).not.toHaveProperty('data');
      for (const lock of locks) {
        const acquiredAt = Date.parse(String(lock.acquiredAt));
        expect(Math.abs(acquiredAt - Date.now())).toBeLessThan(60_000);
        expect(Date.parse(String(lock.expiresAt))).toBe(Date.parse(String(lock.updatedAt)) + 300_000);
      }

      const inspected = JSON.parse((await cli.run(['inspect', 'report-a', '--json'])).stdout) as unknown;
      expect(inspected).toEqual(locks[0]);

      const table = lines((await cli.run(['list'])).stdout);
      expect(table[0]).toMatch(/^KEY +OWNER +FENCING TOKEN +ACQUIRED +RENEWED +LEASE +EXPIRES +DATA$/);
      expect(table.slice(1).map((row) => row.split(/ +/)[0])).toEqual(expect.arrayContaining(['report-a', 'report-b', 'other-c']));
      const ownerColumn = table[0].indexOf('OWNER');
      for (const row of table.slice(1)) expect(row[ownerColumn - 1]).toBe(' ');
      expect(table.find((row) => row.startsWith('report-a'))).toContain('{"run":1}');

      const fields = lines((await cli.run(['inspect', 'report-a'])).stdout);
      expect(fields).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/^Owner: +alice$/),
          expect.stringMatching(/^Fencing token: +\d+$/),
          expect.stringMatching(/^Data: +\{"run":1\}$/),
        ]),
      );
      expect((await cli.run(['inspect', 'nobody-holds-this'])).stdout).toBe('Lock "nobody-holds-this" is free.\n');

      for (const [name, lease] of leases) expectExit(await cli.run(['release', name, lease]), 0);
      expect((await cli.run(['list', '--prefix', 'report-', '--json'])).stdout).toBe('[]\n');
    });
  });
});

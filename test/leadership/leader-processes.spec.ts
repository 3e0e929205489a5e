/**
 * `@WhenLeader` across four Nest apps, each a separate OS process (`leader-app.mjs`, on the built
 * `dist/`), against the real servers: exactly one leader at any time; an every-second `@Cron` job
 * runs each tick exactly once, on the leader, without a DynamoDB request per tick; the leader
 * SIGKILLed is replaced within one lease and one watch interval (not before its lease could have
 * run out); a leader paused (SIGSTOP) likewise, and once woken it runs no tick; a leader stopped
 * gracefully (SIGTERM, shutdown hooks) hands over within 1 s.
 *
 * Two apps run with their wall clock shifted by 30 s (ahead, behind): a follower that trusted it
 * would take over at once. The apps print this host's real wall-clock time (every process runs
 * here, so the test may compare them; the library never does).
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { once } from 'node:events';
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { killOnExit } from '../../tools/exit-guard.mjs';
import { LockFixture } from '../support/lock-fixture';
import { describeEachServer } from '../support/servers';

/** Two of the apps run with their wall clock 30 s ahead and behind: nothing may depend on it. */
const SKEW_PRELOAD = resolve('test/support/clock-skew.cjs');
const SKEWS: Record<string, number> = { P: 0, Q: 30_000, R: -30_000, S: 0 };

/** Lease 3 s, heartbeat every 1.5 s; followers read every 250 ms (the setting for a hand-over within 1 s). */
const LEASE_MS = 3_000;
const HEARTBEAT_MS = 1_500;
const WATCH_MS = 250;

/** One line an app printed. */
interface AppLine {
  instance: string;
  at: number;
  ready?: boolean;
  elected?: boolean;
  revoked?: string;
  released?: boolean;
  tick?: boolean;
  requests?: number;
  token?: number;
}

describeEachServer('@WhenLeader across app processes', { shortRunOn: 'dynalite' }, (server) => {
  const fixture = new LockFixture(server);
  beforeAll(() => fixture.setup());
  afterAll(() => fixture.close());

  it('keeps one leader at a time and runs each tick once; replaces a killed or paused leader within a lease and a watch, a stopped one within 1 s', async () => {
    const script = resolve('test/nest/fixtures/leader-app.mjs');
    const children = new Map<string, ChildProcessWithoutNullStreams>();
    const output: AppLine[] = [];
    const problems: string[] = [];
    const until = async (what: string, found: () => AppLine | undefined, timeoutMs = 15_000): Promise<AppLine> => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const line = found();
        if (line) return line;
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(output)}`);
        await sleep(20);
      }
    };
    const elections = () => output.filter((l) => l.elected);
    try {
      for (const instance of ['P', 'Q', 'R', 'S']) {
        const env = {
          ...process.env,
          INSTANCE: instance,
          ENDPOINT: server.endpoint,
          TABLE: fixture.tableName,
          CRON: '* * * * * *',
          LEASE: String(LEASE_MS),
          HEARTBEAT: String(HEARTBEAT_MS),
          WATCH: String(WATCH_MS),
          CLOCK_SKEW_MS: String(SKEWS[instance]),
        };
        const child = spawn(process.execPath, ['--require', SKEW_PRELOAD, script], { env });
        children.set(instance, child);
        const unregister = killOnExit(() => child.kill('SIGKILL'));
        child.once('exit', unregister);
        let buffered = '';
        child.stdout.on('data', (chunk: Buffer) => {
          buffered += chunk.toString();
          const lines = buffered.split('\n');
          buffered = lines.pop() ?? '';
          for (const line of lines) output.push(JSON.parse(line) as AppLine);
        });
        child.stderr.on('data', (chunk: Buffer) => {
          for (const line of chunk.toString().split('\n').filter(Boolean))
            if (!line.includes('"level":"debug"')) problems.push(`${instance} ${line}`);
        });
      }
      await until('four apps', () => (output.filter((l) => l.ready).length === 4 ? output[0] : undefined));

      // Phase 1: one leader; every tick runs once, on it, with no request per tick.
      const first = await until('a first leader', () => elections()[0]);
      await sleep(4_000);
      expect(elections()).toHaveLength(1);
      const ticks = output.filter((l) => l.tick);
      expect(ticks.length).toBeGreaterThanOrEqual(3);
      expect(new Set(ticks.map((t) => t.instance))).toEqual(new Set([first.instance]));
      expect(new Set(ticks.map((t) => t.token))).toEqual(new Set([first.token]));
      expectOncePerSecond(ticks);
      const [from, to] = [ticks[0], ticks.at(-1)!];
      // Heartbeats only (one per 1.5 s): a request per tick would add one per second on top.
      expect(to.requests! - from.requests!).toBeLessThanOrEqual(Math.floor((to.at - from.at) / HEARTBEAT_MS) + 1);

      // Phase 2: the leader is SIGKILLed; another takes over one lease after its last heartbeat.
      const killedAt = Date.now();
      children.get(first.instance)!.kill('SIGKILL');
      const second = await until('a second leader', () => elections()[1]);
      expect(second.instance).not.toBe(first.instance);
      expect(second.token).toBeGreaterThan(first.token!);
      // Its last heartbeat was at most 1.5 s before the kill: earlier than that plus a lease is a bug.
      expect(second.at - killedAt).toBeGreaterThanOrEqual(LEASE_MS - HEARTBEAT_MS - 100);
      // Within a lease and one watch interval of the kill, plus room for a loaded machine.
      expect(second.at - killedAt).toBeLessThanOrEqual(LEASE_MS + WATCH_MS + 1_500);
      await sleep(1_500);
      const afterKill = output.filter((l) => l.tick && l.at > killedAt);
      expect(afterKill.length).toBeGreaterThanOrEqual(1);
      expect(new Set(afterKill.map((t) => t.instance))).toEqual(new Set([second.instance]));

      // Phase 3: the leader is paused (SIGSTOP) past its lease: replaced as if dead; woken up, it
      // finds its lease gone on its own clock and runs no tick.
      const stoppedAt = Date.now();
      children.get(second.instance)!.kill('SIGSTOP');
      const third = await until('a third leader', () => elections()[2]);
      expect([first.instance, second.instance]).not.toContain(third.instance);
      expect(third.at - stoppedAt).toBeGreaterThanOrEqual(LEASE_MS - HEARTBEAT_MS - 100);
      expect(third.at - stoppedAt).toBeLessThanOrEqual(LEASE_MS + WATCH_MS + 1_500);
      children.get(second.instance)!.kill('SIGCONT');
      const woke = await until('the paused leader to step down', () => output.find((l) => l.revoked && l.instance === second.instance));
      expect(['expired', 'taken']).toContain(woke.revoked);
      await sleep(1_200);
      expect(output.filter((l) => l.tick && l.instance === second.instance && l.at > stoppedAt + 50)).toEqual([]);

      // Phase 4: graceful stop (shutdown hooks): a follower leads within 1 s of the release.
      children.get(third.instance)!.kill('SIGTERM');
      const released = await until('the release', () => output.find((l) => l.released && l.instance === third.instance));
      const fourth = await until('a fourth leader', () => elections()[3]);
      expect([first.instance, third.instance]).not.toContain(fourth.instance);
      expect(fourth.at - released.at).toBeLessThan(1_000);
      expect(output.find((l) => l.revoked && l.instance === third.instance)?.revoked).toBe('shutdown');
      await sleep(800);

      // Exactly one leader at any time: each term begins after the previous one ended (or its
      // holder could no longer act: killed, paused).
      expect(second.at).toBeGreaterThan(killedAt);
      expect(third.at).toBeGreaterThan(stoppedAt);
      expect(fourth.at).toBeGreaterThanOrEqual(released.at);
      expect(elections()).toHaveLength(4);
      console.info(
        `[${server.name}] leaders ${[first, second, third, fourth].map((e) => `${e.instance}${SKEWS[e.instance] ? ` (clock ${SKEWS[e.instance] > 0 ? '+' : ''}${SKEWS[e.instance] / 1000} s)` : ''}`).join(' → ')}; ` +
          `SIGKILL → next leader ${second.at - killedAt} ms, SIGSTOP → ${third.at - stoppedAt} ms (lease ${LEASE_MS} ms, heartbeat ${HEARTBEAT_MS} ms, watch ${WATCH_MS} ms); ` +
          `release at shutdown → next leader ${fourth.at - released.at} ms; ${output.filter((l) => l.tick).length} ticks.`,
      );
      const allTicks = output.filter((l) => l.tick);
      expectOncePerSecond(allTicks);
      // The woken leader's warning that its lock expired is expected; nothing else may be logged.
      problems.splice(
        0,
        problems.length,
        ...problems.filter((line) => !(line.startsWith(`${second.instance} `) && line.includes('scheduler'))),
      );
    } finally {
      for (const child of children.values()) child.kill('SIGKILL');
      await Promise.all(
        [...children.values()].map((child) => (child.exitCode === null && child.signalCode === null ? once(child, 'exit') : undefined)),
      );
    }
    // The cron package itself warns when a loaded machine fires a timer late; that line is not ours.
    expect(problems.filter((line) => !line.slice(2).startsWith('[Cron] Missed execution deadline'))).toEqual([]);
  }, 60_000);
});

/** No second of the wall clock had two job runs. */
function expectOncePerSecond(ticks: AppLine[]): void {
  const seconds = new Map<number, string[]>();
  for (const tick of ticks) {
    const second = Math.floor(tick.at / 1_000);
    seconds.set(second, [...(seconds.get(second) ?? []), tick.instance]);
  }
  for (const [second, instances] of seconds) expect({ second, instances }).toEqual({ second, instances: [expect.any(String)] });
}

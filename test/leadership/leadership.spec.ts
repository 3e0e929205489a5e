/**
 * `lead()` against the real servers: one leader among three managers, followers that only read,
 * takeover one lease after a leader goes silent (never before its lease could have run out on its
 * own clock), hand-over within one watch interval after `resign()`, the campaign going on as a
 * follower after a loss, and bad input refused before any request.
 *
 * Lease 1.5 s (heartbeat every 500 ms), watch interval 300 ms; bounds are generous for a loaded
 * machine but each separates the correct behaviour from the wrong one.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Leadership, type LockEvent, LockKeyError, type LockLostError, LockValidationError } from '../../lib';
import { firstRoundOf } from '../../lib/core/leadership/leadership';
import { injectFaults } from '../support/fault-injection';
import { LockFixture } from '../support/lock-fixture';
import { countRequests } from '../support/request-counter';
import { describeEachServer } from '../support/servers';

const LEASE_MS = 1_500;
const WATCH_MS = 300;

describeEachServer('lead()', (server) => {
  const fixture = new LockFixture(server);
  beforeAll(() => fixture.setup());
  afterAll(() => fixture.close());

  /** Three managers campaigning for `name`, each with its own client, request counter and faults. */
  function campaign(name: string, count = 3, options: { requestTimeout?: number } = {}) {
    return Array.from({ length: count }, (_, i) => {
      const client = fixture.newClient({ maxAttempts: 1 });
      const requests = countRequests(client);
      const faults = injectFaults(client);
      const manager = fixture.manager({ client, ownerName: `m${i}`, requestTimeout: 300, ...options });
      const events: { type: 'elected' | 'revoked'; at: number; token?: number; reason?: LockLostError['reason'] }[] = [];
      const leadership: Leadership = manager.lead(name, {
        leaseDuration: LEASE_MS,
        watchInterval: WATCH_MS,
        onElected: (lock) => events.push({ type: 'elected', at: performance.now(), token: lock.fencingToken }),
        onRevoked: (reason) => events.push({ type: 'revoked', at: performance.now(), reason: reason.reason }),
      });
      return { manager, leadership, requests, faults, events };
    });
  }

  const leaderOf = <T extends { leadership: Leadership }>(members: T[]): T[] => members.filter((m) => m.leadership.isLeader);

  it('elects exactly one leader; it only heartbeats and the followers only read, timed by the watch interval', async () => {
    const members = campaign('one-leader');
    const first = await Promise.race(members.map((m) => m.leadership.whenLeader()));
    expect(leaderOf(members)).toHaveLength(1);
    const [leader] = leaderOf(members);
    expect(leader.leadership.lock?.fencingToken).toBe(first.fencingToken);
    expect(leader.leadership.signal.aborted).toBe(false);
    // The losers' attempts of the first election may still be in flight.
    await sleep(WATCH_MS);
    for (const m of members) m.requests.reset();
    // Sampled every 50 ms for 1.5 s: never two leaders, never none.
    for (let i = 0; i < 30; i++) {
      expect(leaderOf(members)).toEqual([leader]);
      await sleep(50);
    }
    for (const m of members) {
      const writes = m.requests.count('UpdateItem');
      const reads = m.requests.count('GetItem');
      if (m === leader) {
        // Heartbeats every 500 ms: about 3 writes, no reads.
        expect(reads).toBe(0);
        expect(writes).toBeGreaterThanOrEqual(2);
        expect(writes).toBeLessThanOrEqual(4);
      } else {
        // One read per 300 ms (about 5), never a failed write; ten reads a second would be 15.
        expect(writes).toBe(0);
        expect(reads).toBeGreaterThanOrEqual(2);
        expect(reads).toBeLessThanOrEqual(7);
        expect(m.leadership.signal.aborted).toBe(true);
        expect(m.leadership.lock).toBeUndefined();
      }
    }
    const info = await members[0].manager.inspect('one-leader');
    expect(info?.owner).toBe(leader.manager.options.ownerName);
  });

  it('replaces a silent leader one lease after its last heartbeat; the old one stops leading first and campaigns on', async () => {
    const members = campaign('silent-leader');
    await Promise.race(members.map((m) => m.leadership.whenLeader()));
    const [old] = leaderOf(members);
    const oldToken = old.leadership.lock!.fencingToken;
    // Cut the leader off DynamoDB: its heartbeats fail from now on.
    const silentAt = performance.now();
    old.faults.failNext('*', { kind: 'network-error', times: 1_000_000 });
    let overlap = false;
    const others = members.filter((m) => m !== old);
    for (const m of others) m.leadership.onElected(() => (overlap ||= old.leadership.isLeader));
    const next = await Promise.race(others.map((m) => m.leadership.whenLeader()));
    const tookMs = performance.now() - silentAt;
    // Its last heartbeat was at most 500 ms before: a takeover earlier than a lease after it is a bug.
    expect(tookMs).toBeGreaterThanOrEqual(LEASE_MS - 500 - 50);
    // A lease and one watch interval after the last heartbeat, plus room for a loaded machine.
    expect(tookMs).toBeLessThan(LEASE_MS + WATCH_MS + 1_500);
    expect(overlap).toBe(false);
    expect(old.leadership.isLeader).toBe(false);
    expect(old.events.at(-1)).toMatchObject({ type: 'revoked', reason: 'expired' });
    expect(next.fencingToken).toBeGreaterThan(oldToken);
    expect(leaderOf(members)).toHaveLength(1);

    // Back online, the old leader follows (reads only), and is elected again when the others resign.
    old.faults.clear();
    expect(old.leadership.resigned).toBe(false);
    await sleep(2 * WATCH_MS);
    old.requests.reset();
    await sleep(3 * WATCH_MS);
    expect(old.requests.count('UpdateItem')).toBe(0);
    expect(old.requests.count('GetItem')).toBeGreaterThanOrEqual(1);
    await Promise.all(others.map((m) => m.leadership.resign()));
    const again = await old.leadership.whenLeader();
    expect(again.fencingToken).toBeGreaterThan(next.fencingToken);
  }, 20_000);

  it('hands over within one watch interval when the leader resigns, and a resigned campaign ends', async () => {
    const members = campaign('resign');
    await Promise.race(members.map((m) => m.leadership.whenLeader()));
    const [old] = leaderOf(members);
    const signal = old.leadership.signal;
    await old.leadership.resign();
    const resignedAt = performance.now();
    expect(signal.aborted).toBe(true);
    expect((signal.reason as LockLostError).reason).toBe('released');
    expect(old.events.at(-1)).toMatchObject({ type: 'revoked', reason: 'released' });
    expect(old.leadership.resigned).toBe(true);
    await expect(old.leadership.whenLeader()).rejects.toThrow(/The campaign for leadership "resign" has ended/);
    const others = members.filter((m) => m !== old);
    await Promise.race(others.map((m) => m.leadership.whenLeader()));
    // Without the release the followers would wait for the 1.5 s lease.
    expect(performance.now() - resignedAt).toBeLessThan(WATCH_MS + 700);
    expect(leaderOf(members)).toHaveLength(1);
    // The same manager can campaign anew.
    const renewed = old.manager.lead('resign');
    expect(renewed).not.toBe(old.leadership);
    expect(renewed.resigned).toBe(false);
    await renewed.resign();
  });

  it("emits elected and revoked lock events (name, owner, fencing token, reason) elected after the term lock's acquired", async () => {
    const members = campaign('events', 2);
    const seen = members.map((m) => {
      const events: LockEvent[] = [];
      m.manager.subscribe((event) => events.push(event));
      return events;
    });
    const leaderships = (events: LockEvent[]) => events.filter((e) => e.type === 'elected' || e.type === 'revoked');
    await Promise.race(members.map((m) => m.leadership.whenLeader()));
    const first = members.findIndex((m) => m.leadership.isLeader);
    const old = members[first]!;
    const oldToken = old.leadership.lock!.fencingToken;
    await old.leadership.resign();
    const next = await members[1 - first]!.leadership.whenLeader();
    expect(leaderships(seen[first]!)).toEqual([
      { type: 'elected', key: 'events', owner: `m${first}`, fencingToken: oldToken },
      { type: 'revoked', key: 'events', owner: `m${first}`, fencingToken: oldToken, reason: 'released' },
    ]);
    const types = seen[first]!.map((e) => e.type);
    expect(types).toContain('acquired');
    expect(types.indexOf('elected')).toBeGreaterThan(types.indexOf('acquired'));
    expect(leaderships(seen[1 - first]!)).toEqual([
      { type: 'elected', key: 'events', owner: `m${1 - first}`, fencingToken: next.fencingToken },
    ]);
    await members[1 - first]!.manager.close();
    expect(leaderships(seen[1 - first]!).at(-1)).toEqual({
      type: 'revoked',
      key: 'events',
      owner: `m${1 - first}`,
      fencingToken: next.fencingToken,
      reason: 'shutdown',
    });
  });

  it("settles the first round (lead --no-wait) with the term's lock, null when another leads, the first failed request's error, or the end of the campaign", async () => {
    const members = campaign('first-round', 2);
    const rounds = await Promise.all(members.map((m) => firstRoundOf(m.leadership)));
    const leader = members.findIndex((m) => m.leadership.isLeader);
    expect(leader).toBeGreaterThanOrEqual(0);
    expect(rounds[leader]).toBe(members[leader]!.leadership.lock);
    expect(rounds[1 - leader]).toBeNull();
    const [failing] = campaign('first-round-failing', 1);
    // Every request fails from the first: the loop retries, the first round reports the failure.
    failing.faults.failNext('*', { kind: 'network-error', times: 1_000_000 });
    await expect(firstRoundOf(failing.leadership)).rejects.toThrow();
    expect(failing.leadership.resigned).toBe(false);
    await failing.leadership.resign();
    const [resigned] = campaign('first-round-resigned', 1);
    await resigned.leadership.resign();
    await expect(firstRoundOf(resigned.leadership)).rejects.toThrow(/has ended/);
  });

  it('ends the campaign at shutdown: the leader releases, a follower leads within one watch interval', async () => {
    // The bound below is one watch interval plus a read, a write and event-loop lag: measured with
    // two CPU hogs beside the suite, lag up to 262 ms and round trips up to 59 ms (p99 39), so
    // 300 + 2 × 59 + 262 < WATCH_MS + 700. A 300 ms request timeout is below lag + round trip there:
    // a request timed out, the campaign paused and retried, and the follower led 2.1 s after the
    // close. The timeouts are the subject of other tests; here an answer is waited for.
    const members = campaign('shutdown', 2, { requestTimeout: 2_000 });
    await Promise.race(members.map((m) => m.leadership.whenLeader()));
    const [old] = leaderOf(members);
    const follower = members.find((m) => m !== old)!;
    await old.manager.close();
    const closedAt = performance.now();
    expect(old.events.at(-1)).toMatchObject({ type: 'revoked', reason: 'shutdown' });
    expect(old.leadership.resigned).toBe(true);
    await follower.leadership.whenLeader();
    expect(performance.now() - closedAt).toBeLessThan(WATCH_MS + 700);
    expect(() => old.manager.lead('shutdown')).toThrow(/shut down/);
  });

  it('shares one campaign per name in a process, and refuses bad input before any request', () => {
    const client = fixture.newClient();
    const requests = countRequests(client);
    const manager = fixture.manager({ client });
    const bad: [unknown, unknown, RegExp][] = [
      ['', undefined, /Lock key must be a non-empty string/],
      ['x', 'fast', /lead\(\) option "options" must be an object/],
      ['x', { watchInterval: 0 }, /watchInterval must be a positive duration/],
      ['x', { leaseDuration: '1s', watchInterval: '5s' }, /watchInterval \(5000 ms\) must not be longer than the lease \(1000 ms\)/],
      ['x', { onElected: 'yes' }, /option "onElected" must be a function/],
      ['x', { data: () => 1 }, /must be JSON-serialisable/],
      ['x', { watch: '1s' }, /lead\(\) has no option "watch"/],
    ];
    for (const [name, options, message] of bad) {
      const call = () => manager.lead(name as string, options as object);
      expect(call).toThrow(LockValidationError);
      expect(call).toThrow(message);
    }
    // A name is the app's own (code or configuration), never a request's: not a LockKeyError (no 400).
    for (const name of ['', ' ', 'n'.repeat(2_049)]) {
      const error = (() => {
        try {
          manager.lead(name);
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(LockValidationError);
      expect(error).not.toBeInstanceOf(LockKeyError);
      expect((error as Error).cause).toBeInstanceOf(LockKeyError);
    }
    const one = manager.lead('shared', { leaseDuration: '10s' });
    expect(manager.lead('shared')).toBe(one);
    expect(manager.lead('shared', { leaseDuration: 10_000 })).toBe(one);
    expect(() => manager.lead('shared', { watchInterval: '1s' })).toThrow(/already campaigns for "shared" with another watchInterval/);
    expect(requests.total()).toBe(0);
  });
});

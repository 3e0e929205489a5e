/**
 * Scenario 8: leadership. Three managers campaign for one leadership (`lead()`); over a window
 * the leader only heartbeats and the two followers only read. Measured per role from each
 * manager's own client (requests by operation and outcome), and for the whole table as DynamoDB
 * bills it (capacity metered by the proxy, server-reported where the server reports it); scaled
 * to one hour, and to the default 30 s lease (a heartbeat and a read every 10 s). Then the leader
 * resigns: time until a follower leads (about one watch interval).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { capacityTotals, diffCapacity } from '../support/counting-proxy.mjs';
import { makeClient } from '../support/client.mjs';
import { round, wall } from '../support/stats.mjs';
import { createTable } from '../systems/index.mjs';
import { LockManager } from '../../dist/index.js';

const HOUR_MS = 3_600_000;
const DEFAULT_LEASE_MS = 30_000;

export async function run(ctx, { windowMs, leaseMs, watchMs, members: count = 3 }) {
  const table = ctx.table('s8-leadership');
  await createTable(ctx.admin, 'ours', table);
  await ctx.proxy.meter([table]);
  const warnings = [];
  const members = Array.from({ length: count }, (_, i) => {
    const client = makeClient(ctx.proxy.endpoint);
    const requests = { writes: 0, failedWrites: 0, reads: 0, other: 0 };
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const kind = /^(PutItem|UpdateItem|DeleteItem)Command$/.test(context.commandName ?? '')
          ? 'writes'
          : context.commandName === 'GetItemCommand'
            ? 'reads'
            : 'other';
        try {
          return await next(args);
        } catch (error) {
          if (kind === 'writes' && error?.name === 'ConditionalCheckFailedException') requests.failedWrites++;
          throw error;
        } finally {
          requests[kind]++;
        }
      },
      { step: 'initialize', priority: 'high', name: 'benchRoleCounts' },
    );
    const manager = new LockManager({
      tableName: table,
      client,
      ownerName: `member-${i}`,
      leaseDuration: leaseMs,
      verifyTable: false,
      logger: { log() {}, warn: (m) => warnings.length < 10 && warnings.push(String(m)), error() {}, debug() {}, verbose() {} },
    });
    const terms = { elected: 0, revoked: [] };
    const leadership = manager.lead('leader', {
      watchInterval: watchMs,
      onElected: () => terms.elected++,
      onRevoked: (reason) => terms.revoked.push(reason.reason),
    });
    return { client, manager, requests, terms, leadership };
  });
  try {
    await Promise.race(members.map((m) => m.leadership.whenLeader()));
    // The losers' attempts of the first election settle first.
    await sleep(2 * watchMs);
    const before = await ctx.proxy.capacity();
    for (const m of members) Object.assign(m.requests, { writes: 0, failedWrites: 0, reads: 0, other: 0 });
    for (const m of members) Object.assign(m.terms, { elected: 0, revoked: [] });
    const t0 = wall();
    await sleep(windowMs);
    const elapsed = wall() - t0;
    const snapshot = members.map((m) => ({ ...m.requests, leader: m.leadership.isLeader }));
    // Terms that began or ended during the window: 0 on a steady fleet (a stalled server can cost a term).
    const changes = { elected: members.reduce((a, m) => a + m.terms.elected, 0), revoked: members.flatMap((m) => m.terms.revoked) };
    const billed = capacityTotals(diffCapacity(before, await ctx.proxy.capacity(), table));
    const perHour = (n) => round((n * HOUR_MS) / elapsed, 0);
    // The one that wrote is the leader (also when the term changed hands at the very end).
    const leader = snapshot.reduce((a, s) => (s.writes > a.writes ? s : a));
    const followers = snapshot.filter((s) => s !== leader);
    const followerReads = followers.reduce((a, s) => a + s.reads, 0) / followers.length;
    const followerWrites = followers.reduce((a, s) => a + s.writes, 0) / followers.length;
    // Items are far below 1 KB and 4 KB: one unit per request, which the metered totals confirm.
    const wcuPerWrite = billed.successfulWrites + billed.failedWrites ? billed.wcu / (billed.successfulWrites + billed.failedWrites) : 1;
    const rcuPerRead = billed.reads ? billed.rcu / billed.reads : 1;

    // Graceful hand-over: the leader resigns (its release frees the item); a follower reads it within one watch interval.
    await Promise.race(members.map((m) => m.leadership.whenLeader()));
    const current = members.find((m) => m.leadership.isLeader);
    const resignedAt = wall();
    await current.leadership.resign();
    while (!members.some((m) => m !== current && m.leadership.isLeader) && wall() - resignedAt < 10 * watchMs) await sleep(2);
    const handoverMs = round(wall() - resignedAt, 1);

    return {
      ours: {
        leaseMs,
        heartbeatMs: Math.floor(leaseMs / 3),
        watchMs,
        members: count,
        windowMs: round(elapsed, 0),
        leader: {
          writes: leader.writes,
          reads: leader.reads,
          writesPerHour: perHour(leader.writes),
          wcuPerHour: perHour(leader.writes * wcuPerWrite),
          readsPerHour: perHour(leader.reads),
          rcuPerHour: perHour(leader.reads * rcuPerRead),
        },
        follower: {
          writes: followerWrites,
          failedWrites: followers.reduce((a, s) => a + s.failedWrites, 0),
          reads: followerReads,
          writesPerHour: perHour(followerWrites),
          readsPerHour: perHour(followerReads),
          rcuPerHour: perHour(followerReads * rcuPerRead),
        },
        /** Per hour at the default lease (30 s: a heartbeat and a follower's read every 10 s), from the measured units per request. */
        atDefaultLease: {
          leaderWcuPerHour: round((HOUR_MS / (DEFAULT_LEASE_MS / 3)) * wcuPerWrite, 0),
          followerRcuPerHour: round((HOUR_MS / (DEFAULT_LEASE_MS / 3)) * rcuPerRead, 0),
        },
        billed: { wcu: billed.wcu, rcu: billed.rcu, source: billed.source, maxItemBytes: billed.maxItemBytes },
        handoverMs,
        termChanges: changes,
        warnings,
      },
    };
  } finally {
    await Promise.all(members.map((m) => m.manager.close()));
    for (const m of members) m.client.destroy();
  }
}

/**
 * Scenario 10: scheduled fires. Three instances of an app (separate managers, each its own
 * client; in this process) fire a job at the same scheduled times, in two ways side by side:
 * - claims: `tryAcquire(key, { fireTime })` claims the fire in the lock item (the claim stays
 *   after the release); an instance skipped while another's run holds the key watches that run
 *   (a strongly consistent read every half lease) until it ends;
 * - today: a plain `tryAcquire(key)` per fire and instance, the run holding the lock at least
 *   `holdAtLeastMs` (the decorator's `holdAtLeast`), so that the others find it held.
 *
 * Measured:
 * - per fire: the instance that runs it (its claim write and its release write; heartbeats apart)
 *   and each one that skips it (its single attempt; then, for claims, the run watch's reads), in
 *   capacity units as DynamoDB bills them. Each client's middleware asks for
 *   `ReturnConsumedCapacity` (the server reports it for a successful request; taken out of the
 *   answer again) and bills a failed conditional write from the item returned with it, else
 *   1 WCU, as the counting proxy does; the proxy's meter of each table cross-checks the sums.
 *   Requests are told apart by phase, from the managers' own events: the attempt ends with its
 *   `acquired` or `busy` event, which the run watch follows;
 * - idle: requests per instance over a quiet period after the last run and its watches ended;
 * - the run watch: a run holds the key for `leases` leases; reads per lease per watching instance;
 * - a crash: the instance running a fire (a forked process, heartbeating) is SIGKILLed mid-run,
 *   half a heartbeat interval after a heartbeat; fires come every `periodLeases` leases; the time
 *   from its last write to the next fire that another instance claims.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { LockManager } from '../../dist/index.js';
import { itemBytes, readUnits, writeUnits } from '../support/capacity.mjs';
import { capacityTotals, diffCapacity } from '../support/counting-proxy.mjs';
import { makeClient, watchWrites } from '../support/client.mjs';
import { round, sleepUntil, summarize, wall } from '../support/stats.mjs';
import { forkWorker, isMain, workerMain } from '../support/worker.mjs';
import { createTable } from '../systems/index.mjs';

const KEY = 'nightly-job';
const WAYS = ['claims', 'today'];
const WRITES = new Set(['UpdateItem', 'PutItem', 'DeleteItem']);
/** Write-equivalents at on-demand prices: a read unit costs a fifth of a write unit. */
const RCU_AS_WRITES = 0.2;

export async function run(ctx, { instances = 3, cost, watch, crash }) {
  const costTables = Object.fromEntries(WAYS.map((way) => [way, ctx.table(`s10-${way}`)]));
  const watchTable = ctx.table('s10-watch');
  const crashTables = WAYS.flatMap((way) => Array.from({ length: crash.trials }, (_, t) => ctx.table(`s10-crash-${way}-${t}`)));
  await Promise.all([...Object.values(costTables), watchTable, ...crashTables].map((table) => createTable(ctx.admin, 'ours', table)));
  await ctx.proxy.meter([...Object.values(costTables), watchTable]);
  // Segments side by side (each its own table and instances; a few requests a second in all),
  // measured once every one of them is set up and warm: start-up loads this small machine most.
  const start = startLine();
  const [claims, today, watched, ...crashes] = await start.run([
    (ready) => costSegment(ctx, 'claims', costTables.claims, instances, cost, ready),
    (ready) => costSegment(ctx, 'today', costTables.today, instances, cost, ready),
    (ready) => watchSegment(ctx, watchTable, instances, watch, ready),
    ...WAYS.flatMap((way) =>
      Array.from({ length: crash.trials }, (_, t) => (ready) => crashTrial(ctx, way, ctx.table(`s10-crash-${way}-${t}`), crash, ready)),
    ),
  ]);
  const crashOf = (way) =>
    crashSummary(
      crashes.filter((c) => c.way === way),
      crash,
    );
  return {
    instances,
    cost: { ...cost, periodMs: periodOf(cost) },
    watch,
    crash: { crashAfterLeases: 1.25, maxFires: 3, ...crash, periodMs: crash.periodLeases * crash.leaseMs },
    ours: { ...claims, crash: crashOf('claims') },
    today: { ...today, crash: crashOf('today') },
    watched,
  };
}

/**
 * Runs segments side by side from a common start: each calls `ready()` once set up, which
 * resolves when all are (a segment that fails fails the run).
 */
function startLine() {
  let go;
  const started = new Promise((resolve) => (go = resolve));
  return {
    async run(segments) {
      let left = segments.length;
      return Promise.all(
        segments.map((segment) =>
          segment(async () => {
            if (--left === 0) go();
            await started;
          }),
        ),
      );
    },
  };
}

/** Fires far enough apart for a skipper's last watch read (half a lease after its skip) to come before the next fire. */
const periodOf = ({ leaseMs }) => leaseMs / 2 + 750;

/**
 * One instance: a manager with its own client, whose requests are recorded with the phase the
 * instance was in when each was sent, and their billed units.
 */
function openInstance(endpoint, table, owner, leaseMs) {
  const client = makeClient(endpoint);
  const inst = { owner, client, phase: 'idle', fire: null, requests: [], events: [], warnings: [], unavailable: [] };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const op = (context.commandName ?? '').replace(/Command$/, '');
      const kind = WRITES.has(op) ? 'write' : op === 'GetItem' ? 'read' : 'other';
      const r = { phase: inst.phase, fire: inst.fire, kind, at: wall(), failed: false, units: 0, source: 'reported' };
      inst.requests.push(r);
      const added = kind !== 'other' && args.input.ReturnConsumedCapacity === undefined;
      try {
        const out = await next(added ? { ...args, input: { ...args.input, ReturnConsumedCapacity: 'TOTAL' } } : args);
        const reported = out.output?.ConsumedCapacity?.CapacityUnits;
        if (typeof reported === 'number') r.units = reported;
        else if (kind === 'read')
          Object.assign(r, { units: readUnits(itemBytes(out.output?.Item), args.input.ConsistentRead === true), source: 'computed' });
        else if (kind === 'write') Object.assign(r, { units: 1, source: 'assumed' });
        if (added && out.output) delete out.output.ConsumedCapacity;
        return out;
      } catch (error) {
        if (kind === 'write' && error?.name === 'ConditionalCheckFailedException') {
          r.failed = true;
          r.units = error.Item ? writeUnits(itemBytes(error.Item)) : 1;
          r.source = error.Item ? 'from the item returned' : 'assumed (no item returned)';
        } else r.error = error?.name ?? String(error);
        throw error;
      }
    },
    { step: 'initialize', priority: 'high', name: 'benchFirePhases' },
  );
  inst.manager = new LockManager({
    tableName: table,
    client,
    ownerName: owner,
    leaseDuration: leaseMs,
    heartbeatInterval: Math.round(leaseMs / 3),
    verifyTable: false,
    logger: { log() {}, warn: (m) => inst.warnings.length < 10 && inst.warnings.push(String(m)), error() {}, debug() {}, verbose() {} },
  });
  // Events are emitted synchronously: the attempt's requests are all sent before its event, the run watch's after.
  inst.manager.subscribe((event) => {
    if (event.type === 'acquired' && inst.phase === 'attempt') inst.phase = 'run';
    if (event.type === 'busy' && inst.phase === 'attempt') inst.phase = 'skipped';
    if (event.type === 'fire') inst.events.push({ outcome: event.outcome, reason: event.reason, at: wall() });
  });
  // Warm-up on another key (connections, the JIT): the lease's request timeout is short here.
  inst.warm = async () => {
    inst.phase = 'warm';
    await warmUp(client, table, inst.manager, `warm-${owner}`);
    inst.phase = 'ready';
  };
  inst.close = async () => {
    await inst.manager.close();
    client.destroy();
  };
  return inst;
}

/**
 * Warms a client and its manager up (connections, the SDK's lazily loaded parts, the JIT): a plain
 * read first, which has no lock's request timeout (a third of a short lease here), then lock cycles
 * on another key until one is answered in time.
 */
async function warmUp(client, table, manager, key) {
  await client.send(new GetItemCommand({ TableName: table, Key: { key: { S: key } }, ConsistentRead: true }));
  for (let i = 0; ; i++) {
    try {
      const lock = await manager.tryAcquire(key);
      await lock?.release();
      if (i >= 2) return;
    } catch (error) {
      if (i >= 10) throw error;
    }
  }
}

/** One fire on every instance at once; the instance that gets the lock runs for `holdMs`, then releases. */
async function fire(instances, way, index, fireTime, holdMs) {
  for (const inst of instances) Object.assign(inst, { fire: index, phase: 'attempt' });
  const locks = await Promise.all(instances.map((inst) => attempt(inst, way === 'claims' ? { fireTime } : {})));
  await Promise.all(
    locks.map(async (lock, i) => {
      if (!lock) return;
      await sleep(holdMs);
      instances[i].phase = 'release';
      await lock.release();
      instances[i].phase = 'after';
    }),
  );
  return instances.filter((_, i) => locks[i]).map((inst) => inst.owner);
}

/** A single attempt at the job's key: the lock, or `null` (skipped, or DynamoDB did not answer in time: counted apart). */
async function attempt(inst, options) {
  try {
    return await inst.manager.tryAcquire(KEY, options);
  } catch (error) {
    inst.unavailable.push(String(error?.message ?? error).slice(0, 200));
    return null;
  }
}

/** Requests, units and failures of a list of recorded requests. */
function tally(requests) {
  const t = { requests: requests.length, writes: 0, failedWrites: 0, reads: 0, wcu: 0, rcu: 0, errors: 0 };
  for (const r of requests) {
    if (r.error) t.errors++;
    if (r.kind === 'write') {
      t.writes++;
      if (r.failed) t.failedWrites++;
      t.wcu += r.units;
    } else if (r.kind === 'read') {
      t.reads++;
      t.rcu += r.units;
    }
  }
  return t;
}

const per = (t, n) => Object.fromEntries(Object.entries(t).map(([k, v]) => [k, n ? round(v / n, 3) : null]));

/**
 * Per-fire cost of one way, then idle: fires every `periodOf(cost)` ms; after the last run and
 * its watches ended, requests per instance over `idleMs`.
 */
async function costSegment(ctx, way, table, n, { fires, leaseMs, jobMs, holdAtLeastMs, idleMs }, ready) {
  const instances = Array.from({ length: n }, (_, i) => openInstance(ctx.proxy.endpoint, table, `${way}-${i}`, leaseMs));
  const holdMs = way === 'claims' ? jobMs : Math.max(jobMs, holdAtLeastMs);
  const periodMs = periodOf({ leaseMs });
  try {
    await Promise.all(instances.map((inst) => inst.warm()));
    await ready();
    const capBefore = await ctx.proxy.capacity();
    const t0 = wall() + 100;
    const e0 = Date.now() + 100;
    const runners = [];
    for (let k = 0; k < fires; k++) {
      await sleepUntil(t0 + k * periodMs);
      runners.push(await fire(instances, way, k, e0 + k * periodMs, holdMs));
    }
    // The last skippers' watches read once more half a lease after their skip, and find the run over.
    await sleep(leaseMs / 2 + 750);
    for (const inst of instances) Object.assign(inst, { phase: 'idle', fire: null });
    const idleFrom = wall();
    await sleep(idleMs);
    const idleSeconds = (wall() - idleFrom) / 1000;
    const billed = capacityTotals(diffCapacity(capBefore, await ctx.proxy.capacity(), table));

    const runner = { claim: [], release: [], heartbeats: [], after: [] };
    const skipper = { attempt: [], watch: [] };
    let skips = 0;
    for (let k = 0; k < fires; k++) {
      for (const inst of instances) {
        const mine = inst.requests.filter((r) => r.fire === k);
        const of = (phase) => mine.filter((r) => r.phase === phase);
        if (runners[k].includes(inst.owner)) {
          runner.claim.push(...of('attempt'));
          runner.release.push(...of('release'));
          runner.heartbeats.push(...of('run'));
          runner.after.push(...of('after'));
        } else {
          skips++;
          skipper.attempt.push(...of('attempt'));
          skipper.watch.push(...of('skipped'));
        }
      }
    }
    const ran = runners.reduce((a, r) => a + r.length, 0);
    const all = instances.flatMap((inst) => inst.requests.filter((r) => r.phase !== 'warm'));
    const idle = instances.map((inst) => inst.requests.filter((r) => r.phase === 'idle').length);
    const sum = tally(all);
    const runnerPerFire = Object.fromEntries(Object.entries(runner).map(([k, v]) => [k, per(tally(v), ran)]));
    const skipperPerFire = Object.fromEntries(Object.entries(skipper).map(([k, v]) => [k, per(tally(v), skips)]));
    const perFire = per(tally(all.filter((r) => r.fire !== null)), fires);
    const sources = [...new Set(all.map((r) => r.source))];
    return {
      leaseMs,
      holdMs,
      fires,
      runsPerFire: round(ran / fires, 3),
      runner: runnerPerFire,
      skipper: skipperPerFire,
      /** Each skipper's whole cost of a fire: its attempt and, for claims, the run watch that follows. */
      skipperTotal: per(tally([...skipper.attempt, ...skipper.watch]), skips),
      perFire: { ...perFire, writeEq: round(perFire.wcu + RCU_AS_WRITES * perFire.rcu, 3) },
      fireEvents: countBy(instances.flatMap((inst) => inst.events.map((e) => `${e.outcome}${e.reason ? ` (${e.reason})` : ''}`))),
      idle: {
        seconds: round(idleSeconds, 1),
        requestsPerInstance: idle,
        maxRequestsPerInstance: Math.max(...idle),
      },
      capacity: {
        clients: { wcu: round(sum.wcu, 3), rcu: round(sum.rcu, 3), sources },
        table: { wcu: billed.wcu, rcu: billed.rcu, source: billed.source, maxItemBytes: billed.maxItemBytes },
        agree: Math.abs(sum.wcu - billed.wcu) < 1e-6 && Math.abs(sum.rcu - billed.rcu) < 1e-6,
      },
      errors: sum.errors,
      unavailable: instances.flatMap((inst) => inst.unavailable),
      warnings: instances.flatMap((inst) => inst.warnings).slice(0, 5),
    };
  } finally {
    await Promise.all(instances.map((inst) => inst.close()));
  }
}

const countBy = (values) => values.reduce((a, v) => ({ ...a, [v]: (a[v] ?? 0) + 1 }), {});

/** A run holds the key for `leases` leases; the other instances skip its fire and watch it. */
async function watchSegment(ctx, table, n, { leaseMs, leases }, ready) {
  const instances = Array.from({ length: n }, (_, i) => openInstance(ctx.proxy.endpoint, table, `watch-${i}`, leaseMs));
  try {
    await Promise.all(instances.map((inst) => inst.warm()));
    await ready();
    for (const inst of instances) Object.assign(inst, { fire: 0, phase: 'attempt' });
    const fireTime = Date.now();
    const locks = await Promise.all(instances.map((inst) => attempt(inst, { fireTime })));
    const acquiredAt = wall();
    const holder = instances.find((_, i) => locks[i]);
    if (!holder || locks.filter(Boolean).length > 1)
      throw new Error(`scheduled-fires watch: ${locks.filter(Boolean).length} runs of the fire`);
    const watchers = instances.filter((_, i) => !locks[i]);
    await sleep(leases * leaseMs);
    const releaseAt = wall();
    holder.phase = 'release';
    await locks[instances.indexOf(holder)].release();
    holder.phase = 'after';
    await sleep(leaseMs / 2 + 750);
    const runLeases = (releaseAt - acquiredAt) / leaseMs;
    const watchReads = watchers.map((w) => w.requests.filter((r) => r.phase === 'skipped' && r.kind === 'read'));
    const during = watchReads.map((reads) => reads.filter((r) => r.at < releaseAt));
    const gaps = watchReads.flatMap((reads) => reads.slice(1).map((r, i) => r.at - reads[i].at));
    const duringTally = tally(during.flat());
    const heartbeats = holder.requests.filter((r) => r.phase === 'run' && r.kind === 'write').length;
    return {
      leaseMs,
      leases,
      watchers: watchers.length,
      runLeases: round(runLeases, 2),
      readsPerWatcher: during.map((reads) => reads.length),
      readsPerLeasePerWatcher: round(duringTally.reads / watchers.length / runLeases, 2),
      rcuPerLeasePerWatcher: round(duringTally.rcu / watchers.length / runLeases, 2),
      readGapMs: summarize(gaps),
      closingReadsPerWatcher: round((watchReads.flat().length - duringTally.reads) / watchers.length, 2),
      watcherWritesAfterSkip: watchers.reduce(
        (a, w) => a + w.requests.filter((r) => r.phase === 'skipped' && r.kind === 'write').length,
        0,
      ),
      holderHeartbeatsPerLease: round(heartbeats / runLeases, 2),
      unavailable: instances.flatMap((inst) => inst.unavailable),
      warnings: instances.flatMap((inst) => inst.warnings).slice(0, 5),
    };
  } finally {
    await Promise.all(instances.map((inst) => inst.close()));
  }
}

/**
 * A crash: a forked instance claims fire 0 and runs it (heartbeating); the two others skip it;
 * the runner is SIGKILLed half a heartbeat interval after a heartbeat, past `crashAfterLeases`;
 * then the others fire every period until one of them claims a fire.
 */
async function crashTrial(ctx, way, table, { leaseMs, periodLeases, crashAfterLeases = 1.25, maxFires = 3 }, ready) {
  const holder = forkWorker(import.meta.url, { role: 's10-holder', system: way, endpoint: ctx.proxy.endpoint, table, leaseMs });
  const others = [1, 2].map((i) => openInstance(ctx.proxy.endpoint, table, `crash-${way}-${i}`, leaseMs));
  const periodMs = periodLeases * leaseMs;
  const options = (fireTime) => (way === 'claims' ? { fireTime } : {});
  try {
    await Promise.all([holder.next('ready'), ...others.map((inst) => inst.warm())]);
    await ready();
    const t0 = wall();
    const e0 = Date.now();
    holder.send('fire', { fireTime: e0 });
    const { ok } = await holder.next('acquired');
    if (!ok) throw new Error(`scheduled-fires crash (${way}): the instance to crash did not get fire 0`);
    const skipped = await Promise.all(others.map((inst) => attempt(inst, options(e0))));
    if (skipped.some(Boolean)) throw new Error(`scheduled-fires crash (${way}): fire 0 ran twice`);
    await sleepUntil(t0 + crashAfterLeases * leaseMs);
    const early = holder.drain('beat');
    const awaited = await holder.next('beat', 10_000);
    await sleep(leaseMs / 6);
    const killAt = wall();
    holder.kill('SIGKILL');
    await holder.exited;
    const lastWrite = Math.max(...[...early, awaited, ...holder.drain('beat')].map((b) => b.sentAt));
    let claimed = null;
    for (let k = 1; k <= maxFires && !claimed; k++) {
      await sleepUntil(t0 + k * periodMs);
      const locks = await Promise.all(others.map((inst) => attempt(inst, options(e0 + k * periodMs))));
      const at = wall();
      const held = locks.filter(Boolean);
      if (held.length) claimed = { fire: k, at, runs: held.length };
      await Promise.all(held.map((lock) => lock.release()));
    }
    const lost = others.flatMap((inst) => inst.events.filter((e) => e.outcome === 'lost'));
    return {
      way,
      fromLastWriteMs: claimed ? claimed.at - lastWrite : null,
      fromKillMs: claimed ? claimed.at - killAt : null,
      crashAtMs: lastWrite - t0,
      claimedFire: claimed?.fire ?? null,
      runs: claimed?.runs ?? 0,
      passedAfterMs: lost.length ? Math.min(...lost.map((e) => e.at)) - lastWrite : null,
      lostEvents: lost.length,
      unavailable: others.flatMap((inst) => inst.unavailable),
      warnings: others.flatMap((inst) => inst.warnings).slice(0, 5),
    };
  } finally {
    holder.kill('SIGKILL');
    await Promise.all(others.map((inst) => inst.close()));
  }
}

function crashSummary(trials, { leaseMs, periodLeases, maxFires = 3 }) {
  const periodMs = periodLeases * leaseMs;
  const fromLastWrite = summarize(trials.map((t) => t.fromLastWriteMs).filter((v) => v !== null));
  return {
    trials: trials.length,
    unclaimed: trials.filter((t) => t.claimedFire === null).length,
    fromLastWriteMs: fromLastWrite,
    fromKillMs: summarize(trials.map((t) => t.fromKillMs).filter((v) => v !== null)),
    fromLastWriteLeases: fromLastWrite.max === null ? null : round(fromLastWrite.max / leaseMs, 2),
    fromLastWritePeriods: fromLastWrite.max === null ? null : round(fromLastWrite.max / periodMs, 2),
    crashAtMs: summarize(trials.map((t) => t.crashAtMs)),
    /** Fires after the crashed one that no instance ran (max over trials). */
    firesLost: Math.max(...trials.map((t) => (t.claimedFire ?? maxFires + 1) - 1)),
    doubleRuns: trials.filter((t) => t.runs > 1).length,
    passedAfterMs: summarize(trials.map((t) => t.passedAfterMs).filter((v) => v !== null)),
    unavailable: trials.flatMap((t) => t.unavailable),
    warnings: trials.flatMap((t) => t.warnings).slice(0, 5),
  };
}

/** The instance that crashes: claims the fire it is sent, runs it (heartbeating) until killed. */
async function work(config, io) {
  const client = makeClient(config.endpoint);
  const manager = new LockManager({
    tableName: config.table,
    client,
    ownerName: `crash-${config.system}-runner-${process.pid}`,
    leaseDuration: config.leaseMs,
    heartbeatInterval: Math.round(config.leaseMs / 3),
    verifyTable: false,
    logger: { log() {}, warn() {}, error() {}, debug() {}, verbose() {} },
  });
  await warmUp(client, config.table, manager, 'warm-up');
  watchWrites(client, (sentAt) => void io.send('beat', { sentAt }), wall);
  await io.send('ready');
  const { fireTime } = await io.next('fire');
  const lock = await manager.tryAcquire(KEY, config.system === 'claims' ? { fireTime } : {});
  await io.send('acquired', { ok: Boolean(lock) });
  await new Promise(() => {}); // the run goes on until the process is killed
}

if (isMain(import.meta.url)) workerMain(work);

/**
 * `npm run bench` / `npm run bench:quick`: runs every scenario against a local server through
 * the counting proxy, prints a markdown table per scenario, and writes the results (see the
 * end of this file). Expects the library built in dist/ (the npm scripts build it first).
 *
 * Options: --quick (CI smoke, about 1 min), --dynamodb-local (else dynalite; env DYNAMODB_ENDPOINT
 * for any server), --only=scenario,... , --systems=dlc,raw (ours always runs), --no-docs,
 * --rows=4,64 (only these waiting rows, by N), --held=2000 (the scale scenario at this n, every system).
 * `--only=waiting` also runs the cross-process scenario's 20 ms hold (ours and raw polling): the
 * waiting table takes its throughput row from there; and the other systems' waiting rows (waitingOthers).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { makeClient } from './support/client.mjs';
import { startCountingProxy } from './support/counting-proxy.mjs';
import { startServer } from './support/server.mjs';
import { wall } from './support/stats.mjs';
import { LOCKS } from './systems/index.mjs';
import * as uncontended from './scenarios/uncontended.mjs';
import * as inProcess from './scenarios/in-process.mjs';
import * as crossProcess from './scenarios/cross-process.mjs';
import * as takeover from './scenarios/takeover.mjs';
import * as scale from './scenarios/scale.mjs';
import * as waiting from './scenarios/waiting.mjs';
import * as waitingOthers from './scenarios/waiting-others.mjs';
import * as leadership from './scenarios/leadership.mjs';
import * as semaphore from './scenarios/semaphore.mjs';
import * as scheduledFires from './scenarios/scheduled-fires.mjs';
import * as fencedWrites from './scenarios/fenced-writes.mjs';
import * as multiKey from './scenarios/multi-key.mjs';
import * as readWrite from './scenarios/read-write.mjs';
import { machineAndVersions } from './report/environment.mjs';
import { docsPage, scenarioTables } from './report/markdown.mjs';
import { chartSvg } from './report/svg.mjs';

const args = new Set(process.argv.slice(2));
const quick = args.has('--quick');
const option = (name) =>
  process.argv
    .slice(2)
    .find((a) => a.startsWith(`--${name}=`))
    ?.slice(name.length + 3)
    .split(',');
const only = option('only');
const rowsOnly = option('rows');
/** `--held=2000`: the scale scenario holds this many locks in every system (a run at one n). */
const heldOnly = option('held')?.map(Number)[0];
/** `--systems=ours,raw` compares fewer locks (ours is always in: every ratio is to it). */
const locks = LOCKS.filter((id) => id === 'ours' || (option('systems') ?? LOCKS).includes(id));
/** A run of some scenarios, rows or systems: its results are kept apart from whole runs'. */
const partial = Boolean(only || rowsOnly || heldOnly || option('systems'));

/** Sizes per mode: quick is a CI smoke test (about 1 min); full gives stable figures in about 7 minutes. */
const MODES = {
  quick: {
    uncontended: { rounds: 2, cycles: 25 },
    inProcess: { rounds: 1, durationMs: 1_200, callers: 32, holdMs: 20 },
    crossProcess: {
      processes: 4,
      rounds: 1,
      holds: [
        { holdMs: 20, durationMs: 1_500 },
        { holdMs: 1_000, durationMs: 2_500 },
      ],
    },
    takeover: { trials: 1, leaseMs: 2_000, heldMs: 400 },
    scale: {
      systems: ['ours'],
      held: {
        ours: [
          { n: 250, windowMs: 2_000 },
          { n: 1_000, windowMs: 4_000 },
        ],
      },
      leaseMs: 6_000,
    },
    waiting: {
      processes: 4,
      holdMs: 20,
      settleMs: 500,
      fifoSlackMs: 25,
      rows: [
        { n: 4, windowMs: 1_000 },
        { n: 64, windowMs: 2_000 },
      ],
      graceful: { trials: 1, waitMs: 400, jitterMs: 400 },
      deadWaiters: { trials: 1, k: 3, leaseMs: 1_000, enqueueMs: 250 },
    },
    waitingOthers: {
      systems: ['dlc', 'raw'],
      processes: 4,
      holdMs: 20,
      settleMs: 300,
      leaseMs: 30_000,
      rows: { dlc: [{ n: 4, windowMs: 500 }], raw: [{ n: 4, windowMs: 500 }] },
    },
    leadership: { windowMs: 4_000, leaseMs: 2_000, watchMs: 667 },
    semaphore: {
      processes: 4,
      settleMs: 500,
      rows: [
        { n: 1, limit: 3, holdMs: 20, windowMs: 1_000 },
        { n: 12, limit: 3, holdMs: 20, windowMs: 2_000 },
        { n: 32, limit: 32, holdMs: 200, windowMs: 2_000 },
      ],
    },
    // Segments run side by side: about 15 s in all.
    scheduledFires: {
      instances: 3,
      cost: { fires: 3, leaseMs: 4_000, jobMs: 100, holdAtLeastMs: 1_000, idleMs: 2_000 },
      watch: { leaseMs: 1_000, leases: 3 },
      crash: { trials: 1, leaseMs: 1_000, periodLeases: 5 },
    },
    fencedWrites: { writes: 30 },
    multiKey: { managers: 4, callersPerManager: 2, windowMs: 1_500, rounds: 2 },
    readWrite: {
      managers: 8,
      callersPerManager: 8,
      windowMs: 3_000,
      rounds: 2,
      readHoldMs: 200,
      writeHoldMs: 20,
      writerGapMs: 1_000,
      holdWindowMs: 2_000,
    },
  },
  full: {
    uncontended: { rounds: 5, cycles: 100 },
    inProcess: { rounds: 2, durationMs: 4_000, callers: 32, holdMs: 20 },
    crossProcess: {
      processes: 4,
      rounds: 1,
      holds: [
        { holdMs: 20, durationMs: 10_000 },
        { holdMs: 1_000, durationMs: 20_000 },
      ],
    },
    takeover: { trials: 2, leaseMs: 2_000, heldMs: 1_500 },
    // The held-locks axis: per system, each n held for a window (smallest n first). The comparators
    // hold theirs for 2 heartbeat intervals only: their per-lock figures do not need more.
    scale: {
      systems: ['ours', 'dlc', 'raw'],
      held: {
        ours: [
          { n: 2_000, windowMs: 30_000 },
          { n: 10_000, windowMs: 60_000 },
        ],
        dlc: [
          { n: 2_000, windowMs: 20_000 },
          { n: 10_000, windowMs: 20_000, acquireWithinMs: 240_000 },
        ],
        raw: [
          { n: 2_000, windowMs: 20_000 },
          { n: 10_000, skip: '10,000 raw-polling locks did not finish acquiring in 20 minutes on DynamoDB Local' },
        ],
      },
      leaseMs: 30_000,
    },
    waiting: {
      processes: 4,
      holdMs: 20,
      settleMs: 2_000,
      fifoSlackMs: 25,
      rows: [
        { n: 4, windowMs: 10_000 },
        { n: 64, windowMs: 20_000 },
        { n: 200, windowMs: 20_000 },
        // 250 managers per process start in ~30 ms; what loads the machine is the lock's requests
        // (the row is flagged when the workers' event loops lag). `{ n, skip: 'why' }` skips a row.
        // 60 s: every participant can be granted at 80% of the rate at N = 200 (the target), 22/s.
        { n: 1_000, windowMs: 60_000 },
      ],
      graceful: { trials: 5, waitMs: 1_000, jitterMs: 1_000 },
      deadWaiters: { trials: 3, k: 3, leaseMs: 1_000 },
    },
    // The waiting axis for the other systems (scenario 7's rows, the same lease as ours there).
    waitingOthers: {
      systems: ['dlc', 'raw'],
      processes: 4,
      holdMs: 20,
      settleMs: 2_000,
      leaseMs: 30_000,
      rows: {
        dlc: [
          { n: 4, windowMs: 10_000 },
          { n: 64, windowMs: 20_000 },
          { n: 200, windowMs: 20_000 },
          { n: 1_000, windowMs: 30_000 },
        ],
        raw: [
          { n: 4, windowMs: 10_000 },
          { n: 64, windowMs: 20_000 },
          ...[200, 1_000].map((n) => ({
            n,
            skip: `${n} waiters polling every 25 ms send ${(n * 40).toLocaleString('en')} conditional writes/s, beyond what this 2-core machine serves (the workers lag already at N = 64)`,
          })),
        ],
      },
    },
    leadership: { windowMs: 30_000, leaseMs: 2_000, watchMs: 667 },
    semaphore: {
      processes: 4,
      settleMs: 2_000,
      rows: [
        { n: 1, limit: 3, holdMs: 20, windowMs: 5_000 },
        { n: 12, limit: 3, holdMs: 20, windowMs: 10_000 },
        { n: 12, limit: 3, holdMs: 1_000, windowMs: 20_000 },
        { n: 64, limit: 8, holdMs: 200, windowMs: 20_000 },
        { n: 32, limit: 32, holdMs: 200, windowMs: 10_000 },
      ],
    },
    // Segments run side by side: about 40 s in all.
    scheduledFires: {
      instances: 3,
      cost: { fires: 8, leaseMs: 4_000, jobMs: 100, holdAtLeastMs: 1_000, idleMs: 5_000 },
      watch: { leaseMs: 1_000, leases: 3 },
      crash: { trials: 3, leaseMs: 1_000, periodLeases: 5 },
    },
    fencedWrites: { writes: 300 },
    multiKey: { managers: 4, callersPerManager: 2, windowMs: 8_000, rounds: 2 },
    readWrite: {
      managers: 8,
      callersPerManager: 8,
      windowMs: 10_000,
      rounds: 2,
      readHoldMs: 200,
      writeHoldMs: 20,
      writerGapMs: 1_000,
      holdWindowMs: 6_000,
    },
  },
};
const SCENARIOS = {
  uncontended,
  inProcess,
  crossProcess,
  takeover,
  scale,
  waiting,
  waitingOthers,
  leadership,
  semaphore,
  scheduledFires,
  fencedWrites,
  multiKey,
  readWrite,
};

/**
 * What a scenario runs with: `--only=waiting` also runs the cross-process 20 ms hold, and
 * whenever waiting runs, the cross-process scenario includes raw polling (the throughput row's
 * comparator).
 */
function planFor(name) {
  const selected = (n) => !only || only.includes(n);
  if (name === 'scale' && heldOnly && selected(name)) {
    // Every system of the mode at this one n, each for the window of its largest n.
    const settings = MODES[mode].scale;
    const window = (rows) => rows.findLast((r) => !r.skip).windowMs;
    const held = Object.fromEntries(Object.entries(settings.held).map(([id, rows]) => [id, [{ n: heldOnly, windowMs: window(rows) }]]));
    return { ctx, settings: { ...settings, held } };
  }
  if (name === 'waiting' && rowsOnly && selected(name)) {
    const settings = MODES[mode].waiting;
    return { ctx, settings: { ...settings, rows: settings.rows.filter((r) => rowsOnly.includes(String(r.n))) } };
  }
  // The other systems' waiting rows run whenever waiting does (the chart's waiting axis), on the same --rows.
  if (name === 'waitingOthers') {
    if (!selected('waiting') && !selected(name)) return null;
    const settings = MODES[mode].waitingOthers;
    const rows = (list) => list.filter((r) => !rowsOnly || rowsOnly.includes(String(r.n)));
    return {
      ctx,
      settings: { ...settings, rows: Object.fromEntries(Object.entries(settings.rows).map(([id, list]) => [id, rows(list)])) },
    };
  }
  if (name !== 'crossProcess' || !selected('waiting')) return selected(name) ? { ctx, settings: MODES[mode][name] } : null;
  const settings = MODES[mode].crossProcess;
  return {
    ctx: { ...ctx, locks: LOCKS.filter((id) => ctx.locks.includes(id) || id === 'raw') },
    settings: selected(name) ? settings : { ...settings, holds: settings.holds.filter((h) => h.holdMs === 20) },
  };
}

const mode = quick ? 'quick' : 'full';
const started = wall();
// The commit measured: dist/ was built from the tree as it was when the run started.
const environment = machineAndVersions();
const server = await startServer({ dynamodbLocal: args.has('--dynamodb-local') });
const proxy = await startCountingProxy(server.endpoint);
const runId = `${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
const ctx = {
  proxy,
  // Tables are created directly on the server, so set-up requests are not counted.
  admin: makeClient(server.endpoint),
  /** Lease for the contention scenarios; heartbeats every third of it, for every system. */
  leaseMs: 2_000,
  /** Writes per RTT probe (each after a 20 ms pause, plus 10 to warm up). */
  rttSamples: quick ? 10 : 30,
  locks,
  table: (name) => `bench-${runId}-${name}`,
};
process.stderr.write(`bench: ${mode} mode, ${server.name} ${server.version} at ${server.endpoint}, proxy ${proxy.endpoint}\n`);

const results = {};
try {
  for (const [name, scenario] of Object.entries(SCENARIOS)) {
    const plan = planFor(name);
    if (!plan) continue;
    const t0 = wall();
    process.stderr.write(`bench: ${name} ...`);
    results[name] = await scenario.run(plan.ctx, plan.settings);
    process.stderr.write(` ${((wall() - t0) / 1000).toFixed(1)} s\n`);
  }
} finally {
  ctx.admin.destroy();
  await proxy.stop();
  await server.stop();
}

const report = {
  meta: {
    mode,
    server: { name: server.name, version: server.version },
    date: new Date().toISOString(),
    seconds: Math.round((wall() - started) / 100) / 10,
    settings: { contentionLeaseMs: ctx.leaseMs, ...MODES[mode] },
    ...environment,
  },
  results,
};
const { markdown, checks } = scenarioTables(report);
report.checks = checks;
console.log(markdown);

// Every run keeps its results as <mode>-<server>.json; a whole run without --no-docs is also
// the "latest" run that docs/benchmarks.md shows (latest.json, latest.svg and the page itself).
// A run of some scenarios, rows or systems writes <mode>-<server>-partial.json only (not kept in
// git), so that it never replaces a whole run's results or page.
const dir = new URL('./results/', import.meta.url);
mkdirSync(dir, { recursive: true });
const json = `${JSON.stringify(report, null, 2)}\n`;
const file = `${mode}-${server.name}${partial ? '-partial' : ''}.json`;
const written = [`bench/results/${file}`];
writeFileSync(new URL(file, dir), json);
if (!partial && !args.has('--no-docs')) {
  writeFileSync(new URL('latest.json', dir), json);
  writeFileSync(new URL('latest.svg', dir), chartSvg(report));
  mkdirSync(new URL('../docs/', import.meta.url), { recursive: true });
  writeFileSync(new URL('../docs/benchmarks.md', import.meta.url), docsPage(report, markdown));
  written.push('bench/results/latest.{json,svg}', 'docs/benchmarks.md');
}
process.stderr.write(`bench: done in ${report.meta.seconds} s; wrote ${written.join(', ')}\n`);
process.exit(0);

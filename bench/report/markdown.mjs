/**
 * Markdown tables (one per scenario, systems side by side, our figures checked against the
 * issue's targets) and the docs/benchmarks.md page. Comparator cells carry their ratio to
 * our figure, `(×r)`.
 */
const LABELS = { ours: 'nestjs-dynamo-lock', dlc: 'dynamodb-lock-client', raw: 'raw polling (25 ms)', baseline: 'raw 2-call SDK baseline' };

const num = (v, d = 2) => (v === null || v === undefined || Number.isNaN(v) ? '–' : Number.isInteger(v) ? String(v) : v.toFixed(d));
const pct = (v) => (v === null || v === undefined ? '–' : `${(v * 100).toFixed(1)}%`);
const ms = (v) => (v === null || v === undefined ? '–' : `${v >= 100 ? v.toFixed(0) : v.toFixed(1)} ms`);

/** Target helpers: each returns `{ text, pass(v), missBy(v) }`. */
const atLeast = (t, f = num) => ({ text: `≥ ${f(t)}`, pass: (v) => v >= t, missBy: (v) => `${f(t - v)} short (${pct(v / t)} of target)` });
const atMost = (t, f = num) => ({ text: `≤ ${f(t)}`, pass: (v) => v <= t, missBy: (v) => `${f(v - t)} over (${num(v / t)}× the target)` });
const exactly = (t, tol, f = num) => ({
  text: tol ? `${f(t)} ± ${f(tol)}` : `= ${f(t)}`,
  pass: (v) => Math.abs(v - t) <= tol + 1e-9,
  missBy: (v) => `${f(v - t)} off`,
});

/**
 * One scenario table. `rows`: `{ metric, get(result), fmt, target?, ratio? }`; `results`:
 * per system id. Returns the markdown and the target checks.
 */
function table(scenario, rows, results, systems) {
  const checks = [];
  const head = ['metric', 'target', LABELS.ours, '', ...systems.filter((s) => s !== 'ours').map((s) => LABELS[s])];
  const lines = [`| ${head.join(' | ')} |`, `|${head.map((_, i) => (i < 2 ? ' --- ' : ' ---: ')).join('|')}|`];
  for (const row of rows) {
    const ours = row.get(results.ours);
    let verdict = '';
    if (row.target && ours !== null && ours !== undefined) {
      const pass = row.target.pass(ours);
      verdict = pass ? 'pass' : '**miss**';
      checks.push({
        scenario,
        metric: row.metric,
        value: ours,
        target: row.target.text,
        pass,
        ...(pass ? {} : { missBy: row.target.missBy(ours) }),
      });
    }
    const cells = systems
      .filter((s) => s !== 'ours')
      .map((s) => {
        const v = results[s] ? row.get(results[s]) : null;
        const ratio =
          row.ratio !== false && typeof v === 'number' && typeof ours === 'number' && ours !== 0
            ? ` (×${num(v / ours, v / ours >= 10 ? 0 : 2)})`
            : '';
        return `${row.fmt(v)}${ratio}`;
      });
    lines.push(`| ${[row.metric, row.target?.text ?? '', row.fmt(ours), verdict, ...cells].join(' | ')} |`);
  }
  return { text: lines.join('\n'), checks };
}

export function scenarioTables(report) {
  const { results, meta } = report;
  const out = [];
  const checks = [];
  const add = (title, note, t) => {
    out.push(`### ${title}\n\n${note}\n\n${t.text}\n`);
    checks.push(...t.checks);
  };
  const LOCKS = ['ours', 'dlc', 'raw'];

  if (results.uncontended) {
    const r = results.uncontended;
    add(
      '1. Uncontended acquire + release',
      `${r.ours.cycles} cycles per system on distinct keys, one at a time, interleaved in blocks. Latency is of the whole cycle; ratios are to the two-call baseline sent with the same client.`,
      table(
        'uncontended',
        [
          { metric: 'requests per cycle', get: (x) => x.requestsPerCycle, fmt: num, target: exactly(2, 0) },
          { metric: 'reads per cycle', get: (x) => x.readsPerCycle, fmt: num, target: exactly(0, 0), ratio: false },
          { metric: 'latency p50', get: (x) => x.latencyMs.p50, fmt: ms },
          { metric: 'latency p99', get: (x) => x.latencyMs.p99, fmt: ms },
          {
            metric: 'p50 / baseline p50',
            get: (x) => x.p50Ratio,
            fmt: (v) => (v == null ? '–' : `${num(v)}×`),
            target: atMost(1.05),
            ratio: false,
          },
          {
            metric: 'p99 / baseline p99',
            get: (x) => x.p99Ratio,
            fmt: (v) => (v == null ? '–' : `${num(v)}×`),
            target: atMost(1.05),
            ratio: false,
          },
        ],
        r,
        [...LOCKS, 'baseline'],
      ),
    );
  }
  if (results.inProcess) {
    const r = results.inProcess;
    add(
      '2. In-process contention',
      `${r.ours.callers} callers in one process, one key, hold ${r.ours.holdMs} ms, ${r.ours.seconds} s per system. Limit = 1000 / (hold + RTT), RTT = median conditional write measured in the same segment (ours: ${ms(r.ours.rttMs)}).`,
      table(
        'inProcess',
        [
          { metric: 'acquisitions/s', get: (x) => x.perSecond, fmt: num },
          { metric: 'fraction of limit', get: (x) => x.fractionOfLimit, fmt: pct, target: atLeast(0.95, pct) },
          { metric: 'hand-over p50 (release call → next grant)', get: (x) => x.handoverMs.p50, fmt: ms },
          { metric: 'hand-over p99', get: (x) => x.handoverMs.p99, fmt: ms },
          { metric: 'writes per acquisition', get: (x) => x.writesPerAcquisition, fmt: num, target: atMost(1.1) },
          { metric: 'failed writes per acquisition', get: (x) => x.failedWritesPerAcquisition, fmt: num },
          { metric: 'write-equivalents per acquisition', get: (x) => x.writeEqPerAcquisition, fmt: num },
          { metric: 'requests per acquisition', get: (x) => x.requestsPerAcquisition, fmt: num },
          {
            metric: 'FIFO inversions (grants that overtook an earlier caller)',
            get: (x) => x.fifoInversions,
            fmt: num,
            target: exactly(0, 0),
            ratio: false,
          },
          { metric: 'overlaps', get: (x) => x.overlaps, fmt: num, target: exactly(0, 0), ratio: false },
        ],
        r,
        LOCKS,
      ),
    );
  }
  for (const [key, r] of Object.entries(results.crossProcess ?? {})) {
    const hold = r.ours.holdMs;
    add(
      `3. Cross-process contention, hold ${hold >= 1000 ? `${hold / 1000} s` : `${hold} ms`}`,
      `${r.ours.processes} processes, one key, ${r.ours.seconds} s per system, lease ${meta.settings.contentionLeaseMs} ms with heartbeats every third of it for every system. Limit = 1000 / (hold + 2·RTT) (ours: RTT ${ms(r.ours.rttMs)}, limit ${num(r.ours.limitPerSecond)}/s). Hand-over: a release call to the next grant (shared wall clock). Cost: write = 1, strongly consistent read = 0.2.`,
      table(
        `crossProcess.${key}`,
        [
          { metric: 'acquisitions/s', get: (x) => x.perSecond, fmt: num },
          { metric: 'fraction of limit', get: (x) => x.fractionOfLimit, fmt: pct, target: atLeast(0.9, pct) },
          {
            metric: 'write-equivalents per acquisition',
            get: (x) => x.writeEqPerAcquisition,
            fmt: num,
            target: atMost(hold >= 1000 ? 5 : 2.5),
          },
          { metric: 'requests per acquisition', get: (x) => x.requestsPerAcquisition, fmt: num },
          { metric: '… of which failed conditional writes', get: (x) => x.failedWritesPerAcquisition, fmt: num },
          { metric: '… of which strongly consistent reads', get: (x) => x.strongReadsPerAcquisition, fmt: num },
          { metric: 'hand-over p50', get: (x) => x.handoverMs.p50, fmt: ms },
          { metric: 'hand-over p99', get: (x) => x.handoverMs.p99, fmt: ms },
          { metric: 'smallest share / mean share', get: (x) => x.minShare, fmt: num, target: atLeast(0.6) },
          { metric: 'largest share / mean share', get: (x) => x.maxShare, fmt: num },
          { metric: 'next holder was the releaser', get: (x) => x.sameProcessNext, fmt: pct },
          {
            metric: 'acquisitions per process',
            get: (x) => x.perProcess.map((p) => p.join('/')).join(', '),
            fmt: (v) => v ?? '–',
            ratio: false,
          },
          { metric: 'overlaps', get: (x) => x.overlaps, fmt: num, target: exactly(0, 0), ratio: false },
        ],
        r,
        LOCKS,
      ),
    );
  }
  if (results.takeover) {
    const r = results.takeover;
    const lease = r.ours.leaseMs;
    const rtt = r.ours.graceful.rttMs;
    add(
      '5. Takeover',
      `Lease ${lease} ms, heartbeat every ${Math.round(lease / 3)} ms; the holder is signalled half a heartbeat interval after a heartbeat; two processes wait. ${r.ours.kill.trials} trial(s) per system and mode; p50 / max over trials. Targets: a dead holder is taken over within one lease of its last heartbeat plus one poll (taken here as 500 ms); a graceful stop within a round trip (taken here as 2·RTT + 10 ms from the signal: the release write, the next acquire write, signal delivery).`,
      table(
        'takeover',
        [
          { metric: 'SIGKILL: from last heartbeat, p50', get: (x) => x.kill.fromHeartbeatMs.p50, fmt: ms },
          { metric: 'SIGKILL: from last heartbeat, max', get: (x) => x.kill.fromHeartbeatMs.max, fmt: ms, target: atMost(lease + 500, ms) },
          { metric: 'graceful: from SIGTERM, p50', get: (x) => x.graceful.fromSignalMs.p50, fmt: ms },
          {
            metric: 'graceful: from SIGTERM, max',
            get: (x) => x.graceful.fromSignalMs.max,
            fmt: ms,
            target: atMost(Math.round(2 * rtt + 10), ms),
          },
          { metric: 'graceful: from last heartbeat, p50', get: (x) => x.graceful.fromHeartbeatMs.p50, fmt: ms },
          { metric: 'waiting cost (write-eq/s per waiter)', get: (x) => x.kill.waitWriteEqPerSecondPerWaiter, fmt: num },
        ],
        r,
        LOCKS,
      ),
    );
  }
  if (results.scale) {
    const r = results.scale;
    const systems = LOCKS.filter((s) => r[s]);
    add(
      '6. Scale: one process holding many locks',
      `${r.ours.locks} locks on distinct keys, held for ${Math.round(r.ours.windowMs / 1000)} s${systems.length > 1 && r[systems[1]].windowMs < r.ours.windowMs - 1000 ? ` (the others: ${Math.round(r[systems[1]].windowMs / 1000)} s)` : ''} with heartbeats every ${Math.round(r.ours.heartbeatMs / 1000)} s (lease ${r.ours.leaseMs / 1000} s). Heap is after a full GC. Timers: every live setTimeout/setInterval of the process, unref'd ones included, sampled when no request was in flight (the SDK keeps timers per request); ${r.ours.idleTimers} before acquiring.`,
      table(
        'scale',
        [
          {
            metric: 'heartbeat writes per lock per interval',
            get: (x) => x.heartbeatWritesPerLockPerInterval,
            fmt: (v) => num(v, 3),
            target: exactly(1, 0.02, (v) => num(v, 2)),
          },
          { metric: 'event-loop delay p99', get: (x) => x.eventLoopDelayP99Ms, fmt: ms },
          { metric: 'event-loop delay max', get: (x) => x.eventLoopDelayMaxMs, fmt: ms },
          { metric: 'heap per held lock', get: (x) => x.heapBytesPerLock, fmt: (v) => (v == null ? '–' : `${num(v / 1024, 1)} KiB`) },
          {
            metric: 'active timers while holding',
            get: (x) => x.activeTimers,
            fmt: num,
            target: { text: `< 1% of locks (${r.ours.locks / 100})`, pass: (v) => v < r.ours.locks / 100, missBy: (v) => `${v} timers` },
          },
          { metric: 'time to acquire all', get: (x) => x.acquireSeconds, fmt: (v) => (v == null ? '–' : `${num(v, 1)} s`) },
          { metric: 'warnings (lost locks, failed heartbeats)', get: (x) => x.warnings, fmt: num, ratio: false },
        ],
        r,
        systems,
      ),
    );
  }
  return { markdown: out.join('\n'), checks };
}

export function docsPage(report, tables) {
  const { meta, checks } = report;
  const misses = checks.filter((c) => !c.pass);
  const versions = Object.entries(meta.versions)
    .filter(([, v]) => v)
    .map(([name, v]) => `\`${name}\` ${v}`)
    .join(', ');
  return `<!-- Generated by \`npm run bench\` (bench/run.mjs) from bench/results/latest.json. Do not edit by hand. -->
# Benchmarks

How \`nestjs-dynamo-lock\` compares with [dynamodb-lock-client](https://www.npmjs.com/package/dynamodb-lock-client)
(FailOpen, heartbeats on) and a hand-rolled polling lock (conditional put every 25 ms, conditional delete on
release), measured side by side in one run against one local server. Every DynamoDB request goes through a
counting proxy, so request counts are comparable whatever the client. Targets are those of the design issue;
\`pass\`/\`miss\` is for our figures. Comparator cells show their ratio to ours as \`(×r)\`.

## This run

- **Mode:** ${meta.mode} (${meta.seconds} s), ${meta.date}
- **Server:** ${meta.server.name} ${meta.server.version}, behind the counting proxy, all on this host
- **Machine:** ${meta.machine.cpus} CPUs (${meta.machine.cpuModel}), ${meta.machine.memoryGiB} GiB, ${meta.machine.platform}, Node ${meta.machine.node}
- **Versions:** ${versions}
- **Targets missed:** ${misses.length === 0 ? 'none' : misses.length}

![Benchmark chart](../bench/results/latest.svg)

${tables}
${misses.length ? `## Targets missed in this run\n\n${misses.map((m) => `- ${m.scenario}: ${m.metric} = ${typeof m.value === 'number' ? num(m.value, 3) : m.value}, target ${m.target}: ${m.missBy}`).join('\n')}\n` : ''}
## How to run

\`\`\`sh
npm run bench                        # full run on dynalite (about 5 minutes); rewrites this page
npm run bench:quick                  # CI smoke test, under a minute; keeps this page (--no-docs)
npm run bench -- --dynamodb-local    # against DynamoDB Local (needs Java 17+)
DYNAMODB_ENDPOINT=http://127.0.0.1:8000 npm run bench   # any local DynamoDB-compatible server (plain HTTP)
npm run bench -- --only=crossProcess,takeover --systems=raw --no-docs   # some scenarios, fewer comparators
\`\`\`

Every run writes \`bench/results/<mode>-<server>.json\` (the last run of each kind); without \`--no-docs\` it is also
the latest run: \`bench/results/latest.json\`, \`latest.svg\` and this page. Code: \`bench/run.mjs\` (orchestration, sizes per mode), \`bench/scenarios/\` (one file per scenario,
each also its own worker process), \`bench/systems/\` (one adapter per lock), \`bench/support/\` (server, counting proxy,
process plumbing), \`bench/report/\` (tables, this page, the chart).

## What is measured, and how

- Every workload runs in a child process of its own; the server (dynalite in a child process, or the DynamoDB Local
  JVM) and the counting proxy run in processes of their own too. Each scenario segment uses a fresh table, so the
  proxy's per-table counts are exactly that segment's requests.
- **RTT** is the median latency of a conditional \`UpdateItem\` through the proxy, measured in the same segment just
  before its workload. The throughput limits use it: \`1000 / (hold + RTT)\` in one process (one hand-over write per
  acquisition), \`1000 / (hold + 2·RTT)\` across processes (a release write, then the next holder's acquire write).
- **Cost** is in write-equivalents at on-demand prices: each write request (a failed conditional write is charged
  too) = 1, a strongly consistent read = 0.2, an eventually consistent read = 0.1. Heartbeats and releases count.
- **Hand-over** is from a holder's release call to the next grant, on \`performance.timeOrigin + performance.now()\`,
  which is comparable across processes on one host. **Fairness** is each process's share of the acquisitions
  divided by the mean share. **Overlaps**: inside the critical section each process creates a marker file with
  \`O_EXCL\`; a second process inside at the same time fails to create it.
- A critical section holds for exactly its time (a timer, then a spin for the last 2 ms), since a bare 20 ms timer
  overshoots by about 1 ms, which alone would cost 4% against the limit.
- The contention scenarios give every system the same lease (${meta.settings.contentionLeaseMs} ms) and heartbeat (a third of it).
  dynamodb-lock-client waits a full lease whenever it sees the lock held, so a longer lease makes it slower still.
- Absolute figures depend on this machine and on a local server with ~1 ms round trips; the ratios are what
  carries over. DynamoDB itself has RTTs of several milliseconds, which makes polling relatively cheaper in requests
  per second but not in requests per acquisition.
`;
}

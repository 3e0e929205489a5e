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
function table(scenario, rows, results, systems, labels = LABELS) {
  const checks = [];
  const head = ['metric', 'target', labels.ours, '', ...systems.filter((s) => s !== 'ours').map((s) => labels[s])];
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

/** A system's acquisitions/s over the fastest other system's in the same results (null with no other). */
function aheadOf(results, x) {
  const others = Object.values(results).filter((o) => o !== x && typeof o?.perSecond === 'number');
  if (others.length === 0 || typeof x?.perSecond !== 'number') return null;
  const best = Math.max(...others.map((o) => o.perSecond));
  return best > 0 ? x.perSecond / best : null;
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
      `${r.ours.cycles} cycles per system on distinct keys, one at a time, interleaved in blocks. Latency is of the whole cycle; client CPU is the worker process's own (user + system) per cycle; ratios are to the two-call baseline sent with the same client.`,
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
            target: atMost(1.15),
            ratio: false,
          },
          {
            metric: 'p99 / baseline p99',
            get: (x) => x.p99Ratio,
            fmt: (v) => (v == null ? '–' : `${num(v)}×`),
            target: atMost(1.15),
            ratio: false,
          },
          { metric: 'client CPU per cycle', get: (x) => x.cpuMsPerCycle, fmt: (v) => (v == null ? '–' : `${v.toFixed(2)} ms`) },
          {
            metric: 'client CPU / baseline CPU',
            get: (x) => x.cpuRatio,
            fmt: (v) => (v == null ? '–' : `${num(v)}×`),
            target: atMost(1.2),
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
      `${r.ours.processes} processes, one key, ${r.ours.seconds} s per system, lease ${meta.settings.contentionLeaseMs} ms with heartbeats every third of it for every system. Limit = 1000 / (hold + RTT): a fair hand-over through the table costs a round trip at least (the release lands, then the next holder learns of it); RTT from an idle probe once every worker has started (ours: RTT ${ms(r.ours.rttMs)}, limit ${num(r.ours.limitPerSecond)}/s). Hand-over: a release call to the next grant (shared wall clock). Cost: write = 1, strongly consistent read = 0.2.`,
      table(
        `crossProcess.${key}`,
        [
          { metric: 'acquisitions/s', get: (x) => x.perSecond, fmt: num },
          { metric: 'fraction of limit', get: (x) => x.fractionOfLimit, fmt: pct, target: atLeast(0.9, pct) },
          {
            metric: 'acquisitions/s / the fastest other system',
            get: (x) => aheadOf(r, x),
            fmt: (v) => (v == null ? '–' : `${num(v)}×`),
            target: atLeast(1),
            ratio: false,
          },
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
    const differing = systems.filter((s) => s !== 'ours' && (r[s].windowMs < r.ours.windowMs - 1000 || r[s].locks !== r.ours.locks));
    add(
      '6. Scale: one process holding many locks',
      `${r.ours.locks} locks on distinct keys, held for ${Math.round(r.ours.windowMs / 1000)} s${differing.length ? ` (${differing.map((s) => `${LABELS[s]}: ${r[s].locks} locks for ${Math.round(r[s].windowMs / 1000)} s`).join('; ')}; figures are per lock, and the time to acquire all is for that number)` : ''} with heartbeats every ${Math.round(r.ours.heartbeatMs / 1000)} s (lease ${r.ours.leaseMs / 1000} s). Heap is after a full GC. Timers: every live setTimeout/setInterval of the process, unref'd ones included, sampled when no request was in flight (the SDK keeps timers per request); ${r.ours.idleTimers} before acquiring. Event-loop delay: how late a 10 ms sampling timer fired (its period taken off). This table is each system at its largest n; the next one is the whole axis.`,
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
          { metric: 'locks held', get: (x) => x.locks, fmt: num, ratio: false },
          { metric: 'time to acquire all', get: (x) => x.acquireSeconds, fmt: (v) => (v == null ? '–' : `${num(v, 1)} s`), ratio: false },
          { metric: 'warnings (lost locks, failed heartbeats)', get: (x) => x.warnings, fmt: num, ratio: false },
        ],
        r,
        systems,
      ),
    );
    const axis = scaleAxisTable(r, systems);
    out.push(axis.markdown);
    checks.push(...axis.checks);
  }
  if (results.waiting) {
    const w = waitingTables(results.waiting, results.crossProcess?.hold20);
    out.push(w.markdown);
    checks.push(...w.checks);
  }
  if (results.waitingOthers) out.push(waitingAxisTable(results.waiting, results.waitingOthers));
  if (results.leadership) {
    const r = results.leadership;
    const o = r.ours;
    const perRequest = (n) => Math.round(3_600_000 / n);
    add(
      '8. Leadership',
      `${o.members} managers campaign for one leadership (\`lead()\`): lease ${o.leaseMs} ms, so the leader heartbeats every ${o.heartbeatMs} ms; followers read every ${o.watchMs} ms (the default: a third of the lease). Requests counted per manager over ${Math.round(o.windowMs / 1000)} s, scaled to one hour; capacity units as billed for the whole table (${o.billed.source.writes} writes, ${o.billed.source.reads} reads; largest item ${o.billed.maxItemBytes} B, so one unit per request). At the default 30 s lease: ${o.atDefaultLease.leaderWcuPerHour} WCU an hour for the leader, ${o.atDefaultLease.followerRcuPerHour} RCU an hour per follower. Targets: one write per heartbeat interval (${perRequest(o.heartbeatMs)} an hour), one strongly consistent read per watch interval (${perRequest(o.watchMs)} an hour), no follower write; a resignation is taken over within one watch interval (plus 100 ms).`,
      table(
        'leadership',
        [
          {
            metric: 'leader: writes (WCU) per hour',
            get: (x) => x.leader.wcuPerHour,
            fmt: num,
            target: atMost(Math.ceil(perRequest(o.heartbeatMs) * 1.05)),
          },
          { metric: 'leader: reads per hour', get: (x) => x.leader.readsPerHour, fmt: num, target: exactly(0, 0) },
          {
            metric: 'follower: reads (RCU) per hour',
            get: (x) => x.follower.rcuPerHour,
            fmt: num,
            target: atMost(Math.ceil(perRequest(o.watchMs) * 1.05)),
          },
          { metric: 'follower: writes per hour', get: (x) => x.follower.writesPerHour, fmt: num, target: exactly(0, 0) },
          {
            metric: 'terms begun or ended during the window',
            get: (x) => x.termChanges.elected + x.termChanges.revoked.length,
            fmt: num,
            target: exactly(0, 0),
          },
          { metric: 'resign → a follower leads', get: (x) => x.handoverMs, fmt: ms, target: atMost(o.watchMs + 100, ms) },
        ],
        r,
        ['ours'],
      ),
    );
  }
  if (results.semaphore) out.push(semaphoreTable(results.semaphore));
  if (results.scheduledFires) {
    const f = scheduledFiresTables(results.scheduledFires);
    out.push(f.markdown);
    checks.push(...f.checks);
  }
  if (results.fencedWrites) out.push(fencedWritesTable(results.fencedWrites));
  if (results.multiKey) out.push(multiKeyTable(results.multiKey));
  if (results.readWrite) out.push(readWriteTable(results.readWrite));
  return { markdown: out.join('\n'), checks };
}

/** Scenario 13: 64 readers and a writer on one key, next to the same callers all exclusive; the cost of holding. */
function readWriteTable(r) {
  const labels = { read: "readers with `mode: 'read'`", mutex: 'every caller exclusive (plain mutex)' };
  const lines = [
    '| variant | reads/s | read wait p50 / p99 | writes/s | writer wait p50 / p99 | WCU / acquisition | RCU / acquisition | largest item |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const variant of ['read', 'mutex']) {
    const x = r[variant];
    lines.push(
      `| ${labels[variant]} | ${num(x.readsPerSecond, 1)} | ${ms(x.readWaitMs.p50)} / ${ms(x.readWaitMs.p99)} | ${num(x.writesPerSecond, 2)} | ${ms(x.writerWaitMs.p50)} / ${ms(x.writerWaitMs.p99)} | ${num(x.wcuPerAcquisition, 2)} | ${num(x.rcuPerAcquisition, 2)} | ${x.maxItemBytes} B |`,
    );
  }
  const h = r.holding;
  const note = `${r.readers} readers in ${r.managers} managers read one key in a loop (${r.readHoldMs} ms each) while one writer takes it for ${r.writeHoldMs} ms every ${r.writerGapMs} ms, for ${r.rounds} windows of ${r.windowMs / 1000} s per variant, alternating; lease ${r.leaseMs / 1000} s. Capacity is what the server billed on the metered table (${r.read.source?.writes ?? '–'}), over every acquisition (reads and writes). Read throughput with read locks / all exclusive: ×${num(r.readThroughputRatio, 1)}. Holding: ${h.held} readers (${h.readersInItem} entries in the item, at most 64) held the key for ${(h.ms / 1000).toFixed(1)} s with heartbeats every ${h.heartbeatIntervalMs} ms: ${num(h.writesPerReaderPerInterval, 2)} writes and ${num(h.wcuPerReaderPerInterval, 2)} WCU per held reader per heartbeat interval (the item was ${h.maxItemBytes} B: each reader's heartbeat rewrites it, billed by its size).`;
  return `### 13. Read locks\n\n${note}\n\n${lines.join('\n')}\n`;
}

/** Scenario 12: multi-key transfers next to two nested mutex acquisitions, in the same run. */
function multiKeyTable(r) {
  const labels = { multi: '`withLock([a, b])` (multi-key)', nested: '`withLock(a, () => withLock(b))` (nested, keys sorted)' };
  const lines = [
    '| variant | transfers/s | p50 transfer | p99 transfer | requests / transfer | transactions (cancelled) / transfer | write-eq / transfer |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  const rows = [...(r.uncontended ? [['1 caller: ', r.uncontended]] : []), [r.uncontended ? `${r.callers} callers: ` : '', r]];
  for (const [setting, run] of rows)
    for (const variant of ['multi', 'nested']) {
      const x = run[variant];
      lines.push(
        `| ${setting}${labels[variant]} | ${num(x.perSecond, 1)} | ${ms(x.latencyMs.p50)} | ${ms(x.latencyMs.p99)} | ${num(x.requestsPerTransfer, 2)} | ${num(x.transactionsPerTransfer ?? 0, 2)} (${num(x.cancelledTransactionsPerTransfer ?? 0, 2)}) | ${num(x.writeEqPerTransfer, 2)} |`,
      );
    }
  const note = `${r.callers} callers in ${r.managers} managers move money between ${r.accounts} accounts, each transfer holding two accounts named in a random order with ${r.workMs} ms of work, for ${r.rounds} windows of ${r.windowMs / 1000} s per variant, alternating. Where the server has transactions (DynamoDB Local) a free pair is taken in one \`TransactWriteItems\` (2 WCU per key, counted in the write-equivalents, cancelled transactions too) and released with one write per key; a busy pair, and every pair on dynalite, is taken in order through the mutex, as the nested pair is. Multi-key / nested throughput: ×${num(r.throughputRatio, 2)}${r.uncontended ? ` (one caller, nothing contending: ×${num(r.uncontended.throughputRatio, 2)})` : ''}.`;
  return `### 12. Multi-key transfers\n\n${note}\n\n${lines.join('\n')}\n`;
}

/** Scenario 11: a plain Put next to fenced writes and a one-item transaction, capacity units and latency. */
function fencedWritesTable(r) {
  const labels = {
    plainPut: 'plain `PutItem` (SDK)',
    fencedPut: '`lock.fencedWrite()` Put',
    fencedUpdate: '`lock.fencedWrite()` Update',
    transact: '`lock.transact()`, one item',
  };
  const cell = (v, ratio) =>
    v === null || v === undefined ? '–' : `${v}${ratio === null || ratio === undefined ? '' : ` (×${num(ratio, 2)})`}`;
  const lines = ['| write | capacity units per write | p50 latency | p99 latency |', '| --- | ---: | ---: | ---: |'];
  for (const kind of ['plainPut', 'fencedPut', 'fencedUpdate', 'transact']) {
    const x = r[kind];
    if (!x) continue;
    if (!x.supported) {
      lines.push(`| ${labels[kind]} | not supported | not supported | not supported |`);
      continue;
    }
    const first = kind === 'plainPut';
    lines.push(
      `| ${labels[kind]} | ${cell(x.capacityUnits, first ? null : x.capacityRatio)} | ${cell(ms(x.latencyMs.p50), first ? null : x.p50Ratio)} | ${ms(x.latencyMs.p99)} |`,
    );
  }
  const note = `One holder writes small items of a data table, ${r.writes} of each kind round-robin in one process; every request asks for \`ReturnConsumedCapacity: TOTAL\` and the figure is the median the server reported per write, summed over the tables a request touched (for \`transact\`: the data item's write and the lock item's \`ConditionCheck\`; DynamoDB bills a transactional write as two). A fenced write is the same single request as the plain one, with the token stamped and the fence condition joined; \`transact\` adds a \`ConditionCheck\` of the lock item in one \`TransactWriteItems\`${r.transact && !r.transact.supported ? ' (this server has no transactions: `lock.transact()` refuses at once, pointing to `fencedWrite()`)' : ''}. Ratios: over the plain Put.`;
  return `### 11. Fenced writes\n\n${note}\n\n${lines.join('\n')}\n`;
}

/**
 * Checks `value` against `target` (nothing when either is missing), adds the check to `checks`
 * and returns the verdict to append to a table cell.
 */
function checkCell(checks, scenario, metric, value, target) {
  if (!target || value === null || value === undefined) return '';
  const pass = target.pass(value);
  checks.push({ scenario, metric, value, target: target.text, pass, ...(pass ? {} : { missBy: target.missBy(value) }) });
  return ` · ${target.text} ${pass ? 'pass' : '**miss**'}`;
}

/** Targets of the held-locks axis (issue 30), for our figures at every n. */
const SCALE_TARGETS = { heapBytesPerLock: 2048, eventLoopDelayP99Ms: 20, rateKeptFromSmallestN: 0.9 };
const kib = (v) => (v === null || v === undefined ? '–' : `${num(v / 1024, 1)} KiB`);

/**
 * Scenario 6's axis: a row per system and n held. Our rows are checked: heap per lock and
 * event-loop delay p99 at every n, acquisitions/s at least every other system's at the same n,
 * and at the largest n at least 90% of ours at the smallest.
 */
function scaleAxisTable(r, systems) {
  const checks = [];
  const ours = (r.ours.byN ?? []).filter((x) => !x.skipped);
  const others = systems.filter((s) => s !== 'ours');
  const head = [
    'system',
    'n held',
    'time to acquire all',
    'acquisitions/s',
    'heartbeat writes per lock per interval',
    'heap per held lock',
    'event-loop delay p99',
    'warnings',
  ];
  const lines = [`| ${head.join(' | ')} |`, `|${head.map((_, i) => (i < 2 ? ' --- ' : ' ---: ')).join('|')}|`];
  for (const id of systems) {
    for (const x of r[id].byN ?? []) {
      if (x.skipped) {
        lines.push(`| ${[LABELS[id], num(x.n), x.skipped, ...head.slice(3).map(() => '')].join(' | ')} |`);
        continue;
      }
      const check = (metric, value, target) => (id === 'ours' ? checkCell(checks, 'scale', `${metric}, n = ${x.n}`, value, target) : '');
      const rate = (v) => num(v, 0);
      const best = Math.max(0, ...others.map((s) => r[s].byN?.find((o) => o.n === x.n)?.acquirePerSecond ?? 0));
      const kept = x === ours.at(-1) && ours.length > 1 ? SCALE_TARGETS.rateKeptFromSmallestN * ours[0].acquirePerSecond : 0;
      const cells = [
        LABELS[id],
        num(x.n),
        `${num(x.acquireSeconds, 1)} s`,
        rate(x.acquirePerSecond) +
          check('acquisitions/s (≥ the other systems at the same n)', x.acquirePerSecond, best > 0 && atLeast(best, rate)) +
          check(
            `acquisitions/s (≥ ${pct(SCALE_TARGETS.rateKeptFromSmallestN)} of ours at n = ${ours[0]?.n})`,
            x.acquirePerSecond,
            kept > 0 && atLeast(kept, rate),
          ),
        num(x.heartbeatWritesPerLockPerInterval, 3),
        kib(x.heapBytesPerLock) + check('heap per held lock', x.heapBytesPerLock, atMost(SCALE_TARGETS.heapBytesPerLock, kib)),
        ms(x.eventLoopDelayP99Ms) + check('event-loop delay p99', x.eventLoopDelayP99Ms, atMost(SCALE_TARGETS.eventLoopDelayP99Ms, ms)),
        num(x.warnings),
      ];
      lines.push(`| ${cells.join(' | ')} |`);
    }
  }
  const note = `The held-locks axis: each system at each n (a fresh process and table per n); n locks acquired 64 at a time, then held for a window. Acquisitions/s is n / the time to acquire all. Our figures are checked at every n: heap per held lock ${atMost(SCALE_TARGETS.heapBytesPerLock, kib).text}, event-loop delay p99 ${atMost(SCALE_TARGETS.eventLoopDelayP99Ms, ms).text}, acquisitions/s at least every other system's at the same n, and at the largest n at least ${pct(SCALE_TARGETS.rateKeptFromSmallestN)} of ours at the smallest.`;
  return { markdown: `#### 6b. Held-locks axis\n\n${note}\n\n${lines.join('\n')}\n`, checks };
}

/** Targets of the waiting redesign, per N (absent: none at that N). */
const WAITING_TARGETS = {
  wcu: { 4: 2.5, 64: 3.5, 200: 3.5, 1000: 3.5 },
  rcu: { 4: 3, 64: 4, 200: 4, 1000: 5 },
  minShare: { 64: 0.5 },
  /** Acquisitions/s at N as a share of the rate at the key's N (issue 30: 1,000 waiters ≥ 80% of 200's). */
  rateOf: { 1000: { n: 200, share: 0.8 } },
  /** Every participant granted within the window (one long enough at the rate targeted: 60 s at N = 1,000). */
  allGranted: [1000],
};
/** Acquisitions per participant, on average, below which a window is too short to judge fairness. */
const FAIRNESS_MIN_ROUNDS = 3;
const kb = (v) => (v === null || v === undefined ? '–' : v >= 1024 ? `${(v / 1024).toFixed(1)} KB` : `${v} B`);

/**
 * Scenario 7: a table per N (metrics down, one column per N, each figure with its target and
 * verdict), then the stops and the throughput row (ours next to raw polling).
 */
function waitingTables(r, hold20) {
  const checks = [];
  const rows = r.rows;
  const live = rows.filter((x) => !x.skipped);
  const check = (metric, n, value, target) => checkCell(checks, 'waiting', n === null ? metric : `${metric}, N = ${n}`, value, target);
  const perN = [
    { metric: 'acquisitions counted', get: (x) => x.acquisitions, fmt: num },
    {
      metric: 'acquisitions/s',
      get: (x) => x.perSecond,
      fmt: num,
      // A rate at least a share of the rate at a smaller N of the same run.
      target: ({ n }) => {
        const of = WAITING_TARGETS.rateOf[n];
        const base = of && live.find((x) => x.n === of.n);
        return base ? atLeast(Math.round(of.share * base.perSecond * 100) / 100) : undefined;
      },
      note: ({ n }) =>
        WAITING_TARGETS.rateOf[n] && live.some((x) => x.n === WAITING_TARGETS.rateOf[n].n)
          ? ` (${pct(WAITING_TARGETS.rateOf[n].share)} of N = ${WAITING_TARGETS.rateOf[n].n})`
          : '',
    },
    {
      metric: 'hand-over p50 / p99 (a release call → the next grant)',
      get: (x) => (x.handOverMs?.n ? `${ms(x.handOverMs.p50)} / ${ms(x.handOverMs.p99)}` : '–'),
      fmt: (v) => v,
    },
    {
      metric: 'WCU per acquisition',
      get: (x) => x.wcuPerAcquisition,
      fmt: num,
      target: ({ n }) => WAITING_TARGETS.wcu[n] && atMost(WAITING_TARGETS.wcu[n]),
    },
    {
      metric: 'RCU per acquisition',
      get: (x) => x.rcuPerAcquisition,
      fmt: num,
      target: ({ n }) => WAITING_TARGETS.rcu[n] && atMost(WAITING_TARGETS.rcu[n]),
    },
    {
      metric: '… computed from item sizes (WCU / RCU)',
      get: (x) => `${num(x.computedWcuPerAcquisition)} / ${num(x.computedRcuPerAcquisition)}`,
      fmt: (v) => v,
    },
    { metric: '… WCU of failed conditional writes', get: (x) => x.failedWriteWcuPerAcquisition, fmt: num },
    {
      metric: 'write / read requests per acquisition',
      get: (x) => `${num(x.writesPerAcquisition)} / ${num(x.readsPerAcquisition)}`,
      fmt: (v) => v,
    },
    { metric: 'largest item', get: (x) => x.maxItemBytes, fmt: kb, target: () => atMost(2048, kb) },
    {
      metric: `smallest share / mean share (judged with ≥ ${FAIRNESS_MIN_ROUNDS} acquisitions per participant)`,
      get: (x) => x.minShare,
      fmt: num,
      // A window too short for every participant to get the lock a few times says nothing of fairness.
      target: ({ n, acquisitions }) =>
        acquisitions >= FAIRNESS_MIN_ROUNDS * n && WAITING_TARGETS.minShare[n] ? atLeast(WAITING_TARGETS.minShare[n]) : undefined,
      note: ({ n, acquisitions }) =>
        WAITING_TARGETS.minShare[n] && acquisitions < FAIRNESS_MIN_ROUNDS * n ? ' · window too short to judge' : '',
    },
    {
      metric: 'participants without a grant in the window',
      get: (x) => x.participantsWithoutGrant,
      fmt: num,
      target: ({ n }) => (WAITING_TARGETS.allGranted.includes(n) ? exactly(0, 0) : undefined),
      note: ({ n, windowMs }) => (WAITING_TARGETS.allGranted.includes(n) ? ` (window ${num(windowMs / 1000, 0)} s)` : ''),
    },
    {
      metric: 'start-up: every participant asked once after',
      get: (x) => x.askedSeconds,
      fmt: (v) => (v == null ? '–' : `${num(v, 1)} s`),
    },
    {
      metric: `FIFO inversions (overtook a caller of the same process that asked ≥ ${r.fifoSlackMs} ms earlier, within the window)`,
      get: (x) => x.fifoInversions,
      fmt: num,
      target: () => exactly(0, 0),
    },
    { metric: '… with no slack (any earlier caller)', get: (x) => x.fifoInversionsAnySlack, fmt: num },
    {
      metric: '… of callers that asked in the start-up burst, before the window (first asks try the free lock first)',
      get: (x) => x.fifoInversionsOfStartUpAsks,
      fmt: num,
    },
    { metric: 'overlaps (two holders > 2 ms)', get: (x) => x.overlaps, fmt: num, target: () => exactly(0, 0) },
    { metric: 'event-loop delay p99 in the workers', get: (x) => x.eventLoopP99Ms, fmt: ms },
    { metric: 'row time (start-up + settle + window)', get: (x) => x.rowSeconds, fmt: (v) => (v == null ? '–' : `${num(v, 1)} s`) },
    {
      metric: 'errors (acquire / release)',
      get: (x) => Object.values(x.errors ?? {}).reduce((a, b) => a + b, 0) + x.otherErrors,
      fmt: num,
    },
  ];
  const head = ['metric', ...rows.map((x) => `N = ${x.n}`)];
  const lines = [`| ${head.join(' | ')} |`, `|${head.map((_, i) => (i === 0 ? ' --- ' : ' ---: ')).join('|')}|`];
  for (const row of perN) {
    const cells = rows.map((x) => {
      if (x.skipped) return 'skipped';
      const v = row.get(x);
      return `${row.fmt(v)}${check(row.metric, x.n, v, row.target?.(x))}${row.note?.(x) ?? ''}`;
    });
    lines.push(`| ${[row.metric, ...cells].join(' | ')} |`);
  }
  const skipped = rows.filter((x) => x.skipped).map((x) => `N = ${x.n} was skipped: ${x.skipped}.`);
  const overloaded = live
    .filter((x) => x.overloaded)
    .map(
      (x) =>
        `**N = ${x.n}: the worker processes lagged (event-loop delay p99 ${ms(x.eventLoopP99Ms)} > ${ms(x.overloadP99Ms)}): this machine did not keep up with the row's request rate, so its figures measure the machine as much as the lock.**`,
    );
  const distinct = (f) => [...new Set(live.map((x) => x.capacitySource[f]))].join(' / ');
  const failed = live.filter((x) => x.capacitySource.failedWrites !== 'none').map((x) => `N = ${x.n}: ${x.capacitySource.failedWrites}`);
  const source = live.length
    ? `writes ${distinct('writes')}, reads ${distinct('reads')}; failed conditional writes: ${failed.length ? failed.join('; ') : 'none'}`
    : '–';
  const note =
    `N participants on one key, each its own \`LockManager\` (as separate instances would be; library defaults: 30 s lease), spread over up to ${r.processes} processes; each loops acquire (wait) → hold ${r.holdMs} ms → release. Counted after ${num(r.settleMs / 1000, 1)} s of settling, over ${live.map((x) => `${num(x.windowMs / 1000, 0)} s`).join(' / ')}. Capacity is what DynamoDB bills (write units, strongly consistent read units), metered by the counting proxy: ${source}. ${[...skipped, ...overloaded].join(' ')}`.trim();

  const g = r.graceful;
  const d = r.deadWaiters;
  const stops = {
    ours: {
      gracefulP50: g?.fromSignalMs.p50,
      gracefulMax: g?.fromSignalMs.max,
      deadMax: d?.fromReleaseMs.max,
      deadP50: d?.fromReleaseMs.p50,
      deadPeriods: d?.claimPeriods.max,
      deadFullClaims: d?.fromReleaseMs.max == null ? null : round3(d.fromReleaseMs.max / 5_000),
      throughput: hold20 ? round3(hold20.ours.perSecond / (1000 / hold20.ours.holdMs)) : null,
    },
    raw: { throughput: hold20?.raw ? round3(hold20.raw.perSecond / (1000 / hold20.raw.holdMs)) : null },
  };
  const stopRows = [
    {
      metric: `graceful stop → next holder, p50 (${g?.trials ?? 0} trial(s), 30 s lease)`,
      get: (x) => x.gracefulP50,
      fmt: ms,
      target: atMost(100, ms),
    },
    { metric: '… max', get: (x) => x.gracefulMax, fmt: ms },
    {
      metric: `${d?.k ?? '–'} dead queued waiters: release → live waiter's grant, max (${d?.trials ?? 0} trial(s))`,
      get: (x) => x.deadMax,
      fmt: ms,
      ...(d ? { target: atMost(d.claimMs, ms) } : {}),
    },
    { metric: '… p50', get: (x) => x.deadP50, fmt: ms },
    { metric: `… in claim periods of ${d?.claimMs ?? '–'} ms (max)`, get: (x) => x.deadPeriods, fmt: num },
    { metric: '… in uncapped 5 s claim leases (max)', get: (x) => x.deadFullClaims, fmt: num },
    {
      metric: `4 processes × 20 ms holds: acquisitions/s as a fraction of 1000 / hold${hold20 ? ' (from scenario 3)' : ' (scenario 3 did not run)'}`,
      get: (x) => x.throughput,
      fmt: pct,
      target: atLeast(0.8, pct),
    },
  ];
  const t = table('waiting', stopRows, stops, ['ours', 'raw']);
  checks.push(...t.checks);
  const stopNote = `Graceful stop: a process holds the key with default settings, another waits; the holder gets SIGTERM and runs \`manager.close()\`; from the signal to the waiter's grant. Dead queued waiters: lease ${d?.leaseMs ?? '–'} ms (claim period ${d?.claimMs ?? '–'} ms: 5 s capped by the lease); ${d?.k ?? '–'} waiters queue behind the holder, then a live one; the ${d?.k ?? '–'} are SIGKILLed while queued (queue entries seen in the item, as its longest list attribute: ${d?.queueSeen?.map((v) => v ?? 'none').join(', ') ?? '–'}), then the holder releases; the target is one claim period in all, not one per dead waiter (a waiter that cannot know a dead waiter's lease may wait a whole 5 s claim lease: the table shows that measure too). Throughput: scenario 3's 20 ms hold, against 1000 / hold (no round trips allowed for).`;
  return {
    markdown: `### 7. Waiting at scale (billed capacity)\n\n${note}\n\n${lines.join('\n')}\n\n${stopNote}\n\n${t.text}\n`,
    checks,
  };
}

const round3 = (v) => Math.round(v * 1000) / 1000;

/**
 * Scenario 7b: the waiting axis with every system that ran it, a row per system and N (ours from
 * scenario 7, when it ran), and why a row was not run.
 */
function waitingAxisTable(ours, others) {
  const rows = {
    ...(ours ? { ours: ours.rows } : {}),
    ...Object.fromEntries(Object.entries(others.systems).map(([id, o]) => [id, o.rows])),
  };
  const head = [
    'system',
    'N',
    'acquisitions/s',
    'WCU / RCU per acquisition',
    'write / read requests per acquisition',
    'smallest share / mean share',
    'participants without a grant',
    'event-loop delay p99 in the workers',
  ];
  const lines = [`| ${head.join(' | ')} |`, `|${head.map((_, i) => (i < 2 ? ' --- ' : ' ---: ')).join('|')}|`];
  for (const id of Object.keys(LABELS).filter((s) => rows[s])) {
    for (const x of rows[id]) {
      const cells = x.skipped
        ? [`not run: ${x.skipped}`, ...head.slice(3).map(() => '')]
        : [
            num(x.perSecond, 1),
            `${num(x.wcuPerAcquisition)} / ${num(x.rcuPerAcquisition)}`,
            `${num(x.writesPerAcquisition)} / ${num(x.readsPerAcquisition)}`,
            num(x.minShare),
            num(x.participantsWithoutGrant),
            `${ms(x.eventLoopP99Ms)}${x.overloaded ? ' (lagged: the row measures the machine as much as the lock)' : ''}`,
          ];
      lines.push(`| ${[LABELS[id], num(x.n), ...cells].join(' | ')} |`);
    }
  }
  const note = `Scenario 7's rows for every system that can run them: N participants on one key, each its own lock instance, over up to ${others.processes} processes, each looping acquire → hold ${others.holdMs} ms → release; the same lease for all (${num(others.leaseMs / 1000, 0)} s, heartbeats every third), counted after ${num(others.settleMs / 1000, 1)} s of settling. Capacity as the counting proxy meters it (a failed conditional write is 1 WCU where the server returns no item). dynamodb-lock-client sleeps a whole lease whenever it finds the lock held, so its releaser can take the lock straight back while the others wait out the lease (see participants without a grant); raw polling writes every 25 ms per waiter.`;
  return `#### 7b. Waiting at scale, every system\n\n${note}\n\n${lines.join('\n')}\n`;
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
## Next step: 100,000 held locks per process

Each held lock is a lease of its own today: one conditional write per lock per heartbeat interval. At 100,000
locks and a 10 s interval that is 10,000 writes per second from one process (864 million a day, billed as
10,000 WCU of steady writes), beyond what one process and its SDK client send (each request costs a fraction
of a millisecond of CPU: the scale runs above reach about 1,000 heartbeats per second with the server on the
same 2 cores), and beyond what the library's pacing can hide: when the server answers fewer heartbeats than are
due, it warns once with the rate reached, and leases survive only while each round of heartbeats takes less than
a lease.

The design that holds 100,000 locks is one lease per process shared by its locks, as etcd leases and ZooKeeper
sessions do: the process renews one session item per interval (1 write, whatever the number held), and each lock
item names the session (its id and epoch) instead of carrying a lease. What it costs:
- a waiter judges a holder by two items (the lock and its session: 2 reads, not 1), and takes a lock over in one
  transaction conditioned on the session item being unchanged for a whole lease (\`TransactWriteItems\`: 2 items,
  billed twice, about 4 WCU instead of 1); acquiring a free lock and releasing stay one write each;
- every lock of a process is lost at once when its session runs out (a pause or partition longer than the lease),
  where today each lock runs out on its own;
- a per-lock lease duration, \`extend()\` and per-lock heartbeat settings give way to the session's; fencing tokens
  stay per lock, and items of dead sessions are cleaned up by the next taker or by a sweep, not by each lock's TTL.

## How to run

\`\`\`sh
npm run bench                        # full run on dynalite (about 7 minutes); rewrites this page
npm run bench:quick                  # CI smoke test, about a minute; keeps this page (--no-docs)
npm run bench -- --dynamodb-local    # against DynamoDB Local (needs Java 17+)
DYNAMODB_ENDPOINT=http://127.0.0.1:8000 npm run bench   # any local DynamoDB-compatible server (plain HTTP)
npm run bench -- --only=crossProcess,takeover --systems=raw   # some scenarios, fewer comparators
npm run bench -- --dynamodb-local --only=waiting   # billed capacity while waiting (+ scenario 3's 20 ms hold, + 7b)
npm run bench -- --only=scale --held=2000          # the held-locks scenario at one n, every system
\`\`\`

Every run writes \`bench/results/<mode>-<server>.json\` (the last run of each kind); without \`--no-docs\` it is also
the latest run: \`bench/results/latest.json\`, \`latest.svg\` and this page. A run of some scenarios, rows or systems
(\`--only\`, \`--rows\`, \`--systems\`) writes \`bench/results/<mode>-<server>-partial.json\` only. Code: \`bench/run.mjs\` (orchestration, sizes per mode), \`bench/scenarios/\` (one file per scenario,
each also its own worker process), \`bench/systems/\` (one adapter per lock), \`bench/support/\` (server, counting proxy,
process plumbing), \`bench/report/\` (tables, this page, the chart).

## What is measured, and how

- Every workload runs in a child process of its own; the server (dynalite in a child process, or the DynamoDB Local
  JVM) and the counting proxy run in processes of their own too. Each scenario segment uses a fresh table, so the
  proxy's per-table counts are exactly that segment's requests.
- **RTT** is the median latency of a conditional \`UpdateItem\` through the proxy, measured in the same segment just
  before its workload (across processes: on an idle probe once every worker has started, so that their start-up
  and load do not inflate it). The throughput limits use it: \`1000 / (hold + RTT)\` in one process (one hand-over
  write per acquisition) and across processes (a fair hand-over through the table: the release lands, then the next
  holder learns of it, a round trip at least).
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
- **Billed capacity** (scenario 7): the proxy asks the server for \`ReturnConsumedCapacity: TOTAL\` on the
  scenario's tables and sums write and read units (server-reported where the server gives them; DynamoDB Local and
  dynalite both do for successful requests). A failed conditional write is billed like a write of the item's size:
  from the item returned with the failure (\`ALL_OLD\`; DynamoDB Local returns it), else 1 WCU (dynalite returns
  none). The same figures computed from item sizes (DynamoDB's size rules, approximately) are shown as a cross-check.
- **The scale axes** (the chart's line panels): *held locks* (scenario 6) runs each system at each n of its list
  (\`held\` in \`bench/run.mjs\`: ours at 2,000 and 10,000, the others where they finish), a fresh process and
  table per n; its table 6b and the chart give acquisitions/s (n / the time to acquire all, 64 at a time), heartbeat
  writes per lock per interval, heap per held lock and event-loop delay p99 per system and n, our figures checked
  at every n. *Waiting* (scenario 7, and 7b for the other systems) runs N participants on one key per row, the same
  lease for every system; a row a system cannot run is listed with the reason. \`--held=N\` runs every system at
  that one n; \`--rows=4,64\` limits the waiting rows of every system.
- Absolute figures depend on this machine and on a local server with ~1 ms round trips; the ratios are what
  carries over. DynamoDB itself has RTTs of several milliseconds, which makes polling relatively cheaper in requests
  per second but not in requests per acquisition.
`;
}

/** Scenario 9: counting semaphores, one row per participants × limit × hold. */
function semaphoreTable(r) {
  const cell = (v) => (v == null ? '–' : String(v));
  const head =
    '| participants | limit | hold | acquisitions/s | WCU / acquisition | RCU / acquisition | failed writes / acquisition | smallest share | most inside | largest item | duplicate tokens |';
  const rows = r.rows.map(
    (x) =>
      `| ${x.n} (${x.processes} proc.) | ${x.limit} | ${x.holdMs} ms | ${cell(x.perSecond)} | ${cell(x.wcuPerAcquisition)} | ${cell(x.rcuPerAcquisition)} | ${cell(x.failedWritesPerAcquisition)} | ${cell(x.minShare)} | ${x.mostInside} | ${x.maxItemBytes} B | ${x.duplicateTokens} |`,
  );
  const source = r.rows[0]?.capacitySource;
  return [
    '### 9. Counting semaphore (`acquire(key, { limit })`)',
    '',
    `N participants (separate managers over up to ${r.processes} processes) loop acquire → hold → release on one key; counted from ${r.settleMs} ms after the start. Capacity as billed (writes: ${source?.writes ?? '–'}; reads: ${source?.reads ?? '–'}), failed conditional writes included; smallest share = the participant with the fewest grants / the mean; most inside from grant → release intervals (2 ms clock slack).`,
    '',
    head,
    `|${'---|'.repeat(11)}`,
    ...rows,
    '',
  ].join('\n');
}

/**
 * Scenario 10: scheduled fires, fire claims (`fireTime`) next to today's way (a plain
 * `tryAcquire` and `holdAtLeast`), per fire and per role; then the run watch alone.
 */
function scheduledFiresTables(r) {
  const labels = { ours: 'fire claims (`fireTime`)', today: `today: \`tryAcquire\` + hold ≥ ${num(r.cost.holdAtLeastMs / 1000)} s` };
  const units = (v) => (v == null ? '–' : String(round3(v)));
  const secs = (v) => (v == null ? '–' : `${num(v / 1000, 2)} s`);
  const c = r.crash;
  const rows = [
    { metric: 'runs per fire', get: (x) => x.runsPerFire, fmt: num, target: exactly(1, 0), ratio: false },
    { metric: 'runner: claim write, WCU', get: (x) => x.runner.claim.wcu, fmt: units },
    { metric: 'runner: release write, WCU', get: (x) => x.runner.release.wcu, fmt: units },
    { metric: 'runner: reads (claim and release), RCU', get: (x) => x.runner.claim.rcu + x.runner.release.rcu, fmt: units },
    { metric: 'runner: heartbeats during the run, WCU', get: (x) => x.runner.heartbeats.wcu, fmt: units },
    { metric: 'each skipper: its single attempt, WCU', get: (x) => x.skipper.attempt.wcu, fmt: units },
    { metric: 'each skipper: its single attempt, RCU', get: (x) => x.skipper.attempt.rcu, fmt: units },
    { metric: 'each skipper: run watch after the skip, RCU', get: (x) => x.skipper.watch.rcu, fmt: units },
    {
      metric: `each skipper, all told: write-equivalents (WCU + ${RCU_AS_WRITES}·RCU)`,
      get: (x) => round3(x.skipperTotal.wcu + RCU_AS_WRITES * x.skipperTotal.rcu),
      fmt: units,
    },
    { metric: `per fire, ${r.instances} instances: WCU`, get: (x) => x.perFire.wcu, fmt: units },
    { metric: `per fire, ${r.instances} instances: RCU`, get: (x) => x.perFire.rcu, fmt: units },
    { metric: `per fire, ${r.instances} instances: write-equivalents`, get: (x) => x.perFire.writeEq, fmt: units },
    {
      metric: `idle: requests per instance over ${num(r.cost.idleMs / 1000)} s without a run (max)`,
      get: (x) => x.idle.maxRequestsPerInstance,
      fmt: num,
      target: exactly(0, 0),
      ratio: false,
    },
    { metric: `crash: last write → next fire claimed, p50 (${c.trials} trial(s))`, get: (x) => x.crash.fromLastWriteMs.p50, fmt: secs },
    { metric: '… max', get: (x) => x.crash.fromLastWriteMs.max, fmt: secs },
    { metric: '… in periods (max)', get: (x) => x.crash.fromLastWritePeriods, fmt: num },
    {
      metric: 'crash: fires after the crashed one that no instance ran (max)',
      get: (x) => x.crash.firesLost,
      fmt: num,
      target: exactly(0, 0),
    },
    {
      metric: 'crash: dead run passed by a watcher, after its last write (max)',
      get: (x) => x.crash.passedAfterMs.max,
      fmt: secs,
      ratio: false,
    },
    { metric: 'fires run twice (crash trials)', get: (x) => x.crash.doubleRuns, fmt: num, target: exactly(0, 0), ratio: false },
    {
      metric: 'errors: attempts DynamoDB did not answer in time, failed requests',
      get: (x) => x.unavailable.length + x.crash.unavailable.length + x.errors,
      fmt: num,
      ratio: false,
    },
  ];
  const t = table('scheduledFires', rows, r, ['ours', 'today'], labels);
  const w = r.watched;
  const watchRows = [
    {
      metric: 'reads per lease per watching instance, while the run holds the key',
      get: (x) => x.readsPerLeasePerWatcher,
      fmt: num,
      target: exactly(2, 0.35),
    },
    { metric: 'RCU per lease per watching instance', get: (x) => x.rcuPerLeasePerWatcher, fmt: num },
    { metric: "interval between a watcher's reads, p50", get: (x) => x.readGapMs.p50, fmt: ms },
    { metric: '… max', get: (x) => x.readGapMs.max, fmt: ms },
    { metric: 'reads per watcher after the run ended (the one that finds it over)', get: (x) => x.closingReadsPerWatcher, fmt: num },
    { metric: 'watcher writes', get: (x) => x.watcherWritesAfterSkip, fmt: num, target: exactly(0, 0) },
    { metric: 'holder heartbeats per lease', get: (x) => x.holderHeartbeatsPerLease, fmt: num },
  ];
  const tw = table('scheduledFires.watch', watchRows, { ours: w }, ['ours'], { ours: labels.ours });
  const cap = (x) =>
    `${x.capacity.table.source.writes} writes, ${x.capacity.table.source.reads} reads, failed conditional writes: ${x.capacity.table.source.failedWrites}; the clients' sums ${x.capacity.agree ? 'equal' : '**differ from**'} the proxy's meter (${num(x.capacity.clients.wcu)} / ${num(x.capacity.clients.rcu)} against ${num(x.capacity.table.wcu)} / ${num(x.capacity.table.rcu)} WCU / RCU)`;
  const note = `${r.instances} instances (separate managers, each its own client) fire a job at the same scheduled times, ${r.ours.fires} fires ${num(r.cost.periodMs / 1000, 2)} s apart, lease ${num(r.cost.leaseMs / 1000)} s; the instance that gets the lock runs the job for ${r.cost.jobMs} ms (today's way: holds it ${r.today.holdMs} ms, \`holdAtLeast\`), then releases. Fire claims: \`tryAcquire(key, { fireTime })\`; today: \`tryAcquire(key)\`. Figures per fire: for the runner per run, for a skipper per skipped attempt; capacity units as billed, per request (fire claims: ${cap(r.ours)}; today: ${cap(r.today)}). A skipper's run watch is what it reads after its attempt while (and until it finds that) the run holds the key: one strongly consistent read at once, then one every half lease. Crash: one instance (its own process) claims a fire and runs it with heartbeats (lease ${num(c.leaseMs / 1000)} s); half a heartbeat interval after a heartbeat past ${num(c.crashAfterLeases)} leases it is SIGKILLed; fires come every ${c.periodLeases} leases (${num(c.periodMs / 1000)} s); from its last write to the next fire another instance claims. Ratios: today's figure over the fire claims'.`;
  const watchNote = `Run watch: a run holds the key for ${w.leases} leases of ${num(w.leaseMs / 1000)} s (heartbeats every third); the ${w.watchers} other instances skipped its fire; their reads are counted from their skip until the release.`;
  return {
    markdown: `### 10. Scheduled fires (\`fireTime\`)\n\n${note}\n\n${t.text}\n\n${watchNote}\n\n${tw.text}\n`,
    checks: [...t.checks, ...tw.checks],
  };
}

/** Write-equivalents of a read unit at on-demand prices (a strongly consistent read of a small item: 0.2). */
const RCU_AS_WRITES = 0.2;

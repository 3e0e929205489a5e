// @ts-check
/**
 * The printed report of chaos runs: one column per server. Rows marked ✗ are violations and
 * must be 0.
 */
import { KNOWN_DEFECTS, VIOLATIONS } from '../checks.mjs';

const FAULT_LABELS = {
  latency: 'added latency',
  delayed: 'response delayed past the lease',
  dropped: 'response dropped after apply',
  reset: 'connection reset',
  provisionedThroughput: 'ProvisionedThroughputExceeded',
  throttling: 'ThrottlingException',
  http500: 'HTTP 500',
  http503: 'HTTP 503',
};

const SELF_DEADLOCKS = ['selfDeadlocks', 'ownLockWaits', 'ownExpiredLockWaits'];
const MAIN_VIOLATIONS = [
  'overlapsBetweenValidHolders',
  'falseSuccesses',
  ...SELF_DEADLOCKS,
  'outOfOrderWrites',
  'duplicateTokens',
  'staleDataWrites',
  'dataWriteMismatches',
  'livenessExceeded',
];

/** A violation count, marked when it is a known defect (not failing the run). */
function withKnown(r, name) {
  const count = r.violations[name] ?? 0;
  return !r.strict && name in KNOWN_DEFECTS ? `${count} (known defect)` : String(count);
}

const ms = (value) => (value === undefined || value === null || !Number.isFinite(value) ? '—' : `${Math.round(value)} ms`);
const s = (value) => `${(value / 1000).toFixed(0)} s`;

/** Rows: [label, (report) => string]. */
function rows(reports) {
  const kinds = Object.keys(reports[0]?.counts.faults ?? FAULT_LABELS);
  const other = (r) =>
    Object.entries(r.violations)
      .filter(([name]) => !MAIN_VIOLATIONS.includes(name) && (r.strict || !(name in KNOWN_DEFECTS)))
      .reduce((sum, [, n]) => sum + n, 0);
  return [
    ['faults on for', (r) => s(r.timings.chaosMs)],
    ['workers × tasks, keys, lease', (r) => `${r.options.workers} × ${r.options.tasks}, ${r.options.keys}, ${r.options.leaseMs} ms`],
    ['operations attempted (acquire calls)', (r) => r.counts.acquireAttempts],
    [
      '  protected writes (of them unchecked)',
      (r) => `${r.counts.protectedWrites.attempted} (${r.counts.protectedWrites.uncheckedAttempted})`,
    ],
    ['  DynamoDB requests through the proxy', (r) => r.counts.dynamoRequests],
    ['acquisitions', (r) => r.counts.acquisitions],
    ['  gave up: busy / transient error', (r) => `${r.counts.outcomes.busy ?? 0} / ${r.counts.outcomes.transient ?? 0}`],
    ['faults injected', (r) => r.counts.faultsTotal],
    ...kinds.map((kind) => [`  ${FAULT_LABELS[kind] ?? kind}`, (r) => r.counts.faults[kind]]),
    ['kills (SIGKILL), respawns', (r) => `${r.counts.kills}, ${r.counts.respawns}`],
    ['pauses (SIGSTOP > lease), of holders', (r) => `${r.counts.pauses}, ${r.counts.pausesOfHolders}`],
    ['  signal aborted at 1st check after', (r) => `${r.counts.pauseChecksAborted} of ${r.counts.pauseChecks}`],
    [
      'locks lost: expired / taken / gone',
      (r) => `${r.counts.locksLost.expired ?? 0} / ${r.counts.locksLost.taken ?? 0} / ${r.counts.locksLost.gone ?? 0}`,
    ],
    [
      'overlaps (resource + marker views)',
      (r) => `${r.counts.overlaps.total} (${r.counts.overlaps.byVia.resource} + ${r.counts.overlaps.byVia.marker})`,
    ],
    ['  ✗ between valid holders', (r) => r.counts.overlaps.byClass.valid + r.counts.overlaps.byClass.unresolved],
    ['  holder paused past its lease', (r) => r.counts.overlaps.byClass.pause],
    ['  entrant decided before its pause', (r) => r.counts.overlaps.byClass['stale-entrant']],
    ['  holder lease out, abort pending', (r) => r.counts.overlaps.byClass['late-abort']],
    ['  holder killed', (r) => r.counts.overlaps.byClass.crash],
    ['fencing rejections', (r) => r.counts.fencingRejections],
    ['  unchecked / decided before a pause', (r) => `${r.counts.fencingRejectionsUnchecked} / ${r.counts.fencingRejectionsAfterPause}`],
    [
      '  stale writes after liveness pause',
      (r) => `${r.counts.liveness?.staleWritesRejected ?? 0} of ${r.counts.liveness?.staleWritesExpected ?? 0} rejected`,
    ],
    [
      'data writes through the fence (transact)',
      (r) =>
        `${r.counts.dataWrites.attempted} (${r.counts.dataWrites.transactions ? r.counts.dataWrites.byVia.transact : 'not supported'})`,
    ],
    [
      '  landed / conflict / failed / died',
      (r) =>
        `${r.counts.dataWrites.landed} / ${r.counts.dataWrites.outcomes.conflict ?? 0} / ${r.counts.dataWrites.outcomes.failed ?? 0} / ${r.counts.dataWrites.outcomes.died ?? 0}`,
    ],
    [
      '  refused: fenced / lock lost (after a pause)',
      (r) => `${r.counts.dataWrites.fenced} / ${r.counts.dataWrites.lost} (${r.counts.dataWrites.refusedAfterPause})`,
    ],
    ['  paused between the check and the send', (r) => r.counts.dataWrites.stalls],
    ['  refused by the server (seen by the proxy)', (r) => r.counts.dataWrites.items?.refusedAtServer ?? 0],
    ['✗ stale data writes landed', (r) => r.violations.staleDataWrites],
    ['✗ data writes the item contradicts', (r) => r.violations.dataWriteMismatches],
    ['✗ writes accepted out of token order', (r) => r.violations.outOfOrderWrites + r.violations.duplicateTokens],
    ['✗ false successes', (r) => r.violations.falseSuccesses],
    ['  server checks at enter (inconclusive)', (r) => `${r.counts.groundTruthChecks} (${r.counts.groundTruthInconclusive})`],
    [
      '✗ self-deadlocks',
      (r) => SELF_DEADLOCKS.reduce((sum, name) => sum + (r.strict || !(name in KNOWN_DEFECTS) ? (r.violations[name] ?? 0) : 0), 0),
    ],
    ['  not recognising its own lock', (r) => withKnown(r, 'selfDeadlocks')],
    ['  waiting on own orphaned lock', (r) => withKnown(r, 'ownLockWaits')],
    ['  waiting on own lease run out locally', (r) => withKnown(r, 'ownExpiredLockWaits')],
    [
      '  waiters promoted after leaving: gave up / killed',
      (r) => `${r.counts.orphanPromotions?.gaveUp ?? 0} / ${r.counts.orphanPromotions?.died ?? 0}`,
    ],
    ['  lost write responses: acquisitions', (r) => r.counts.lostWriteResponses.attempts],
    [
      '    recognised / gave up / died',
      (r) => `${r.counts.lostWriteResponses.recognised} / ${r.counts.lostWriteResponses.gaveUp} / ${r.counts.lostWriteResponses.died}`,
    ],
    ['  told it holds → acquired (max delay)', (r) => ms(r.counts.maxRecognitionMs)],
    ['  gave up holding: cleaned / left', (r) => `${r.counts.gaveUpCleaned} / ${r.counts.gaveUpOrphaned}`],
    [
      '✗ max time a free key stayed',
      (r) => (r.violations.livenessExceeded ? `${ms(r.counts.liveness?.maxMs)} ✗` : ms(r.counts.liveness?.maxMs)),
    ],
    ['  unacquirable after faults (bound)', (r) => `(≤ ${ms(r.counts.liveness?.boundMs)})`],
    ['  longest vacant-key wait under chaos', (r) => ms(r.counts.longestVacantWaitMs)],
    [
      'clock skew: acquisitions by group',
      (r) =>
        Object.entries(r.counts.skew)
          .map(([g, v]) => `${g}: ${v.acquisitions}`)
          .join(', '),
    ],
    ['✗ other violations', (r) => other(r)],
    ['run time', (r) => s(r.timings.totalMs)],
    ['verdict', (r) => (r.ok ? 'PASS' : `FAIL (${r.violationsTotal})`)],
  ];
}

export function formatTable(reports) {
  const table = rows(reports).map(([label, cell]) => [label, ...reports.map((r) => String(/** @type {(r: any) => unknown} */ (cell)(r)))]);
  const header = ['', ...reports.map((r) => r.server)];
  const widths = header.map((_, i) => Math.max(...[header, ...table].map((row) => [...row[i]].length)));
  const line = (row) => row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('  ');
  const rule = widths.map((w) => '─'.repeat(w)).join('  ');
  return [line(header), rule, ...table.map(line), rule].join('\n');
}

/** The violations that occurred, with up to five examples each. */
export function formatViolations(reports) {
  const out = [];
  for (const r of reports) {
    for (const [name, count] of Object.entries(r.violations)) {
      if (count === 0) continue;
      const known = !r.strict && name in KNOWN_DEFECTS;
      out.push(
        `${known ? '! known defect' : '✗'} [${r.server}] ${VIOLATIONS[name] ?? name}: ${count}${known ? ` (reproduced in ${KNOWN_DEFECTS[name]})` : ''}`,
      );
      for (const example of r.examples[name] ?? []) out.push(`    ${JSON.stringify(example)}`);
    }
  }
  return out.join('\n');
}

/** Observations that are not violations. */
export function formatNotes(reports) {
  const out = [];
  for (const r of reports) {
    for (const [name, note] of Object.entries(r.notes ?? {})) {
      out.push(`· [${r.server}] ${name}: ${note.count}`);
      for (const example of note.examples.slice(0, 2)) out.push(`    ${JSON.stringify(example)}`);
    }
  }
  return out.join('\n');
}

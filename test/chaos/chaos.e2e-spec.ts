/**
 * The chaos suite's short version, once per server under test: the same code as `npm run chaos`
 * (`chaos/run.mjs --short`), pointed at the server the Jest global setup started.
 *
 * Several worker processes run the built library (`dist/`) through a fault proxy (latency,
 * responses delayed past the lease or dropped after the server applied the write, connection
 * resets, throttling, HTTP 500/503), while the harness SIGKILLs and SIGSTOPs them, two of them
 * with their wall clock ±10 minutes off. The run reports violations (each a check that can fail);
 * this spec asserts there are none (known engine defects aside: `KNOWN_DEFECTS` in
 * `chaos/scenario.mjs`, each reproduced by its own spec), and that the faults really happened — every kind of fault was
 * injected, processes were killed and paused while holding locks — so a harness that silently
 * stopped injecting faults fails here too.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from '@jest/globals';
import { describeEachServer, type TestServer } from '../support/servers';

/** Every kind of fault the proxy must have injected. */
const FAULT_KINDS = ['latency', 'delayed', 'dropped', 'reset', 'provisionedThroughput', 'throttling', 'http500', 'http503'] as const;

/** The parts of a run's JSON report this spec reads (see `chaos/scenario.mjs`). */
interface ChaosReport {
  server: string;
  ok: boolean;
  options: { leaseMs: number };
  timings: { totalMs: number };
  counts: {
    acquireAttempts: number;
    acquisitions: number;
    kills: number;
    pauses: number;
    pausesOfHolders: number;
    pauseChecks: number;
    pauseChecksAborted: number;
    faults: Record<string, number>;
    protectedWrites: { attempted: number; accepted: number };
    dataWrites: {
      attempted: number;
      landed: number;
      refused: number;
      refusedAfterPause: number;
      transactions: boolean;
      byVia: { transact: number };
    };
    groundTruthChecks: number;
    lostWriteResponses: { total: number };
    liveness?: { maxMs: number; boundMs: number; staleWritesRejected: number; staleWritesExpected: number };
    skew: Record<string, { slots: number; acquisitions: number }>;
  };
  violations: Record<string, number>;
  /** Violations of known engine defects (each reproduced by its own spec); not failures here. */
  knownDefects: Record<string, number>;
  examples: Record<string, unknown[]>;
}

const tables: string[] = [];

function repoRoot(): string {
  const testPath = expect.getState().testPath;
  if (!testPath) throw new Error('expect.getState().testPath is not set');
  return path.resolve(path.dirname(testPath), '..', '..');
}

function runChaos(root: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(root, 'chaos', 'run.mjs'), ...args], {
      cwd: root,
      env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-20_000)));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Shorter and lighter on dynalite (an in-process JavaScript server shared with Jest). */
function argsFor(server: TestServer): string[] {
  const args = ['--short', '--endpoint', server.endpoint, '--server-name', server.name, '--quiet'];
  if (server.name === 'dynalite') args.push('--duration', '25s', '--workers', '4');
  return args;
}

describeEachServer('chaos suite (short)', { shortRunOn: 'dynamodb-local' }, (server) => {
  it('no violation under kills, pauses, lost and delayed responses, throttling, 5xx and clock skew; every fault really injected', async () => {
    const root = repoRoot();
    const dir = mkdtempSync(path.join(tmpdir(), 'chaos-spec-'));
    const json = path.join(dir, 'report.json');
    let report: ChaosReport;
    try {
      const { code, stdout, stderr } = await runChaos(root, [...argsFor(server), '--json', json]);
      if (code === 2) throw new Error(`chaos harness failed (exit 2):\n${stderr}\n${stdout}`);
      tables.push(stdout.trim());
      [report] = JSON.parse(readFileSync(json, 'utf8')) as ChaosReport[];
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }

    // Every violation count is zero (with the examples the run recorded, if not) — but for known
    // engine defects, which `chaos/scenario.mjs` lists with the spec that reproduces each.
    const violated = Object.fromEntries(
      Object.entries(report.violations)
        .filter(([name, count]) => count > 0 && !(name in (report.knownDefects ?? {})))
        .map(([name, count]) => [name, { count, examples: report.examples[name] }]),
    );
    expect(violated).toEqual({});
    expect(report.ok).toBe(true);

    // The faults really happened: each kind injected, processes killed and paused in their sections.
    const missing = FAULT_KINDS.filter((kind) => !(report.counts.faults[kind] > 0));
    expect(missing).toEqual([]);
    expect(report.counts.kills).toBeGreaterThan(0);
    expect(report.counts.pausesOfHolders).toBeGreaterThan(0);
    expect(report.counts.pauseChecks).toBeGreaterThan(0);
    expect(report.counts.pauseChecksAborted).toBe(report.counts.pauseChecks);
    expect(report.counts.lostWriteResponses.total).toBeGreaterThan(0);
    // ...and the locks were used under them, by skewed workers too.
    expect(report.counts.acquisitions).toBeGreaterThan(20);
    expect(report.counts.protectedWrites.accepted).toBeGreaterThan(report.counts.acquisitions);
    expect(report.counts.groundTruthChecks).toBeGreaterThan(20);
    for (const group of ['+10 min', '-10 min', 'none']) expect(report.counts.skew[group]?.acquisitions ?? 0).toBeGreaterThan(0);
    // Liveness: after the faults stopped, every key was taken within one lease (+ poll).
    expect(report.counts.liveness?.maxMs).toBeLessThanOrEqual(report.counts.liveness?.boundMs ?? 0);
    expect(report.counts.liveness?.maxMs).toBeGreaterThanOrEqual(report.options.leaseMs - 50);
    // Fencing works end to end: the holder frozen past its lease wrote once more after resuming,
    // with its old token, and the resource rejected it.
    expect(report.counts.liveness?.staleWritesExpected).toBeGreaterThan(0);
    expect(report.counts.liveness?.staleWritesRejected).toBe(report.counts.liveness?.staleWritesExpected);
    // Every worker wrote its key's data item through the library's fence (and, with transactions,
    // some with lock.transact()); no stale write landed (a violation above), and holders paused past
    // their lease had their writes refused.
    expect(report.counts.dataWrites.landed).toBeGreaterThan(report.counts.acquisitions);
    expect(report.counts.dataWrites.refused).toBeGreaterThan(0);
    expect(report.counts.dataWrites.refusedAfterPause).toBeGreaterThan(0);
    if (report.counts.dataWrites.transactions) expect(report.counts.dataWrites.byVia.transact).toBeGreaterThan(0);
  }, 180_000);
});

afterAll(() => {
  if (tables.length > 0) process.stdout.write(`\n${tables.join('\n\n')}\n`);
});

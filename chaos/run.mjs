#!/usr/bin/env node
// @ts-check
/**
 * `npm run chaos [-- options]`: the chaos suite. Runs the built library (`dist/`) in several OS
 * processes through a fault proxy against real servers, prints a table of what happened, and
 * exits non-zero on any violation.
 *
 * Options:
 *   --short                 the CI version (30 s of faults per server)
 *   --duration <d>          how long faults are injected per server: 90s, 5m, 300000 (default 90 s)
 *   --server <names>        dynalite, dynamodb-local or all (default all), started here
 *   --endpoint <url>        use this server instead of starting one (with --server-name for the table)
 *   --workers <n>           worker processes (default 6, short 5)
 *   --keys <n>              lock keys (default 3)
 *   --lease <ms>            lease duration (default 2000)
 *   --seed <n>              seed for faults and for who is killed or paused
 *   --json <file>           also write the reports as JSON
 *   --quiet                 no progress lines
 *   --strict                known engine defects (KNOWN_DEFECTS in checks.mjs) fail the run too
 *
 * Exit codes: 0 no violation, 1 violations, 2 the harness failed.
 */
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startLocalServer } from '../tools/dynamodb-servers.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

function parseDurationArg(text) {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|min)?$/.exec(String(text).trim());
  if (!match) throw new Error(`--duration: cannot read ${text} (try 90s, 5m or 300000)`);
  const unit = { ms: 1, s: 1_000, m: 60_000, min: 60_000 }[match[2] ?? 'ms'];
  return Math.round(Number(match[1]) * unit);
}

function int(name, text) {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} must be a positive integer, got ${text}`);
  return value;
}

/** The workers run `dist/`: refuse a build older than the engine's sources. */
function assertFreshBuild() {
  const stale = [];
  const visit = (file) => {
    if (statSync(file).isDirectory()) return readdirSync(file).forEach((entry) => visit(path.join(file, entry)));
    if (!file.endsWith('.ts') || file.endsWith('.d.ts') || file.endsWith('.spec.ts')) return;
    const built = path.join(ROOT, 'dist', path.relative(path.join(ROOT, 'lib'), file)).replace(/\.ts$/, '.js');
    if (!existsSync(built) || statSync(built).mtimeMs < statSync(file).mtimeMs) stale.push(path.relative(ROOT, file));
  };
  for (const entry of ['index.ts', 'core', 'store', 'utils', 'errors']) visit(path.join(ROOT, 'lib', entry));
  if (stale.length > 0)
    throw new Error(`dist/ is older than ${stale.slice(0, 4).join(', ')}: run \`npx tsc -p tsconfig.build.json\` first`);
}

async function main() {
  const { values } = parseArgs({
    options: {
      short: { type: 'boolean', default: false },
      duration: { type: 'string' },
      server: { type: 'string', default: 'all' },
      endpoint: { type: 'string' },
      'server-name': { type: 'string' },
      workers: { type: 'string' },
      keys: { type: 'string' },
      lease: { type: 'string' },
      seed: { type: 'string' },
      json: { type: 'string' },
      quiet: { type: 'boolean', default: false },
      strict: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    const text = (await import('node:fs')).readFileSync(new URL(import.meta.url), 'utf8');
    console.log(/** @type {RegExpExecArray} */ (/\/\*\*([\s\S]*?)\*\//.exec(text))[1].replace(/^ \* ?/gm, '').trim());
    return 0;
  }
  assertFreshBuild();
  // Imported after the check: importing dist/ must not fail before it can say why.
  const { runChaos } = await import('./scenario.mjs');
  const { formatNotes, formatTable, formatViolations } = await import('./support/table.mjs');

  /** @type {Omit<import('./scenario.mjs').ChaosInput, 'endpoint'>} */
  const options = {
    preset: values.short ? 'short' : 'default',
    durationMs: values.duration === undefined ? undefined : parseDurationArg(values.duration),
    workers: int('workers', values.workers),
    keys: int('keys', values.keys),
    leaseMs: int('lease', values.lease),
    seed: values.seed === undefined ? undefined : Number(values.seed),
    strict: values.strict,
    log: values.quiet ? undefined : (line) => void process.stderr.write(`${line}\n`),
  };
  /** @type {{ name: string, endpoint?: string }[]} */
  const targets = values.endpoint
    ? [{ name: values['server-name'] ?? 'external', endpoint: values.endpoint }]
    : (values.server === 'all' ? ['dynamodb-local', 'dynalite'] : values.server.split(',')).map((name) => ({ name }));

  const reports = [];
  const started = performance.now();
  for (const target of targets) {
    let server;
    try {
      if (!target.endpoint) {
        options.log?.(`[chaos] starting ${target.name}`);
        // Each server in a process of its own, so the harness's event loop measures the lock, not the server.
        server = await startLocalServer(target.name, { childProcess: true, startupTimeoutMs: 60_000 });
      }
      const endpoint = target.endpoint ?? /** @type {{ endpoint: string }} */ (server).endpoint;
      const report = await runChaos({ ...options, endpoint, serverName: target.name });
      reports.push(report);
      options.log?.(
        `[chaos] ${target.name}: ${report.ok ? 'no violations' : `${report.violationsTotal} violations`} (${Math.round(report.timings.totalMs / 1000)} s)`,
      );
    } finally {
      await server?.stop();
    }
  }
  const total = Math.round((performance.now() - started) / 1000);
  console.log(`\nchaos suite (${values.short ? 'short' : 'default'}), ${total} s in all, seeds ${reports.map((r) => r.seed).join(', ')}\n`);
  console.log(formatTable(reports));
  const notes = formatNotes(reports);
  if (notes) console.log(`\nnotes (not violations):\n${notes}`);
  const failures = formatViolations(reports);
  if (failures) console.log(`\n${failures}`);
  if (values.json) writeFileSync(values.json, JSON.stringify(reports, null, 2));
  return reports.every((r) => r.ok) ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error) => {
    console.error(`chaos: ${error?.stack ?? error}`);
    process.exit(2);
  },
);

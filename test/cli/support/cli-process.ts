/**
 * Runs the built `dynamo-lock` CLI (`dist/cli/main.js`) as a child process, as a user's shell
 * would, and collects what it prints.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { expect } from '@jest/globals';
import { killOnExit } from '../../../tools/exit-guard.mjs';
import type { TestServer } from '../../support/servers';

/** How a CLI run ended, and what it printed. */
export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** Wall time of the run in milliseconds. */
  ms: number;
}

/** A CLI process still running. */
export interface RunningCli {
  readonly process: ChildProcess;
  readonly result: Promise<CliResult>;
}

/** The repository root (this file is `test/cli/support/...`). */
export function repoRoot(): string {
  const testPath = expect.getState().testPath;
  if (!testPath) throw new Error('expect.getState().testPath is not set');
  return path.resolve(path.dirname(testPath), '..', '..');
}

/** Path of the built CLI; fails with instructions when it is missing or older than its sources. */
export function builtCli(): string {
  const root = repoRoot();
  const main = path.join(root, 'dist', 'cli', 'main.js');
  const build = 'build it first: npx tsc -p tsconfig.build.json';
  if (!existsSync(main)) throw new Error(`${main} does not exist; ${build}`);
  const builtAt = statSync(main).mtimeMs;
  const stale = sources(path.join(root, 'lib', 'cli')).filter((file) => statSync(file).mtimeMs > builtAt);
  if (stale.length > 0) throw new Error(`${main} is older than ${path.relative(root, stale[0])}; ${build}`);
  return main;
}

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sources(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

/**
 * What a run against an external server keeps of the environment: the credentials and region the
 * README's command-line section tells users to set (`AWS_REGION`, `AWS_ACCESS_KEY_ID`,
 * `AWS_SECRET_ACCESS_KEY`, `AWS_PROFILE`), with the session token of temporary credentials and the
 * files a profile is read from.
 */
const EXTERNAL_SERVER_SETTINGS = [
  'AWS_REGION',
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
  'AWS_PROFILE',
  'AWS_CONFIG_FILE',
  'AWS_SHARED_CREDENTIALS_FILE',
] as const;

/** Runs the CLI, against one server if given: `--endpoint` and dummy credentials are added. */
export class Cli {
  private readonly main = builtCli();

  constructor(
    /** The server to talk to; none for help, version and usage errors. */
    private readonly server?: TestServer,
    /** Arguments added after the command's own: `--table`, for example. */
    private readonly extraArgs: readonly string[] = [],
  ) {}

  /**
   * The environment of a CLI run: AWS settings for the test server, nothing inherited that could
   * interfere. Every `AWS_*`, `DYNAMO_LOCK_*` and `DYNAMODB_*` variable goes: each run names its
   * endpoint (`--endpoint`) and table, and a user's key prefix, owner, endpoint or retry settings
   * would change what a test reads back or how long it takes. A local server gets dummy
   * credentials and region (it was started with `-sharedDb`, so any work). An external server
   * keeps the credentials and region the README tells users to set ({@link EXTERNAL_SERVER_SETTINGS}):
   * it may need real ones, and DynamoDB Local started without `-sharedDb` keeps one database per
   * access key and region, so the CLI must sign as the test's own clients do to see their tables.
   */
  env(): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const name of Object.keys(env)) {
      if (/^(AWS_|DYNAMO_LOCK_|DYNAMODB_)/.test(name)) delete env[name];
    }
    if (!this.server) return env;
    if (this.server.name === 'external') {
      for (const name of EXTERNAL_SERVER_SETTINGS) if (process.env[name] !== undefined) env[name] = process.env[name];
      return { ...env, AWS_REGION: process.env.AWS_REGION ?? 'us-east-1' };
    }
    return { ...env, AWS_REGION: 'us-east-1', AWS_ACCESS_KEY_ID: 'x', AWS_SECRET_ACCESS_KEY: 'x' };
  }

  /** Starts `dynamo-lock ARGS --endpoint ... EXTRA` (EXTRA before a `--`, if any). */
  start(args: readonly string[], options: { env?: NodeJS.ProcessEnv } = {}): RunningCli {
    const split = args.indexOf('--');
    const own = split < 0 ? args : args.slice(0, split);
    const rest = split < 0 ? [] : args.slice(split);
    const endpoint = this.server ? ['--endpoint', this.server.endpoint] : [];
    const argv = [this.main, ...own, ...endpoint, ...this.extraArgs, ...rest];
    const started = performance.now();
    const child = spawn(process.execPath, argv, { env: { ...this.env(), ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    const forget = killOnExit(() => child.kill('SIGKILL'));
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const result = new Promise<CliResult>((resolve, reject) => {
      child.once('error', reject);
      child.once('close', (code, signal) => {
        forget();
        resolve({ code, signal, stdout, stderr, ms: performance.now() - started });
      });
    });
    return { process: child, result };
  }

  /** Runs `dynamo-lock ARGS` to the end. */
  run(args: readonly string[], options?: { env?: NodeJS.ProcessEnv }): Promise<CliResult> {
    return this.start(args, options).result;
  }
}

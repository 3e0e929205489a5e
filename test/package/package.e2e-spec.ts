/**
 * The package as users get it: `npm pack` of this repository's sources as a fresh clone has them
 * (no `dist/`: the `prepack` script builds it), the tarball's contents, and the tarball installed
 * into fresh scratch apps in a temporary directory and run there:
 *
 * - a NestJS 12 app that is an ES module (`"type": "module"`),
 * - a NestJS 11 app in CommonJS,
 * - the `dynamo-lock` command in a directory with no Nest at all (only the tarball and the
 *   AWS SDK), since the CLI must not need Nest,
 * - a TypeScript consumer (`.mts` and `.cts`) type-checked against the installed declarations,
 * - a TypeScript 5 consumer with the legacy CommonJS tsconfig of many Nest 10/11 apps
 *   (`"module": "commonjs"`, node10 resolution, which ignores `exports`: the subpaths resolve
 *   through `typesVersions`).
 *
 * The apps talk to a real server of the run (dynalite when it runs). Installs use the exact
 * versions of this repository's node_modules (Nest 11: {@link NEST_11}) with `--prefer-offline`,
 * so they come from the npm cache once it has them. The pack runs in a copy of the sources
 * (`lib/`, package.json, the tsconfigs, README, LICENSE; node_modules linked) without `dist/`,
 * so it neither needs nor touches this repository's `dist/`. `DYNAMO_LOCK_KEEP_PACK_DIR=1`
 * keeps the scratch directory and prints its path.
 */
import { execFile } from 'node:child_process';
import { builtinModules } from 'node:module';
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createTestClient, deleteTable, type TestServer, testServers, uniqueTableName } from '../support/servers';

/** The NestJS 11 release the CommonJS app installs (the previous major; exact, for the npm cache). */
const NEST_11 = '11.2.10';
/** The @nestjs/event-emitter release for NestJS 11 (CommonJS). */
const EVENT_EMITTER_FOR_NEST_11 = '3.1.0';
/** The @nestjs/terminus release for NestJS 11 (its types are checked with the /health entry point). */
const TERMINUS_FOR_NEST_11 = '11.1.1';
/** The TypeScript 5 release the CommonJS app type-checks with (the last 5.x; many Nest 10/11 apps are on 5). */
const TYPESCRIPT_5 = '5.9.3';
/** What `npm pack` needs of the repository, copied to a scratch directory without `dist/`. */
const PACK_SOURCES = ['package.json', 'tsconfig.json', 'tsconfig.build.json', 'README.md', 'LICENSE', 'lib'];
/** Peer dependencies the Nest 12 app installs, at the versions in this repository's node_modules. */
const NEST_12_APP_DEPS = [
  '@nestjs/common',
  '@nestjs/core',
  '@nestjs/event-emitter',
  'reflect-metadata',
  'rxjs',
  '@aws-sdk/client-dynamodb',
];
/** What the tarball may contain, besides nothing. */
const ALLOWED_ENTRY = /^package\/(dist\/.+|README\.md|LICENSE|package\.json)$/;
const NPM_INSTALL = ['install', '--no-audit', '--no-fund', '--prefer-offline', '--strict-peer-deps'];

interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

interface TarEntry {
  /** Tar type flag: '0' for a regular file. */
  type: string;
  body: Buffer;
}

interface PackedManifest {
  name: string;
  version: string;
  main?: string;
  types?: string;
  exports?: unknown;
  typesVersions?: Record<string, Record<string, string[]>>;
  bin?: Record<string, string>;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

/** What a scratch Nest app prints (see test/package/fixtures). */
interface AppReport {
  format: string;
  library: string;
  version: string;
  deepImport: string | null;
  nestCore: string;
  nestCommon: string;
  requireModule?: boolean | null;
  oneNest?: boolean;
  nestDirs?: string[];
  /** Names of the lock events the app's EventEmitter2 saw. */
  events: string[];
  /** Names of the spans that ended (the CommonJS app registers a tracer provider). */
  spans?: string[];
  decorated: { key: string; fencingToken: number; seenToken: number | null };
  service: { fencingToken: number; heldToken: number | null; busyWhileHeld: boolean; afterRelease: unknown; againToken: number };
}

/** The repository root (this file is `test/package/...`). */
function repoRoot(): string {
  const testPath = expect.getState().testPath;
  if (!testPath) throw new Error('expect.getState().testPath is not set');
  return path.resolve(path.dirname(testPath), '..', '..');
}

/**
 * The environment of a child process: this one's, without what `npm run` adds for its own
 * scripts (npm_config_call, npm_package_*, ... would steer a nested npm), and without AWS and
 * lock settings unless `server` says otherwise.
 */
function childEnv(server?: TestServer, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const keepNpm = /^npm_config_(cache|userconfig|globalconfig|cafile|registry|proxy|https_proxy|noproxy|strict_ssl)$/i;
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (/^npm_/i.test(name) && !keepNpm.test(name)) continue;
    if (/^(DYNAMO_LOCK_|DYNAMODB_)/.test(name)) continue;
    if (/^AWS_/.test(name) && server?.name !== 'external') continue;
    env[name] = value;
  }
  env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  if (server && server.name !== 'external') {
    Object.assign(env, { AWS_REGION: 'us-east-1', AWS_ACCESS_KEY_ID: 'local', AWS_SECRET_ACCESS_KEY: 'local' });
  } else if (server) {
    env.AWS_REGION ??= 'us-east-1';
  }
  return { ...env, ...extra };
}

/** Runs a command to its end; never rejects (the caller checks the result). */
function run(
  command: string,
  args: readonly string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number },
): Promise<RunResult> {
  const started = performance.now();
  return new Promise((resolve) => {
    execFile(
      command,
      args,
      { cwd: options.cwd, env: options.env, timeout: options.timeoutMs, killSignal: 'SIGKILL', maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : null) : 0;
        const killed = error && error.killed ? `\n[killed after ${options.timeoutMs} ms]` : '';
        resolve({ code, stdout: String(stdout), stderr: String(stderr) + killed, ms: performance.now() - started });
      },
    );
  });
}

/** Fails with the command, its exit and everything it printed, unless it exited 0. */
function expectSuccess(result: RunResult, what: string): void {
  if (result.code !== 0) {
    throw new Error(`${what} exited ${result.code}\n--- stdout\n${result.stdout}\n--- stderr\n${result.stderr}`);
  }
}

/** The entries of a .tgz: name → type and contents (ustar, with pax `path` records). */
function readTarball(file: string): Map<string, TarEntry> {
  const data = gunzipSync(readFileSync(file));
  const entries = new Map<string, TarEntry>();
  let offset = 0;
  let paxPath: string | undefined;
  while (offset + 512 <= data.length) {
    const header = data.subarray(offset, offset + 512);
    if (header.every((byte) => byte === 0)) break;
    const field = (start: number, length: number) =>
      header
        .subarray(start, start + length)
        .toString('utf8')
        .replace(/\0[\s\S]*$/, '');
    const size = Number.parseInt(field(124, 12).trim() || '0', 8);
    const type = field(156, 1) || '0';
    const prefix = field(345, 155);
    const name = paxPath ?? (prefix ? `${prefix}/${field(0, 100)}` : field(0, 100));
    const body = Buffer.from(data.subarray(offset + 512, offset + 512 + size));
    offset += 512 + Math.ceil(size / 512) * 512;
    paxPath = undefined;
    if (type === 'x') {
      paxPath = /(?:^|\n)\d+ path=([^\n]*)\n/.exec(body.toString('utf8'))?.[1];
      continue;
    }
    entries.set(name, { type, body });
  }
  return entries;
}

/** Every target string in an `exports` value (conditions and subpaths, recursively). */
function exportTargets(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(exportTargets);
  if (typeof value === 'object' && value !== null) return Object.values(value).flatMap(exportTargets);
  return [];
}

/** The specifiers a compiled CommonJS file loads: `require()` and (for optional peers) `import()`. */
function requiredSpecifiers(source: string): string[] {
  return [...source.matchAll(/\b(?:require|import)\((["'])([^"']+)\1\)/g)].map((match) => match[2]);
}

/** The npm package a bare specifier names (`@scope/name/sub` → `@scope/name`); null for relative and built-in ones. */
function packageOf(specifier: string): string | null {
  if (specifier.startsWith('.') || specifier.startsWith('node:') || builtinModules.includes(specifier.split('/')[0])) return null;
  return specifier
    .split('/')
    .slice(0, specifier.startsWith('@') ? 2 : 1)
    .join('/');
}

/** `lib/**\/*.ts` sources that compile to output (no specs, no declarations), relative to lib. */
function libSources(dir: string, base = dir): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return libSources(full, base);
    if (!entry.name.endsWith('.ts') || entry.name.endsWith('.d.ts') || entry.name.endsWith('.spec.ts')) return [];
    return [path.relative(base, full).split(path.sep).join('/')];
  });
}

/** The last line of stdout as JSON. */
function lastJsonLine<T>(result: RunResult): T {
  const line = result.stdout.trim().split('\n').at(-1) ?? '';
  try {
    return JSON.parse(line) as T;
  } catch {
    throw new Error(`expected a JSON line on stdout\n--- stdout\n${result.stdout}\n--- stderr\n${result.stderr}`);
  }
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** A type-checked consumer in an ES module: named imports, decorators, options and errors. */
const ESM_CONSUMER = `
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { DynamoLockModule, LockBusyError, LockService, WithLock, type DynamoLockOptions, type Lock } from 'nestjs-dynamo-lock';

const options: DynamoLockOptions = { tableName: 'locks', leaseDuration: '30s', createTable: true };

@Injectable()
export class Jobs {
  constructor(private readonly locks: LockService) {}

  @WithLock('job-<0>', { wait: '10s' })
  async run(id: string): Promise<string> {
    const lock: Lock | undefined = this.locks.current();
    return \`\${id}:\${lock?.fencingToken ?? 0}\`;
  }

  async direct(): Promise<boolean> {
    const lock = await this.locks.tryAcquire('cleanup');
    if (lock === null) return false;
    // @ts-expect-error a fencing token is a number
    const token: string = lock.fencingToken;
    void token;
    await lock.release();
    return true;
  }
}

@Module({ imports: [DynamoLockModule.forRoot(options)], providers: [Jobs] })
export class AppModule {}

// @ts-expect-error tableName is a string
DynamoLockModule.forRoot({ tableName: 42 });

export const isBusy = (error: unknown): boolean => error instanceof LockBusyError;
`;

/** A type-checked consumer in CommonJS: \`import = require\` and named imports. */
const CJS_CONSUMER = `
import lockPackage = require('nestjs-dynamo-lock');
import { parseDuration } from 'nestjs-dynamo-lock';

export const leaseMs: number = parseDuration('1m', 'leaseDuration');

export async function once(): Promise<number> {
  const manager = new lockPackage.LockManager({ tableName: 'locks' });
  const lock = await manager.acquire('k');
  await lock.release();
  await manager.close();
  return lock.fencingToken;
}

// @ts-expect-error tableName is a string
new lockPackage.LockManager({ tableName: 1 });
`;

/**
 * A TypeScript 5 consumer of the legacy Nest CommonJS tsconfig (node10 resolution): the root and
 * both subpath entry points, decorators, and a type error the declarations must catch.
 */
const NODE10_CONSUMER = `
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { DynamoLockModule, LockService, WithLock, type DynamoLockOptions } from 'nestjs-dynamo-lock';
import { DynamoLockHealthIndicator } from 'nestjs-dynamo-lock/health';
import { LockBusyError, LockManager } from 'nestjs-dynamo-lock/standalone';

const options: DynamoLockOptions = { tableName: 'locks', leaseDuration: '30s' };

@Injectable()
export class Jobs {
  constructor(private readonly locks: LockService) {}

  @WithLock('job-<0>')
  async run(id: string): Promise<string> {
    return \`\${id}:\${this.locks.current()?.fencingToken ?? 0}\`;
  }
}

@Module({ imports: [DynamoLockModule.forRoot(options)], providers: [Jobs, DynamoLockHealthIndicator] })
export class AppModule {}

export async function once(): Promise<number | null> {
  const manager = new LockManager({ tableName: 'locks' });
  try {
    const lock = await manager.acquire('k', { wait: false });
    // @ts-expect-error a fencing token is a number
    const token: string = lock.fencingToken;
    void token;
    await lock.release();
    return lock.fencingToken;
  } catch (error) {
    if (error instanceof LockBusyError) return null;
    throw error;
  } finally {
    await manager.close();
  }
}
`;

describe('npm package: pack, install from the tarball, run', () => {
  let root: string;
  let work: string;
  /** The copy of the sources that was packed, and whether it had build output before `npm pack`. */
  let packedFrom: string;
  let builtBeforePack: boolean;
  let tarball: string;
  let manifest: PackedManifest;
  let entries: Map<string, TarEntry>;
  const timings: string[] = [];
  const tables: string[] = [];
  let server: TestServer;

  beforeAll(async () => {
    root = repoRoot();
    server = testServers().find((candidate) => candidate.name === 'dynalite') ?? testServers()[0];
    work = mkdtempSync(path.join(tmpdir(), 'nestjs-dynamo-lock-pack-'));
    // The sources as a fresh clone has them: no build output, which npm pack must build (prepack).
    packedFrom = path.join(work, 'source');
    mkdirSync(packedFrom);
    for (const entry of PACK_SOURCES) cpSync(path.join(root, entry), path.join(packedFrom, entry), { recursive: true });
    symlinkSync(path.join(root, 'node_modules'), path.join(packedFrom, 'node_modules'), 'dir');
    builtBeforePack = existsSync(path.join(packedFrom, 'dist', 'index.js'));
    // Output of an earlier build whose source is gone: prepack builds afresh, so it is not shipped.
    mkdirSync(path.join(packedFrom, 'dist'));
    writeFileSync(path.join(packedFrom, 'dist', 'removed-source.js'), 'module.exports = {};\n');
    const packed = await run('npm', ['pack', '--json', '--pack-destination', work], {
      cwd: packedFrom,
      env: childEnv(),
      timeoutMs: 110_000,
    });
    expectSuccess(packed, 'npm pack');
    const [report] = JSON.parse(packed.stdout) as [{ filename: string; size: number; unpackedSize: number; entryCount: number }];
    tarball = path.join(work, report.filename);
    entries = readTarball(tarball);
    manifest = JSON.parse(entries.get('package/package.json')?.body.toString('utf8') ?? '{}') as PackedManifest;
    timings.push(
      `${report.filename} ${(statSync(tarball).size / 1024).toFixed(1)} kB packed, ${(report.unpackedSize / 1024).toFixed(1)} kB unpacked, ` +
        `${report.entryCount} files; npm pack (with its build) ${seconds(packed.ms)}`,
    );
  }, 120_000);

  afterAll(async () => {
    if (tables.length > 0 && server) {
      const client = createTestClient(server);
      try {
        await Promise.all(tables.map((table) => deleteTable(client, table)));
      } finally {
        client.destroy();
      }
    }
    if (work && process.env.DYNAMO_LOCK_KEEP_PACK_DIR !== '1') rmSync(work, { recursive: true, force: true });
    process.stderr.write(
      `\n[package] ${timings.join('; ')}${work && process.env.DYNAMO_LOCK_KEEP_PACK_DIR === '1' ? `; kept ${work}` : ''}\n`,
    );
  }, 30_000);

  describe('the tarball', () => {
    it('holds only dist/, README.md, LICENSE and package.json, all regular files', () => {
      const names = [...entries.keys()];
      expect(names.filter((name) => !ALLOWED_ENTRY.test(name))).toEqual([]);
      expect(names.filter((name) => entries.get(name)?.type !== '0')).toEqual([]);
      for (const name of [
        'package/package.json',
        'package/README.md',
        'package/LICENSE',
        'package/dist/index.js',
        'package/dist/index.d.ts',
      ]) {
        expect(names).toContain(name);
      }
      expect(manifest.name).toBe('nestjs-dynamo-lock');
    });

    it('is built afresh by npm pack itself (prepack): each dist/ file compiles from a lib/ source, and each source is built', () => {
      expect(builtBeforePack).toBe(false);
      const sources = new Set(libSources(path.join(packedFrom, 'lib')));
      const rebuild = 'the prepack script must build dist/ afresh';
      const orphans = [...entries.keys()]
        .filter((name) => name.startsWith('package/dist/'))
        .map((name) => name.slice('package/dist/'.length))
        .filter((file) => !sources.has(file.replace(/(\.d\.ts|\.js)(\.map)?$/, '.ts')));
      if (orphans.length > 0) throw new Error(`dist/ files with no source in lib/ (${rebuild}):\n${orphans.join('\n')}`);
      const unbuilt = [...sources].filter((source) => !entries.has(`package/dist/${source.replace(/\.ts$/, '.js')}`));
      if (unbuilt.length > 0) throw new Error(`lib/ sources missing from the tarball's dist/ (${rebuild}):\n${unbuilt.join('\n')}`);
    });

    it('ships no source map that points at files it does not ship', () => {
      const dangling = [...entries.entries()]
        .filter(([name]) => name.endsWith('.map'))
        .flatMap(([name, { body }]) => {
          const map = JSON.parse(body.toString('utf8')) as { sources?: string[]; sourceRoot?: string; sourcesContent?: (string | null)[] };
          return (map.sources ?? []).flatMap((source, index) => {
            if (typeof map.sourcesContent?.[index] === 'string') return [];
            const resolved = path.posix.normalize(path.posix.join(path.posix.dirname(name), map.sourceRoot ?? '', source));
            return entries.has(resolved) ? [] : [`${name} → ${resolved}`];
          });
        });
      expect(dangling).toEqual([]);
    });

    it('resolves main, types, every exports target and the bin to files in the tarball; types come first', () => {
      const inTarball = (target: string) => entries.has(`package/${path.posix.normalize(target)}`);
      expect(manifest.main).toBe('dist/index.js');
      expect(manifest.types).toBe('dist/index.d.ts');
      for (const target of [manifest.main!, manifest.types!]) expect(inTarball(target)).toBe(true);

      const exportsMap = manifest.exports as Record<string, unknown>;
      expect(Object.keys(exportsMap)).toEqual(expect.arrayContaining(['.', './package.json']));
      const dot = exportsMap['.'] as Record<string, string>;
      // TypeScript takes the first matching condition: "types" must precede "default"/"require"/"import".
      expect(Object.keys(dot)[0]).toBe('types');
      expect(path.posix.normalize(dot.types)).toBe(manifest.types);
      for (const condition of ['default', 'require', 'import'] as const) {
        if (dot[condition] !== undefined) expect(path.posix.normalize(dot[condition])).toBe(manifest.main);
      }
      const targets = exportTargets(exportsMap);
      expect(targets.length).toBeGreaterThan(0);
      for (const target of targets) {
        expect(target.startsWith('./')).toBe(true);
        expect({ target, inTarball: inTarball(target) }).toEqual({ target, inTarball: true });
      }

      // node10 resolution (the legacy "module": "commonjs" tsconfig) ignores exports: typesVersions
      // maps each subpath to the same declarations as its exports "types" condition.
      const subpaths = Object.entries(exportsMap).filter(([subpath]) => subpath !== '.' && subpath !== './package.json');
      expect(subpaths.length).toBeGreaterThan(0);
      for (const [subpath, conditions] of subpaths) {
        const types = (conditions as Record<string, string>).types;
        expect(Object.keys(conditions as object)[0]).toBe('types');
        expect({ subpath, typesVersions: manifest.typesVersions?.['*']?.[subpath.slice(2)] }).toEqual({ subpath, typesVersions: [types] });
        expect(inTarball(types)).toBe(true);
      }

      expect(manifest.bin).toEqual({ 'dynamo-lock': 'dist/cli/main.js' });
      const cli = entries.get('package/dist/cli/main.js');
      expect(cli?.body.toString('utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
    });

    it('depends on commander only; Nest, rxjs, reflect-metadata, OpenTelemetry and the AWS SDK are peers, all but the SDK optional', () => {
      const optionalPeers = [
        // Only for lock.transact()/fencedWrite() with { form: 'document' }.
        '@aws-sdk/util-dynamodb',
        '@nestjs/common',
        '@nestjs/core',
        '@nestjs/event-emitter',
        '@nestjs/terminus',
        '@opentelemetry/api',
        'reflect-metadata',
        'rxjs',
      ];
      expect(Object.keys(manifest.dependencies ?? {})).toEqual(['commander']);
      expect(Object.keys(manifest.peerDependencies ?? {}).sort()).toEqual(['@aws-sdk/client-dynamodb', ...optionalPeers].sort());
      const optional = (name: string) => manifest.peerDependenciesMeta?.[name]?.optional === true;
      for (const name of optionalPeers) expect({ name, optional: optional(name) }).toEqual({ name, optional: true });
      expect(optional('@aws-sdk/client-dynamodb')).toBe(false);
    });

    it('requires no package at run time that it does not declare as a dependency or peer', () => {
      const declared = new Set([...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.peerDependencies ?? {})]);
      const undeclared = [...entries.entries()]
        .filter(([name]) => name.endsWith('.js'))
        .flatMap(([name, { body }]) => requiredSpecifiers(body.toString('utf8')).map((specifier) => ({ name, pkg: packageOf(specifier) })))
        .filter(({ pkg }) => pkg !== null && !declared.has(pkg))
        .map(({ name, pkg }) => `${name} requires ${pkg}`);
      expect(undeclared).toEqual([]);
    });

    it('keeps the CLI free of Nest, rxjs and reflect-metadata: nothing reachable from its bin requires them', () => {
      const reachable = new Set<string>();
      const pending = [`package/${manifest.bin?.['dynamo-lock']}`];
      const packages = new Map<string, string>();
      while (pending.length > 0) {
        const file = pending.pop()!;
        if (reachable.has(file)) continue;
        const entry = entries.get(file);
        if (!entry) throw new Error(`${file} is required by the CLI but is not in the tarball`);
        reachable.add(file);
        for (const specifier of requiredSpecifiers(entry.body.toString('utf8'))) {
          if (specifier.startsWith('.')) {
            const target = path.posix.join(path.posix.dirname(file), specifier);
            pending.push(entries.has(`${target}.js`) ? `${target}.js` : entries.has(target) ? target : `${target}/index.js`);
          } else {
            const pkg = packageOf(specifier);
            if (pkg) packages.set(pkg, file);
          }
        }
      }
      expect(reachable.size).toBeGreaterThan(5);
      expect(
        [...packages.keys()]
          .filter((pkg) => /^(@nestjs\/|rxjs$|reflect-metadata$)/.test(pkg))
          .map((pkg) => `${packages.get(pkg)} requires ${pkg}`),
      ).toEqual([]);
    });
  });

  describe('installed from the tarball into scratch apps', () => {
    let esmApp: string;
    let cjsApp: string;
    let cliDir: string;

    /** `<name>@<version in this repository's node_modules>`. */
    const pinned = (name: string) => {
      const { version } = JSON.parse(readFileSync(path.join(root, 'node_modules', name, 'package.json'), 'utf8')) as { version: string };
      return `${name}@${version}`;
    };

    /** A fresh directory with a package.json, and `npm install` of the tarball and `deps` in it. */
    async function scratchApp(name: string, manifestFields: Record<string, unknown>, deps: string[]): Promise<string> {
      const dir = path.join(work, name);
      mkdirSync(dir);
      writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name, version: '1.0.0', private: true, ...manifestFields }, null, 2));
      const result = await run('npm', [...NPM_INSTALL, tarball, ...deps], { cwd: dir, env: childEnv(), timeoutMs: 90_000 });
      expectSuccess(result, `npm install in ${name} (${[path.basename(tarball), ...deps].join(' ')})`);
      timings.push(`install ${name} ${seconds(result.ms)}`);
      return dir;
    }

    beforeAll(async () => {
      const nest11 = ['@nestjs/common', '@nestjs/core'].map((name) => `${name}@${NEST_11}`);
      const common = ['reflect-metadata', 'rxjs', '@aws-sdk/client-dynamodb', '@opentelemetry/api'].map(pinned);
      [esmApp, cjsApp, cliDir] = await Promise.all([
        scratchApp('nest12-esm-app', { type: 'module' }, NEST_12_APP_DEPS.map(pinned)),
        scratchApp('nest11-cjs-app', { type: 'commonjs' }, [
          ...nest11,
          `@nestjs/event-emitter@${EVENT_EMITTER_FOR_NEST_11}`,
          `@nestjs/terminus@${TERMINUS_FOR_NEST_11}`,
          `typescript@${TYPESCRIPT_5}`,
          ...common,
        ]),
        scratchApp('cli-only', {}, [pinned('@aws-sdk/client-dynamodb')]),
      ]);
    }, 100_000);

    /** Runs a Nest fixture app in `dir` against the server, and checks what it did. */
    async function runNestApp(dir: string, fixture: string, label: string): Promise<AppReport> {
      const file = path.join(dir, fixture.replace(/^nest-\w+-/, ''));
      copyFileSync(path.join(root, 'test', 'package', 'fixtures', fixture), file);
      const table = uniqueTableName(`pack-${label}`);
      tables.push(table);
      const result = await run(process.execPath, [file], {
        cwd: dir,
        env: childEnv(server, { ENDPOINT: server.endpoint, TABLE: table }),
        timeoutMs: 30_000,
      });
      expectSuccess(result, `node ${path.basename(file)} in ${path.basename(dir)}`);
      timings.push(`run ${label} ${seconds(result.ms)}`);
      const report = lastJsonLine<AppReport>(result);

      expect(report.library).toBe(path.join(dir, 'node_modules', 'nestjs-dynamo-lock', 'dist', 'index.js'));
      expect(report.version).toBe(manifest.version);
      expect(report.deepImport).toBe('ERR_PACKAGE_PATH_NOT_EXPORTED');
      // @WithLock by hand: the method ran holding invoice-42, and the table said so.
      expect(report.decorated.key).toBe('invoice-42');
      expect(report.decorated.fencingToken).toBeGreaterThan(0);
      expect(report.decorated.seenToken).toBe(report.decorated.fencingToken);
      // LockService: held (busy for a second try), released (free), fencing token grows.
      expect(report.service.heldToken).toBe(report.service.fencingToken);
      expect(report.service.busyWhileHeld).toBe(true);
      expect(report.service.afterRelease).toBeNull();
      expect(report.service.againToken).toBeGreaterThan(report.service.fencingToken);
      // The library finds the app's @nestjs/event-emitter (ES module in Nest 12, CommonJS in Nest 11): every lock event arrives.
      expect(report.events.slice(0, 4)).toEqual([
        'dynamo-lock.acquired',
        'dynamo-lock.released',
        'dynamo-lock.acquired',
        'dynamo-lock.busy',
      ]);
      timings.push(
        `${label}: fencing tokens ${report.decorated.fencingToken}, ${report.service.fencingToken}, ${report.service.againToken}`,
      );
      return report;
    }

    it(`runs in a NestJS 12 ES-module app: forRoot, @WithLock, LockService against the server, events on EventEmitter2`, async () => {
      const report = await runNestApp(esmApp, 'nest-esm-app.mjs', 'nest12-esm');
      expect(report.format).toBe('esm');
      expect(report.nestCore).toBe(pinned('@nestjs/core').split('@').at(-1));
      expect(report.nestCommon).toBe(report.nestCore);
      // The CommonJS library gets ES-module Nest through require(esm): the app's own instance.
      expect(report.requireModule).toBe(true);
      expect(report.oneNest).toBe(true);
    }, 40_000);

    it(`runs in a NestJS ${NEST_11} CommonJS app: forRoot, @WithLock, LockService against the server`, async () => {
      const report = await runNestApp(cjsApp, 'nest-cjs-app.cjs', 'nest11-cjs');
      expect(report.format).toBe('commonjs');
      expect(report.nestCore).toBe(NEST_11);
      expect(report.nestCommon).toBe(NEST_11);
      expect(report.nestDirs).toEqual([path.join(cjsApp, 'node_modules')]);
      // The library loads the app's @opentelemetry/api: spans reach the tracer provider the app registered.
      // @WithLock: acquire, hold; acquire (held), tryAcquire (busy), release; acquire again, release.
      const [acquire, hold] = ['dynamo_lock.acquire', 'dynamo_lock.hold'];
      expect(report.spans).toEqual([acquire, hold, acquire, acquire, hold, acquire, hold]);
    }, 40_000);

    it('runs the dynamo-lock command and the standalone entry point where Nest, rxjs and reflect-metadata are not installed', async () => {
      for (const absent of ['@nestjs/common', '@nestjs/core', 'rxjs', 'reflect-metadata']) {
        expect({ absent, installed: existsSync(path.join(cliDir, 'node_modules', absent)) }).toEqual({ absent, installed: false });
      }
      // Never fetch a package of that name from the registry: the installed bin, or failure.
      const npx = (args: string[]) =>
        run('npx', ['--yes=false', '--offline', 'dynamo-lock', ...args], { cwd: cliDir, env: childEnv(server), timeoutMs: 30_000 });
      const version = await npx(['--version']);
      expectSuccess(version, 'npx dynamo-lock --version');
      expect(version.stdout).toBe(`${manifest.version}\n`);

      const table = uniqueTableName('pack-cli');
      tables.push(table);
      const target = ['--endpoint', server.endpoint, '--table', table];
      const missing = await npx(['table-check', ...target]);
      expect({ code: missing.code, stderr: missing.stderr }).toEqual({
        code: 4,
        stderr: expect.stringContaining(`"${table}" does not exist`),
      });
      expectSuccess(await npx(['table-create', ...target]), 'npx dynamo-lock table-create');
      const check = await npx(['table-check', ...target]);
      expectSuccess(check, 'npx dynamo-lock table-check');
      expect(check.stderr).toContain(`Lock table "${table}" is ACTIVE with the right key schema`);
      timings.push(`cli: --version ${seconds(version.ms)}, table-check ${seconds(check.ms)}`);

      // The same app, as a script: the standalone entry point takes and releases a lock without Nest.
      const script = [
        "const { LockManager, LockBusyError } = require('nestjs-dynamo-lock/standalone');",
        '(async () => {',
        '  const locks = new LockManager({ tableName: process.env.TABLE, clientConfig: { endpoint: process.env.ENDPOINT } });',
        '  await locks.init();',
        "  const lock = await locks.acquire('standalone');",
        '  const other = new LockManager({ tableName: process.env.TABLE, clientConfig: { endpoint: process.env.ENDPOINT } });',
        "  const busy = await other.acquire('standalone', { wait: false }).catch((e) => e instanceof LockBusyError);",
        '  const released = await lock.release();',
        '  await Promise.all([locks.close(), other.close()]);',
        '  console.log(JSON.stringify({ token: lock.fencingToken, busy, released }));',
        '})();',
      ].join('\n');
      const standalone = await run(process.execPath, ['-e', script], {
        cwd: cliDir,
        env: childEnv(server, { ENDPOINT: server.endpoint, TABLE: table }),
        timeoutMs: 30_000,
      });
      expectSuccess(standalone, 'node -e (nestjs-dynamo-lock/standalone)');
      expect(lastJsonLine(standalone)).toEqual({ token: expect.any(Number), busy: true, released: true });
    }, 60_000);

    it('type-checks TypeScript consumers against the installed declarations, as ES module and as CommonJS', async () => {
      const dir = path.join(esmApp, 'types');
      mkdirSync(dir);
      writeFileSync(path.join(dir, 'consumer.mts'), ESM_CONSUMER);
      writeFileSync(path.join(dir, 'consumer.cts'), CJS_CONSUMER);
      writeFileSync(
        path.join(dir, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            target: 'ES2022',
            module: 'nodenext',
            moduleResolution: 'nodenext',
            strict: true,
            noEmit: true,
            experimentalDecorators: true,
            emitDecoratorMetadata: true,
            skipLibCheck: true,
            typeRoots: [path.join(root, 'node_modules', '@types')],
            types: ['node'],
          },
          files: ['consumer.mts', 'consumer.cts'],
        }),
      );
      const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
      const result = await run(process.execPath, [tsc, '-p', path.join(dir, 'tsconfig.json')], {
        cwd: dir,
        env: childEnv(),
        timeoutMs: 60_000,
      });
      expectSuccess(result, 'tsc on the TypeScript consumers');
      timings.push(`tsc consumers ${seconds(result.ms)}`);
    }, 70_000);

    it(`type-checks a TypeScript ${TYPESCRIPT_5} consumer of the legacy Nest CommonJS tsconfig (node10 resolution): the root, /health and /standalone`, async () => {
      const dir = path.join(cjsApp, 'types-node10');
      mkdirSync(dir);
      writeFileSync(path.join(dir, 'consumer.ts'), NODE10_CONSUMER);
      writeFileSync(
        path.join(dir, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            target: 'ES2021',
            module: 'commonjs',
            moduleResolution: 'node10',
            strict: true,
            noEmit: true,
            experimentalDecorators: true,
            emitDecoratorMetadata: true,
            // The installed declarations (this package's and the Nest 11 ones they name) are checked too.
            skipLibCheck: false,
            typeRoots: [path.join(root, 'node_modules', '@types')],
            types: ['node'],
          },
          files: ['consumer.ts'],
        }),
      );
      const tsc = path.join(cjsApp, 'node_modules', 'typescript', 'bin', 'tsc');
      const version = await run(process.execPath, [tsc, '--version'], { cwd: dir, env: childEnv(), timeoutMs: 30_000 });
      expect(version.stdout.trim()).toBe(`Version ${TYPESCRIPT_5}`);
      const result = await run(process.execPath, [tsc, '-p', path.join(dir, 'tsconfig.json')], {
        cwd: dir,
        env: childEnv(),
        timeoutMs: 60_000,
      });
      expectSuccess(result, `tsc ${TYPESCRIPT_5} (module commonjs, moduleResolution node10)`);
      timings.push(`tsc ${TYPESCRIPT_5} node10 consumer ${seconds(result.ms)}`);
    }, 70_000);
  });
});

describe('package-lock.json: npm ci and npm install on a fresh clone, on any platform', () => {
  interface LockEntry {
    version?: string;
    dependencies?: Record<string, string>;
    optionalDependencies?: Record<string, string>;
    devDependencies?: Record<string, string>;
  }

  it("records every locked package's dependencies, other platforms' optional binaries included (npm ci rejects a lock without them)", () => {
    const lock = JSON.parse(readFileSync(path.join(repoRoot(), 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
    const { packages } = lock;
    /** Node's lookup: `<dir>/node_modules/<name>`, then each enclosing node_modules up to the root. */
    const resolves = (from: string, name: string): boolean => {
      let dir = from;
      for (;;) {
        if (packages[`${dir ? `${dir}/` : ''}node_modules/${name}`]) return true;
        if (!dir) return false;
        const parent = dir.lastIndexOf('/node_modules/');
        dir = parent < 0 ? '' : dir.slice(0, parent);
      }
    };
    const missing = Object.entries(packages).flatMap(([location, entry]) =>
      (['dependencies', 'optionalDependencies', ...(location === '' ? ['devDependencies' as const] : [])] as const).flatMap((field) =>
        Object.keys(entry[field] ?? {})
          .filter((name) => !resolves(location, name))
          .map((name) => `${location || '(root)'} ${field} ${name}@${entry[field]![name]}`),
      ),
    );
    // A release whose platform binaries the registry lacks leaves them out: pin one that has them all.
    expect(missing).toEqual([]);
  });

  it('is what npm install writes: npm install leaves package-lock.json as committed', async () => {
    const root = repoRoot();
    const dir = mkdtempSync(path.join(tmpdir(), 'nestjs-dynamo-lock-lock-'));
    try {
      for (const file of ['package.json', 'package-lock.json']) copyFileSync(path.join(root, file), path.join(dir, file));
      const result = await run(
        'npm',
        ['install', '--package-lock-only', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline'],
        { cwd: dir, env: childEnv(), timeoutMs: 60_000 },
      );
      expectSuccess(result, 'npm install --package-lock-only');
      const committed = readFileSync(path.join(root, 'package-lock.json'), 'utf8');
      const rewritten = readFileSync(path.join(dir, 'package-lock.json'), 'utf8');
      // On a difference: run npm install and commit package-lock.json.
      expect(rewritten === committed).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 70_000);
});

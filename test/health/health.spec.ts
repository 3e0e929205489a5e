/**
 * The `@nestjs/terminus` health indicator of `nestjs-dynamo-lock/health`, over HTTP: Nest apps
 * with TerminusModule and DynamoLockModule, a health controller, and `fetch` against
 * `app.listen(0)`. Against a live server (table ACTIVE: 200, up, latency), a missing table
 * (503, down), an endpoint nothing listens on and one that never answers (503, down, fast), and
 * the in-memory store of `forTesting()`. Also checks that the main entry point does not reach
 * `@nestjs/terminus`, which stays an optional peer dependency.
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Controller, Get, type DynamicModule, type INestApplication } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { Test } from '@nestjs/testing';
import { DynamoLockModule, type DynamoLockOptions } from '../../lib';
import { DynamoLockHealthIndicator } from '../../lib/health';
import { findFreePort } from '../../tools/free-port.mjs';
import { LockFixture, MemoryLogger } from '../support/lock-fixture';
import { deleteTable, deleteTableAndWait, describeEachServer, testClientConfig, uniqueTableName } from '../support/servers';

@Controller('health')
class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly locks: DynamoLockHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.locks.isHealthy('locks')]);
  }

  /** With a short timeout of its own, for the endpoint that never answers. */
  @Get('quick')
  @HealthCheck()
  quick() {
    return this.health.check([() => this.locks.isHealthy('locks', { timeout: '300ms' })]);
  }
}

interface HealthBody {
  status: string;
  info?: Record<string, Record<string, unknown>>;
  error?: Record<string, Record<string, unknown>>;
  details: Record<string, Record<string, unknown>>;
}

const apps: INestApplication[] = [];

/** Boots an app with Terminus, the lock module and the health controller, listening on 127.0.0.1; returns its URL. */
async function boot(lockModule: DynamicModule): Promise<string> {
  const moduleRef = await Test.createTestingModule({
    imports: [TerminusModule.forRoot({ logger: false }), lockModule],
    controllers: [HealthController],
    providers: [DynamoLockHealthIndicator],
  }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  apps.push(app);
  await app.listen(0, '127.0.0.1');
  const address = app.getHttpServer().address() as { port: number };
  return `http://127.0.0.1:${address.port}`;
}

/** GETs a health route: HTTP status, body, and how long it took. */
async function probe(url: string): Promise<{ code: number; body: HealthBody; ms: number }> {
  const started = performance.now();
  const response = await fetch(url);
  const body = (await response.json()) as HealthBody;
  return { code: response.status, body, ms: performance.now() - started };
}

/** Dummy credentials and a region for an endpoint that is not a real server. */
const offline = (endpoint: string): DynamoLockOptions['clientConfig'] => ({
  endpoint,
  region: 'us-east-1',
  credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
});

afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()));
});

describeEachServer('DynamoLockHealthIndicator', (server) => {
  const fixture = new LockFixture(server);
  beforeAll(() => fixture.setup());
  afterAll(() => fixture.close());

  const options = (extra: DynamoLockOptions = {}): DynamoLockOptions => ({
    tableName: fixture.tableName,
    client: fixture.newClient(),
    logger: new MemoryLogger(),
    ...extra,
  });

  it('is up with the table, its status and the latency when the table is ACTIVE (200)', async () => {
    const url = await boot(DynamoLockModule.forRoot(options()));
    const { code, body } = await probe(`${url}/health`);
    expect(code).toBe(200);
    expect(body.status).toBe('ok');
    expect(body.info?.locks).toEqual({
      status: 'up',
      store: 'dynamodb',
      table: fixture.tableName,
      tableStatus: 'ACTIVE',
      latencyMs: expect.any(Number),
    });
    expect(body.info?.locks.latencyMs).toBeGreaterThanOrEqual(0);
    expect(body.info?.locks.latencyMs).toBeLessThan(2_000);
  });

  it('is down, saying the table does not exist, for a missing table (503)', async () => {
    const missing = uniqueTableName('missing');
    const url = await boot(DynamoLockModule.forRoot(options({ tableName: missing, verifyTable: false })));
    const { code, body } = await probe(`${url}/health`);
    expect(code).toBe(503);
    expect(body.status).toBe('error');
    expect(body.error?.locks).toEqual({
      status: 'down',
      store: 'dynamodb',
      table: missing,
      latencyMs: expect.any(Number),
      message: `DynamoDB lock table "${missing}" does not exist in region ${String(testClientConfig(server).region)} at "${server.endpoint}" (from the DynamoDB client passed as the client option): create it (DynamoLockModule option \`createTable: true\`, or \`dynamo-lock table-create\`), or fix tableName or the region.`,
    });
  });

  it('with createTable on, a table deleted while the app runs is down saying that a restart creates it (503)', async () => {
    const table = uniqueTableName('deleted');
    const client = fixture.newClient();
    try {
      const url = await boot(DynamoLockModule.forRoot(options({ tableName: table, createTable: true })));
      await deleteTableAndWait(client, table);
      const { code, body } = await probe(`${url}/health`);
      expect(code).toBe(503);
      expect(body.error?.locks).toMatchObject({ status: 'down', store: 'dynamodb', table });
      expect(body.error?.locks.message).toBe(
        `DynamoDB lock table "${table}" does not exist in region ${String(testClientConfig(server).region)} at "${server.endpoint}" (from the DynamoDB client passed as the client option): it was deleted while the app ran, and createTable creates a missing table only at start-up: restart the app to create it again (or create it with \`dynamo-lock table-create\`).`,
      );
    } finally {
      await deleteTable(client, table);
    }
  });
});

describe('DynamoLockHealthIndicator without a server', () => {
  it('is down within the timeout when nothing listens on the endpoint (503)', async () => {
    const port = await findFreePort();
    const url = await boot(
      DynamoLockModule.forRoot({
        tableName: 'locks',
        clientConfig: offline(`http://127.0.0.1:${port}`),
        verifyTable: false,
        logger: new MemoryLogger(),
      }),
    );
    const { code, body, ms } = await probe(`${url}/health`);
    expect(code).toBe(503);
    expect(ms).toBeLessThan(5_000);
    expect(body.error?.locks).toMatchObject({ status: 'down', store: 'dynamodb', table: 'locks', latencyMs: expect.any(Number) });
    // Refused at once (after the SDK's retries), or still retrying when the 2 s timeout runs out.
    expect(body.error?.locks.message).toMatch(
      /^(DynamoDB lock table "locks" could not be checked: .*ECONNREFUSED.*|DynamoDB did not answer DescribeTable for lock table "locks" within 2000 ms: .*)$/,
    );
  });

  describe('an endpoint that accepts connections and never answers', () => {
    let silent: Server;
    const sockets = new Set<Socket>();
    beforeAll(async () => {
      silent = createServer((socket) => {
        sockets.add(socket);
        socket.on('close', () => sockets.delete(socket));
      });
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    });
    afterAll(async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    });

    it('is down when the timeout runs out, and says so (503)', async () => {
      const { port } = silent.address() as { port: number };
      const url = await boot(
        DynamoLockModule.forRoot({
          tableName: 'locks',
          clientConfig: offline(`http://127.0.0.1:${port}`),
          verifyTable: false,
          logger: new MemoryLogger(),
        }),
      );
      const { code, body, ms } = await probe(`${url}/health/quick`);
      expect(code).toBe(503);
      expect(ms).toBeLessThan(2_000);
      expect(body.error?.locks).toEqual({
        status: 'down',
        store: 'dynamodb',
        table: 'locks',
        latencyMs: expect.any(Number),
        message: 'DynamoDB did not answer DescribeTable for lock table "locks" within 300 ms: the endpoint is unreachable or too slow.',
      });
      expect(body.error?.locks.latencyMs).toBeGreaterThanOrEqual(290);
    });
  });

  it('is up with store "memory" under DynamoLockModule.forTesting(), contacting nothing', async () => {
    const url = await boot(DynamoLockModule.forTesting());
    const { code, body } = await probe(`${url}/health`);
    expect(code).toBe(200);
    expect(body.info?.locks).toEqual({ status: 'up', store: 'memory' });
  });

  it('rejects a bad timeout with a validation error', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [TerminusModule.forRoot({ logger: false }), DynamoLockModule.forTesting()],
      providers: [DynamoLockHealthIndicator],
    }).compile();
    const indicator = moduleRef.get(DynamoLockHealthIndicator);
    await expect(indicator.isHealthy('locks', { timeout: 'soon' })).rejects.toThrow(/timeout/);
    await moduleRef.close();
  });
});

describe('nestjs-dynamo-lock (the main entry point)', () => {
  it('never imports @nestjs/terminus: only nestjs-dynamo-lock/health does', () => {
    const lib = path.resolve(path.dirname(expect.getState().testPath!), '..', '..', 'lib');
    const seen = new Set<string>();
    const packages = new Map<string, string>();
    const pending = [path.join(lib, 'index.ts')];
    while (pending.length > 0) {
      const file = pending.pop()!;
      if (seen.has(file)) continue;
      seen.add(file);
      const source = readFileSync(file, 'utf8');
      // Value imports and re-exports (type-only ones are erased from the output).
      for (const match of source.matchAll(/^(?:import|export)\s+(?!type\s)[^'";]*?from\s+'([^']+)'|^import\s+'([^']+)'/gm)) {
        const specifier = match[1] ?? match[2];
        if (specifier.startsWith('.')) {
          const target = path.resolve(path.dirname(file), specifier);
          pending.push(target.endsWith('.ts') ? target : readable(`${target}.ts`) ? `${target}.ts` : path.join(target, 'index.ts'));
        } else {
          packages.set(specifier, path.relative(lib, file));
        }
      }
    }
    expect(seen.size).toBeGreaterThan(10);
    expect(seen.has(path.join(lib, 'health', 'dynamo-lock.health.ts'))).toBe(false);
    expect([...packages.keys()].filter((name) => name.startsWith('@nestjs/terminus'))).toEqual([]);
  });
});

function readable(file: string): boolean {
  try {
    readFileSync(file);
    return true;
  } catch {
    return false;
  }
}

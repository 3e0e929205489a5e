/**
 * Reasons and errors that mean the same everywhere: what `extend()` rejects with on a lost lock,
 * what `renewLease()` says for a lease id that does not hold the key (on both servers, also when
 * the server does not return the old item), and the start-up error when DynamoDB cannot be reached.
 */
import { DeleteItemCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import { ensureLockTable, type Lock, LockConfigurationError, LockLostError, LockManager, LockTableError, MemoryLockStore } from '../../lib';
import { classifyError } from '../../lib/cli/error-report';
import { findFreePort } from '../../tools/free-port.mjs';
import { LockFixture, MemoryLogger } from '../support/lock-fixture';
import { rejectionOf } from '../support/rejection';
import { describeEachServer, stealLock, testClientConfig } from '../support/servers';

let keySeq = 0;
const newKey = (name: string) => `${name}-${++keySeq}`;

/** Resolves with the signal's reason once the lock is lost. */
function lossOf(lock: Lock): Promise<LockLostError> {
  const signal = lock.signal;
  if (signal.aborted) return Promise.resolve(signal.reason as LockLostError);
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(signal.reason as LockLostError), { once: true }));
}

/** `extend()` on a lock whose loss was noticed before the call: the signal's very error. */
async function expectExtendRejectsWithSignalReason(lock: Lock, reason: string): Promise<void> {
  const lost = await lossOf(lock);
  expect(lost).toBeInstanceOf(LockLostError);
  expect(lost.reason).toBe(reason);
  const error = await rejectionOf(lock.extend());
  expect(error).toBe(lost);
  // Again, and with a new lease duration: the same error.
  expect(await rejectionOf(lock.extend('5s'))).toBe(lost);
}

describeEachServer('errors that mean the same everywhere', (server) => {
  const fixture = new LockFixture(server);
  beforeAll(() => fixture.setup());
  afterAll(() => fixture.close());

  describe('extend() on a lost lock rejects with the LockLostError its signal carries', () => {
    it('reason "taken" when a heartbeat found another owner holding it', async () => {
      const manager = fixture.manager({ leaseDuration: 3_000, heartbeatInterval: 150 });
      const key = newKey('extend-taken');
      const lock = await manager.acquire(key);
      await stealLock(fixture.client, fixture.tableName, key);
      await expectExtendRejectsWithSignalReason(lock, 'taken');
    });

    it('reason "expired" when the lease ran out without a heartbeat', async () => {
      const manager = fixture.manager({ leaseDuration: 400 });
      const lock = await manager.acquire(newKey('extend-expired'), { heartbeat: false });
      await sleep(500);
      await expectExtendRejectsWithSignalReason(lock, 'expired');
    });

    it('reason "gone" when the item was deleted behind the holder', async () => {
      const manager = fixture.manager({ leaseDuration: 3_000, heartbeatInterval: 150 });
      const key = newKey('extend-gone');
      const lock = await manager.acquire(key);
      await fixture.client.send(new DeleteItemCommand({ TableName: fixture.tableName, Key: { key: { S: key } } }));
      await expectExtendRejectsWithSignalReason(lock, 'gone');
    });

    it('reason "shutdown" after the lock service shut down', async () => {
      const manager = fixture.manager();
      const lock = await manager.acquire(newKey('extend-shutdown'));
      await manager.close();
      await expectExtendRejectsWithSignalReason(lock, 'shutdown');
    });

    it('reason "released" after a normal release', async () => {
      const manager = fixture.manager();
      const lock = await manager.acquire(newKey('extend-released'));
      await lock.release();
      await expectExtendRejectsWithSignalReason(lock, 'released');
    });
  });

  describe('renewLease() with a lease id that does not hold the key', () => {
    it('says "taken" while another holder holds it (dynalite returns no old item: the manager reads it)', async () => {
      const holder = fixture.manager({ ownerName: 'holder' });
      const other = fixture.manager({ ownerName: 'other' });
      const key = newKey('renew-taken');
      const lock = await holder.acquire(key);
      for (const manager of [other, holder]) {
        const error = await rejectionOf(manager.renewLease(key, 'not-the-lease-id'));
        expect(error).toBeInstanceOf(LockLostError);
        expect((error as LockLostError).reason).toBe('taken');
      }
      expect(lock.isHeld).toBe(true);
      await lock.release();
    });

    it('says "gone" when the key is free: never taken, or released', async () => {
      const manager = fixture.manager();
      const never = await rejectionOf(manager.renewLease(newKey('renew-never'), 'some-lease-id'));
      expect((never as LockLostError).reason).toBe('gone');
      const key = newKey('renew-released');
      const lock = await manager.acquire(key);
      await lock.release();
      const released = await rejectionOf(manager.renewLease(key, lock.leaseId));
      expect(released).toBeInstanceOf(LockLostError);
      expect((released as LockLostError).reason).toBe('gone');
    });
  });

  it('a missing table at start-up stays LockTableError "missing", not an endpoint error', async () => {
    const manager = fixture.manager({ tableName: `${fixture.tableName}-never-created` });
    const error = await rejectionOf(manager.init());
    expect(error).toBeInstanceOf(LockTableError);
    expect((error as LockTableError).problem).toBe('missing');
  });

  it("a missing table at a standalone manager's start-up names where it looked and LockManager's option", async () => {
    const tableName = `${fixture.tableName}-never-made`;
    const manager = fixture.manager({ tableName });
    const error = (await rejectionOf(manager.init())) as LockTableError;
    const region = String(testClientConfig(server).region);
    expect(error.location).toEqual({ region, endpoint: server.endpoint });
    expect(error.message).toContain(
      `for locks does not exist in region ${region} at "${server.endpoint}" (from the DynamoDB client passed as the client option).`,
    );
    expect(error.message).toContain(
      `Create it with \`createTable: true\` in the LockManager options, with \`npx dynamo-lock table-create --table ${tableName} --region ${region} --endpoint ${server.endpoint}\``,
    );
    expect(error.message).not.toContain('DynamoLockModule');
    const direct = (await rejectionOf(ensureLockTable(fixture.newClient(), tableName, { create: false }))) as LockTableError;
    expect(direct.location).toEqual(error.location);
    expect(direct.message).toContain('Create it with `create: true` in ensureLockTable(), with `npx dynamo-lock table-create');
  });
});

describe('errors that mean the same everywhere [memory store]', () => {
  const managers: LockManager[] = [];
  const store = new MemoryLockStore();
  const manager = (ownerName: string, options: ConstructorParameters<typeof LockManager>[0] = {}) => {
    const m = new LockManager({ store, verifyTable: false, ownerName, logger: new MemoryLogger(), ...options });
    managers.push(m);
    return m;
  };
  afterAll(() => Promise.all(managers.map((m) => m.close())));

  it('extend() rejects with the signal reason: "expired", "shutdown"', async () => {
    const expiring = await manager('m1', { leaseDuration: 300 }).acquire(newKey('mem-expired'), { heartbeat: false });
    await sleep(400);
    await expectExtendRejectsWithSignalReason(expiring, 'expired');
    const closing = manager('m2');
    const lock = await closing.acquire(newKey('mem-shutdown'));
    await closing.close();
    await expectExtendRejectsWithSignalReason(lock, 'shutdown');
  });

  it('renewLease() says "taken" while another holds the key and "gone" when it is free, as on DynamoDB', async () => {
    const key = newKey('mem-renew');
    const lock = await manager('holder').acquire(key);
    const other = manager('other');
    expect(((await rejectionOf(other.renewLease(key, 'not-the-lease-id'))) as LockLostError).reason).toBe('taken');
    await lock.release();
    expect(((await rejectionOf(other.renewLease(key, lock.leaseId))) as LockLostError).reason).toBe('gone');
    expect(((await rejectionOf(other.renewLease(newKey('mem-never'), 'x'))) as LockLostError).reason).toBe('gone');
  });
});

describe('start-up check when DynamoDB cannot be reached', () => {
  const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };
  const region = 'us-east-1';
  const tableName = 'locks-unreachable';
  const saved = { ...process.env };
  const managers: LockManager[] = [];
  let deadPort: number;

  beforeAll(async () => {
    deadPort = await findFreePort(); // nothing listens on it
  });
  afterEach(async () => {
    await Promise.all(managers.splice(0).map((m) => m.close()));
    for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
    Object.assign(process.env, saved);
  });

  /** Runs `init()` of a manager with `options` and returns its error and how long it took. */
  async function initError(options: ConstructorParameters<typeof LockManager>[0]): Promise<{ error: LockConfigurationError; ms: number }> {
    const manager = new LockManager({ tableName, logger: new MemoryLogger(), ...options });
    managers.push(manager);
    const started = performance.now();
    const error = await rejectionOf(manager.init());
    const ms = performance.now() - started;
    expect(error).toBeInstanceOf(LockConfigurationError);
    expect(error).not.toBeInstanceOf(LockTableError);
    expect(ms).toBeLessThan(5_000);
    return { error: error as LockConfigurationError, ms };
  }

  /** An environment with no AWS settings at all, as on a fresh machine. */
  function bareEnvironment(): void {
    for (const name of Object.keys(process.env)) if (name.startsWith('AWS_') || name === 'DYNAMODB_ENDPOINT') delete process.env[name];
    process.env.AWS_CONFIG_FILE = '/nonexistent/aws-config';
    process.env.AWS_SHARED_CREDENTIALS_FILE = '/nonexistent/aws-credentials';
    process.env.AWS_EC2_METADATA_DISABLED = 'true';
  }

  it('refused connection: names the table, the endpoint and the option that set it; the SDK error is the cause', async () => {
    bareEnvironment();
    const endpoint = `http://127.0.0.1:${deadPort}`;
    const { error } = await initError({ clientConfig: { endpoint, region, credentials } });
    expect(error.message).toContain(`"${tableName}"`);
    expect(error.message).toContain(`"${endpoint}" (from the clientConfig.endpoint option)`);
    expect(error.message).toMatch(/cannot be reached \(.*ECONNREFUSED/);
    expect(error.message).toMatch(/Start DynamoDB there, or fix the clientConfig\.endpoint option/);
    expect((error.cause as Error).message).toContain('ECONNREFUSED');
  });

  it('refused connection at DYNAMODB_ENDPOINT, AWS_ENDPOINT_URL_DYNAMODB, or a client passed in: says where the endpoint came from', async () => {
    bareEnvironment();
    const endpoint = `http://127.0.0.1:${deadPort}`;
    process.env.DYNAMODB_ENDPOINT = endpoint;
    const fromEnv = await initError({ clientConfig: { region, credentials } });
    expect(fromEnv.error.message).toContain(`"${endpoint}" (from the DYNAMODB_ENDPOINT environment variable)`);
    delete process.env.DYNAMODB_ENDPOINT;

    process.env.AWS_ENDPOINT_URL_DYNAMODB = endpoint;
    const fromSdkEnv = await initError({ clientConfig: { region, credentials } });
    expect(fromSdkEnv.error.message).toContain(`"${endpoint}" (from the AWS_ENDPOINT_URL_DYNAMODB environment variable)`);
    expect((fromSdkEnv.error.cause as Error).message).toContain('ECONNREFUSED');
    delete process.env.AWS_ENDPOINT_URL_DYNAMODB;

    const client = new DynamoDBClient({ endpoint, region, credentials });
    try {
      const passed = await initError({ client });
      expect(passed.error.message).toContain(`"${endpoint}" (from the DynamoDB client passed as the client option)`);
    } finally {
      client.destroy();
    }
  });

  it('unknown host: the DNS error is the cause', async () => {
    bareEnvironment();
    const endpoint = 'http://no-such-host.invalid:8000';
    const { error } = await initError({ clientConfig: { endpoint, region, credentials } });
    expect(error.message).toContain(`"${endpoint}" (from the clientConfig.endpoint option)`);
    expect(error.message).toContain(`"${tableName}"`);
    expect(error.message).toMatch(/cannot be reached \(.*(ENOTFOUND|EAI_AGAIN)/);
    expect((error.cause as Error).message).toMatch(/ENOTFOUND|EAI_AGAIN/);
  });

  it('an endpoint without http://: says so at once, sending nothing', async () => {
    bareEnvironment();
    for (const endpoint of ['localhost:1234', '127.0.0.1:1234']) {
      const { error, ms } = await initError({ clientConfig: { endpoint, region, credentials } });
      expect(error.message).toContain(`"${endpoint}" (from the clientConfig.endpoint option)`);
      expect(error.message).toMatch(/not an http:\/\/ or https:\/\/ URL\. Write it with its scheme, e\.g\. http:\/\/localhost:8000/);
      expect(ms).toBeLessThan(500);
    }
    process.env.DYNAMODB_ENDPOINT = 'localhost:8000';
    const { error } = await initError({ clientConfig: { region, credentials } });
    expect(error.message).toContain('"localhost:8000" (from the DYNAMODB_ENDPOINT environment variable)');
  });

  it('no region: names the endpoint and how to set a region', async () => {
    bareEnvironment();
    const endpoint = `http://127.0.0.1:${deadPort}`;
    const { error } = await initError({ clientConfig: { endpoint, credentials } });
    expect(error.message).toContain(`"${tableName}" at "${endpoint}" (from the clientConfig.endpoint option): no AWS region is set`);
    expect(error.message).toContain('Set AWS_REGION or clientConfig.region');
    expect((error.cause as Error).message).toMatch(/region is missing/i);

    const { error: noEndpoint } = await initError({ clientConfig: { credentials } });
    expect(noEndpoint.message).toContain(`"${tableName}" at AWS's endpoint for the region (no region is set`);
  });

  it('no credentials: from the default chain, or a credentials provider that fails', async () => {
    bareEnvironment();
    const endpoint = `http://127.0.0.1:${deadPort}`;
    const { error } = await initError({ clientConfig: { endpoint, region } });
    expect(error.message).toContain(`"${tableName}" at "${endpoint}" (from the clientConfig.endpoint option): no AWS credentials`);
    expect(error.message).toContain('Set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY');
    expect((error.cause as Error).name).toBe('CredentialsProviderError');

    const failing = () => Promise.reject(Object.assign(new Error('token expired'), { name: 'CredentialsProviderError' }));
    const { error: fromProvider } = await initError({ clientConfig: { endpoint, region, credentials: failing } });
    expect(fromProvider.message).toContain('no AWS credentials (CredentialsProviderError: token expired)');
  });

  it('AWS default endpoint: named with its region', async () => {
    bareEnvironment();
    // Offline, AWS's host does not resolve; online it would answer "invalid token": both are named with the endpoint.
    const { error } = await initError({ clientConfig: { region: 'eu-west-1', credentials, maxAttempts: 1 } });
    expect(error.message).toContain(`"https://dynamodb.eu-west-1.amazonaws.com/" (AWS's endpoint for region eu-west-1`);
    expect(error.message).toMatch(/cannot be reached|UnrecognizedClientException|security token/);
    expect(error.cause).toBeDefined();
  });

  it('ensureLockTable (the CLI path) throws the same error; the CLI words it its own way', async () => {
    bareEnvironment();
    const endpoint = `http://127.0.0.1:${deadPort}`;
    const client = new DynamoDBClient({ endpoint, region, credentials });
    try {
      const error = await rejectionOf(ensureLockTable(client, tableName, { create: false }));
      expect(error).toBeInstanceOf(LockConfigurationError);
      expect(error.message).toContain(`"${endpoint}" (from the DynamoDB client passed as the client option)`);
      expect(classifyError(error, { endpoint })).toEqual({
        exitCode: 4,
        message: `cannot reach DynamoDB at ${endpoint}: connect ECONNREFUSED 127.0.0.1:${deadPort}.`,
      });
    } finally {
      client.destroy();
    }
  });
});

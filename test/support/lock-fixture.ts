import type { DynamoDBClient, DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import type { LoggerService } from '@nestjs/common';
import { LockManager, type DynamoLockOptions } from '../../lib';
import { createLockTable, createTestClient, deleteTable, testClientConfig, type TestServer, uniqueTableName } from './servers';

/** A logger that keeps what it is told, for assertions, instead of printing it. */
export class MemoryLogger implements LoggerService {
  readonly lines: { level: string; message: string }[] = [];
  log(message: unknown) {
    this.lines.push({ level: 'log', message: String(message) });
  }
  warn(message: unknown) {
    this.lines.push({ level: 'warn', message: String(message) });
  }
  error(message: unknown) {
    this.lines.push({ level: 'error', message: String(message) });
  }
  debug(message: unknown) {
    this.lines.push({ level: 'debug', message: String(message) });
  }
  verbose(message: unknown) {
    this.lines.push({ level: 'verbose', message: String(message) });
  }
  /** Messages at one level. */
  at(level: string): string[] {
    return this.lines.filter((l) => l.level === level).map((l) => l.message);
  }
}

/** A lock table on one test server, and managers on it that are all closed by {@link LockFixture.close}. */
export class LockFixture {
  readonly tableName = uniqueTableName('locks');
  readonly client: DynamoDBClient;
  private readonly managers: LockManager[] = [];
  private readonly clients: DynamoDBClient[] = [];

  constructor(readonly server: TestServer) {
    this.client = createTestClient(server);
  }

  /** Creates the table. */
  async setup(): Promise<this> {
    await createLockTable(this.client, this.tableName);
    return this;
  }

  /** A new client of the test server (so request counters and faults stay per manager). */
  newClient(config?: DynamoDBClientConfig): DynamoDBClient {
    const client = createTestClient(this.server, config);
    this.clients.push(client);
    return client;
  }

  /** Options of `DynamoLockModule.forRoot()` for the fixture's table: a client config of the server, a memory logger. */
  moduleOptions(extra: DynamoLockOptions = {}): DynamoLockOptions {
    return { tableName: this.tableName, clientConfig: testClientConfig(this.server), logger: new MemoryLogger(), ...extra };
  }

  /** A manager on the fixture's table with its own client and a memory logger. */
  manager(options: DynamoLockOptions = {}, clientConfig?: DynamoDBClientConfig): LockManager & { logger: MemoryLogger } {
    const logger = new MemoryLogger();
    const manager = new LockManager({ tableName: this.tableName, client: this.newClient(clientConfig), logger, ...options });
    this.managers.push(manager);
    return Object.assign(manager, { logger });
  }

  /** Closes every manager, deletes the table, destroys clients. */
  async close(): Promise<void> {
    await Promise.all(this.managers.map((m) => m.close()));
    await deleteTable(this.client, this.tableName).catch(() => undefined);
    for (const client of [...this.clients, this.client]) client.destroy();
  }
}

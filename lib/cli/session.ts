import type { DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { withEntryPoint } from '../core/engine/lock-options.resolver';
import { LockManager } from '../core/lock.manager';
import { tableKeysOf } from '../core/engine/table-keys.options';
import type { DynamoLockOptions } from '../interfaces/dynamo-lock-options.interface';
import { LockConfigurationError } from '../errors/lock.errors';
import { isHttpUrl } from '../store/dynamo/dynamo-endpoint';
import { isTableName } from '../store/dynamo/lock-table';
import type { LockSortKey, LockTableKeys } from '../interfaces/lock-table-keys.interface';
import { INVALID_ENDPOINT, INVALID_SETTING, INVALID_SORT_KEY, INVALID_TABLE_NAME } from './cli.messages';
import { UsageError } from './cli.errors';
import { CliLogger } from './cli.logger';
import type { GlobalOptions } from './global-options';
import type { CliIo } from './io';
import { defaultOwnerName } from './owner-name';

/** SDK attempts per request: a missing table or a dead endpoint should fail in seconds, not minutes. */
const MAX_ATTEMPTS = 2;
/** Milliseconds to open a connection, and to wait for an answer, before a request fails. */
const CONNECTION_TIMEOUT_MS = 3_000;
const REQUEST_TIMEOUT_MS = 10_000;

/** How a command wants its session set up. */
export interface SessionOptions {
  /** Add `:pid` to the default owner name: the lock is held by this process (`exec`). */
  ownerWithPid?: boolean;
}

/**
 * What one command runs with: the global options, a {@link LockManager} with its own
 * DynamoDB client, and the output. Closing it releases whatever the command still holds,
 * unless the command kept its lock on purpose ({@link Session.keepLocks}).
 */
export class Session {
  /** The lock engine, configured from the global options. */
  readonly manager: LockManager;
  /** The logger the engine writes to (stderr, only with `--debug`). */
  readonly logger: CliLogger;
  readonly quiet: boolean;
  readonly debug: boolean;
  /** The endpoint in use, when not AWS's own. */
  readonly endpoint: string | undefined;
  private closed = false;

  /** @throws UsageError when a global option (table name, owner) is invalid. */
  constructor(
    readonly io: CliIo,
    options: GlobalOptions,
    sessionOptions: SessionOptions = {},
  ) {
    this.quiet = options.quiet === true;
    this.debug = options.debug === true;
    this.endpoint = options.endpoint;
    if (options.table !== undefined && !isTableName(options.table)) throw new UsageError(INVALID_TABLE_NAME(options.table));
    if (options.endpoint && !isHttpUrl(options.endpoint)) throw new UsageError(INVALID_ENDPOINT(options.endpoint));
    // The SDK's default credential and region chain reads the profile when the client is created.
    if (options.profile) process.env.AWS_PROFILE = options.profile;
    const clientConfig: DynamoDBClientConfig = {
      maxAttempts: MAX_ATTEMPTS,
      requestHandler: { connectionTimeout: CONNECTION_TIMEOUT_MS, requestTimeout: REQUEST_TIMEOUT_MS },
    };
    if (options.endpoint) clientConfig.endpoint = options.endpoint;
    if (options.region) clientConfig.region = options.region;
    this.logger = new CliLogger(io, this.debug);
    try {
      const lockOptions: DynamoLockOptions = {
        tableName: options.table,
        ownerName: options.owner ?? defaultOwnerName(sessionOptions.ownerWithPid === true),
        keyPrefix: options.keyPrefix,
        partitionKey: options.partitionKey,
        sortKey: parseSortKey(options.sortKey),
        clientConfig,
        verifyTable: false,
        logger: this.logger,
      };
      // Errors then name the flags (--key-prefix...), not the library's options.
      this.manager = new LockManager(withEntryPoint(lockOptions, 'cli'));
    } catch (error) {
      if (error instanceof LockConfigurationError) throw new UsageError(INVALID_SETTING(error.message), { cause: error });
      throw error;
    }
  }

  /** The lock table in use. */
  get tableName(): string {
    return this.manager.options.tableName;
  }

  /** Its key attributes, from `--partition-key` and `--sort-key`. */
  get tableKeys(): LockTableKeys {
    return tableKeysOf(this.manager.options);
  }

  /** Whether to draw a progress line: stderr is a terminal and `--quiet` is off. */
  get showProgress(): boolean {
    return this.io.stderrIsTTY && !this.quiet;
  }

  /** Writes an informational line to stderr, unless `--quiet`. */
  note(line: string): void {
    if (!this.quiet) this.io.err(line);
  }

  /**
   * Ends the session without releasing held locks (`acquire`: the lock outlives the command);
   * only the DynamoDB client is destroyed.
   */
  keepLocks(): void {
    if (this.closed) return;
    this.closed = true;
    this.manager.client.destroy();
  }

  /** Releases every lock still held and destroys the client. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.manager.close();
  }
}

/**
 * `--sort-key NAME=VALUE`: the sort key attribute and lock items' value in it (everything after
 * the first `=`; the library checks both further).
 * @throws UsageError when there is no `=`, or nothing before or after it.
 */
export function parseSortKey(text: string | undefined): LockSortKey | undefined {
  if (text === undefined) return undefined;
  const at = text.indexOf('=');
  if (at <= 0 || at === text.length - 1) throw new UsageError(INVALID_SORT_KEY(text));
  return { name: text.slice(0, at), value: text.slice(at + 1) };
}

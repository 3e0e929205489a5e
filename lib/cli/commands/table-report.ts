import { LockTableError } from '../../errors/lock.errors';
import { readKeySchema, type TtlState } from '../../store/dynamo/lock-table';
import { TABLE_KEYS_MISMATCH, TABLE_NOT_FOUND, TTL_OFF_SHARED, TTL_OTHER_ATTRIBUTE, TTL_STATUS } from '../cli.messages';
import { CliError } from '../cli.errors';
import { ExitCode } from '../exit-codes';
import type { Session } from '../session';

/**
 * Runs the library's table check, saying a missing table or another key schema the CLI's way
 * (`--table`, `table-create`, `--partition-key`, `--sort-key`) instead of the module's options.
 * @throws CliError (exit 4) for those two; anything else as it is.
 */
export async function checkTableKeys(session: Session, check: () => Promise<void>): Promise<void> {
  try {
    await check();
  } catch (error) {
    if (!(error instanceof LockTableError)) throw error;
    if (error.problem === 'missing') {
      throw new CliError(TABLE_NOT_FOUND(session.tableName, session.tableKeys, error.location), ExitCode.infrastructure, { cause: error });
    }
    const actual = error.problem === 'wrong-schema' ? await readKeySchema(session.manager.client, session.tableName) : undefined;
    if (actual)
      throw new CliError(TABLE_KEYS_MISMATCH(session.tableName, actual, session.tableKeys), ExitCode.infrastructure, { cause: error });
    throw error;
  }
}

/**
 * The TTL line of `table-check` and `table-create`: its status; that it reads another attribute
 * than lock items write; or, off on a table `shared` with the app's items, that it is left to the app.
 */
export function ttlLine(table: string, lockAttribute: string, ttl: TtlState | undefined, shared: boolean): string {
  const on = ttl?.status === 'ENABLED' || ttl?.status === 'ENABLING';
  if (on && ttl.attribute !== undefined && ttl.attribute !== lockAttribute) return TTL_OTHER_ATTRIBUTE(table, ttl.attribute, lockAttribute);
  if (!on && shared && ttl !== undefined) return TTL_OFF_SHARED(table, lockAttribute);
  return TTL_STATUS(lockAttribute, ttl?.status);
}

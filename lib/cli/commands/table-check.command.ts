import type { Command } from 'commander';
import { ATTR } from '../../store/mutex/mutex.record';
import { checkLockTable, describeTtl } from '../../store/dynamo/lock-table';
import { LockTableError } from '../../errors/lock.errors';
import { TABLE_NOT_FOUND, TABLE_OK, TTL_STATUS } from '../cli.messages';
import { CliError } from '../cli.errors';
import type { CommandRunner } from '../command-runner';
import { ExitCode } from '../exit-codes';
import type { Session } from '../session';

const EXAMPLES = `
Examples:
  $ dynamo-lock table-check --table deploy-locks
  $ dynamo-lock table-check --quiet || dynamo-lock table-create

Exits 0 when the table exists with the right key schema, 4 when it is missing or wrong.`;

/** `table-check`: verifies that the lock table exists with the right key schema. */
export function registerTableCheck(program: Command, runner: CommandRunner): void {
  program
    .command('table-check')
    .description('Check that the lock table exists, is ACTIVE and has the right key schema; report its TTL.')
    .addHelpText('after', EXAMPLES)
    .action((_options: unknown, command: Command) => runner.run(command, tableCheck));
}

async function tableCheck(session: Session): Promise<number> {
  const { client } = session.manager;
  try {
    await checkLockTable(client, session.tableName, { create: false }, 'cli');
  } catch (error) {
    // The library's message advises the library's options; say it the CLI's way (--table, --region).
    if (error instanceof LockTableError && error.problem === 'missing') {
      throw new CliError(TABLE_NOT_FOUND(session.tableName, error.location), ExitCode.infrastructure, { cause: error });
    }
    throw error;
  }
  const ttl = await describeTtl(client, session.tableName);
  if (!session.quiet) session.io.err(`${TABLE_OK(session.tableName)}\n${TTL_STATUS(ATTR.ttl, ttl)}`);
  return ExitCode.ok;
}

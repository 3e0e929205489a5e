import type { Command } from 'commander';
import { ATTR } from '../../store/mutex/mutex.record';
import { checkLockTable, describeTtl } from '../../store/dynamo/lock-table';
import { isSharedTable } from '../../store/dynamo/table-schema';
import { TABLE_OK } from '../cli.messages';
import type { CommandRunner } from '../command-runner';
import { ExitCode } from '../exit-codes';
import type { Session } from '../session';
import { checkTableKeys, ttlLine } from './table-report';

const EXAMPLES = `
Examples:
  $ dynamo-lock table-check --table deploy-locks
  $ dynamo-lock table-check --quiet || dynamo-lock table-create
  $ dynamo-lock table-check --table app --partition-key PK --sort-key SK=LOCK

Exits 0 when the table exists with the right key schema, 4 when it is missing or wrong.`;

/** `table-check`: verifies that the lock table exists with the right key schema. */
export function registerTableCheck(program: Command, runner: CommandRunner): void {
  program
    .command('table-check')
    .description('Check that the lock table exists, is ACTIVE and has the configured key schema; report its TTL.')
    .addHelpText('after', EXAMPLES)
    .action((_options: unknown, command: Command) => runner.run(command, tableCheck));
}

async function tableCheck(session: Session): Promise<number> {
  const { client } = session.manager;
  await checkTableKeys(session, () => checkLockTable(client, session.tableName, { create: false, keys: session.tableKeys }, 'cli'));
  const ttl = await describeTtl(client, session.tableName);
  const keys = session.tableKeys;
  if (!session.quiet)
    session.io.err(`${TABLE_OK(session.tableName, keys)}\n${ttlLine(session.tableName, ATTR.ttl, ttl, isSharedTable(keys))}`);
  return ExitCode.ok;
}

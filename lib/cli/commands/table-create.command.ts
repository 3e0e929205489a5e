import type { Command } from 'commander';
import { ATTR } from '../../store/mutex/mutex.record';
import { checkLockTable, createTableWithTtl, describeTtl } from '../../store/dynamo/lock-table';
import { TABLE_CREATED, TABLE_EXISTED, TTL_NOT_ENABLED } from '../cli.messages';
import type { CommandRunner } from '../command-runner';
import { ExitCode } from '../exit-codes';
import type { Session } from '../session';
import { checkTableKeys, ttlLine } from './table-report';

const EXAMPLES = `
Examples:
  $ dynamo-lock table-create --table deploy-locks --region eu-west-1
  $ dynamo-lock table-create --endpoint http://localhost:8000 --region us-east-1
  $ dynamo-lock table-create --table app --partition-key PK --sort-key SK=LOCK

Creating a table that already exists with the right schema succeeds (and turns TTL on, unless it
is a table of your own, shared with your items: given --partition-key or --sort-key, its TTL is left
as it is).`;

/** `table-create`: creates the lock table (on-demand, TTL on), or checks the one that exists. */
export function registerTableCreate(program: Command, runner: CommandRunner): void {
  program
    .command('table-create')
    .description(
      'Create the lock table: on-demand capacity, partition key "key" (String) or --partition-key, --sort-key if given, TTL on attribute "ttl".',
    )
    .addHelpText('after', EXAMPLES)
    .action((_options: unknown, command: Command) => runner.run(command, tableCreate));
}

async function tableCreate(session: Session): Promise<number> {
  const { client } = session.manager;
  const keys = session.tableKeys;
  const { created, ttlError, ttlLeftAlone } = await createTableWithTtl(client, session.tableName, keys);
  await checkTableKeys(session, () => checkLockTable(client, session.tableName, { create: false, keys }, 'cli'));
  const ttl = await describeTtl(client, session.tableName);
  const ttlOn = ttl?.status === 'ENABLED' || ttl?.status === 'ENABLING';
  if (!session.quiet) {
    const table = created ? TABLE_CREATED(session.tableName, keys) : TABLE_EXISTED(session.tableName);
    const ttlText =
      !ttlOn && ttlError !== undefined
        ? TTL_NOT_ENABLED(session.tableName, ttlError)
        : ttlLine(session.tableName, ATTR.ttl, ttl, ttlLeftAlone === true);
    session.io.err(`${table}\n${ttlText}`);
  }
  return ExitCode.ok;
}

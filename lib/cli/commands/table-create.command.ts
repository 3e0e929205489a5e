import type { Command } from 'commander';
import { ATTR } from '../../store/mutex/mutex.record';
import { checkLockTable, createTableWithTtl, describeTtl } from '../../store/dynamo/lock-table';
import { TABLE_CREATED, TABLE_EXISTED, TTL_NOT_ENABLED, TTL_STATUS } from '../cli.messages';
import type { CommandRunner } from '../command-runner';
import { ExitCode } from '../exit-codes';
import type { Session } from '../session';

const EXAMPLES = `
Examples:
  $ dynamo-lock table-create --table deploy-locks --region eu-west-1
  $ dynamo-lock table-create --endpoint http://localhost:8000 --region us-east-1

Creating a table that already exists with the right schema succeeds (and turns TTL on).`;

/** `table-create`: creates the lock table (on-demand, TTL on), or checks the one that exists. */
export function registerTableCreate(program: Command, runner: CommandRunner): void {
  program
    .command('table-create')
    .description('Create the lock table: on-demand capacity, partition key "key" (String), TTL on attribute "ttl".')
    .addHelpText('after', EXAMPLES)
    .action((_options: unknown, command: Command) => runner.run(command, tableCreate));
}

async function tableCreate(session: Session): Promise<number> {
  const { client } = session.manager;
  const { created, ttlError } = await createTableWithTtl(client, session.tableName);
  await checkLockTable(client, session.tableName, { create: false }, 'cli');
  const ttl = await describeTtl(client, session.tableName);
  const ttlOn = ttl === 'ENABLED' || ttl === 'ENABLING';
  if (!session.quiet) {
    const table = created ? TABLE_CREATED(session.tableName) : TABLE_EXISTED(session.tableName);
    session.io.err(
      `${table}\n${!ttlOn && ttlError !== undefined ? TTL_NOT_ENABLED(session.tableName, ttlError) : TTL_STATUS(ATTR.ttl, ttl)}`,
    );
  }
  return ExitCode.ok;
}

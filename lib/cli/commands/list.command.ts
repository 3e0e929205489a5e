import type { Command } from 'commander';
import { NO_LOCKS } from '../cli.messages';
import type { CommandRunner } from '../command-runner';
import { ExitCode } from '../exit-codes';
import { jsonOption } from '../options';
import { LOCK_COLUMNS, lockInfoJson, lockInfoRow } from '../output/lock-info.view';
import { renderTable } from '../output/table';
import type { Session } from '../session';

const EXAMPLES = `
Examples:
  $ dynamo-lock list
  $ dynamo-lock list --prefix deploy-
  $ dynamo-lock list --json | jq -r '.[] | "\\(.key) \\(.owner)"'

Counting semaphores with holders are listed too, with their taken slots ("NAME (2/3 slots)",
the other columns showing the newest holder). Reads the whole table twice (a Scan for locks,
one for semaphores): meant for people and tools, not for hot paths.
With --json, prints an array of locks (see "inspect --help"); a semaphore's object adds its limit,
waiting and holders.`;

interface ListOptions {
  prefix: string;
  json?: boolean;
}

/** `list`: every held lock and semaphore with holders, optionally only those whose names start with a prefix. */
export function registerList(program: Command, runner: CommandRunner): void {
  program
    .command('list')
    .description("List held locks and semaphores: name (a semaphore's taken slots), owner, fencing token, since when, lease and data.")
    .option('--prefix <prefix>', 'only locks whose names start with this', '')
    .addOption(jsonOption())
    .addHelpText('after', EXAMPLES)
    .action((options: ListOptions, cmd: Command) => runner.run(cmd, (session) => list(session, options)));
}

async function list(session: Session, options: ListOptions): Promise<number> {
  const locks = await session.manager.list(options.prefix);
  const { io } = session;
  if (options.json) {
    io.out(`${JSON.stringify(locks.map(lockInfoJson), null, 2)}\n`);
  } else if (locks.length === 0) {
    session.note(NO_LOCKS(options.prefix));
  } else {
    const now = new Date();
    io.out(
      `${renderTable(
        LOCK_COLUMNS,
        locks.map((info) => lockInfoRow(info, now)),
        { maxWidth: io.stdoutColumns },
      ).join('\n')}\n`,
    );
  }
  return ExitCode.ok;
}

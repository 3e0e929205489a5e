import type { Command } from 'commander';
import { AND_WITH_OPTION, LIMIT_WITH_DATA, READ_WITH_OPTION } from '../cli.messages';
import { UsageError } from '../cli.errors';
import type { CommandRunner } from '../command-runner';
import { runWhileHeld, WaitThenForward } from '../exec/run-while-held';
import { type AcquireCommandOptions, addAcquireOptions, parseAcquireOptions, parseDurationOption, parseLimitOption } from '../options';
import type { Session } from '../session';
import { waitForLock } from '../wait-for-lock';

const EXAMPLES = `
The lock is renewed in the background (every third of the lease) while COMMAND runs, and
released when it exits. SIGINT, SIGTERM and SIGHUP are passed on to COMMAND. If the lock is
lost while COMMAND runs (DynamoDB unreachable for a whole lease, or taken over), COMMAND gets
SIGTERM, then SIGKILL after --kill-after, and exec exits 3. Put "--" before COMMAND.

Examples:
  $ dynamo-lock exec deploy -- ./deploy.sh production
  $ dynamo-lock exec nightly-report --no-wait -- node report.js || echo "another run is busy"
  $ dynamo-lock exec migrations --wait 10m --lease-duration 1m -- npm run migrate
  $ dynamo-lock exec backup -- sh -c 'pg_dump mydb | gzip > backup.sql.gz'
  $ dynamo-lock exec encoder --limit 3 -- ./encode.sh video.mp4     # at most 3 at once, fleet-wide
  $ dynamo-lock exec account-1 --and account-2 -- ./transfer.sh 1 2 50
  $ dynamo-lock exec catalog --read -- ./export-catalog.sh          # with other --read runs, never with a writer

With --limit n, NAME is a counting semaphore: up to n commands (on any host) run at once, each
with its own fencing token; the others wait in line, in the order they came.

With --and NAME2 (repeatable), COMMAND runs while holding NAME and every NAME2 at once (a
multi-key lock). The names are locked one by one in one fixed order (by their bytes), whatever
order they are given in, so two commands naming the same locks in opposite orders never
deadlock; if one stays busy, those taken are released. Each name is its own lock: a busy one
names itself. Not with --limit or --data.

With --read, COMMAND shares NAME with other --read commands (up to 64 at once) and never runs
with a command holding NAME without --read; a writer waiting stops new readers. Not with
--limit or --data.

Exit status: COMMAND's own (128 + N if signal N ended it), 1 if the lock stayed busy,
3 if the lock was lost while COMMAND ran, 127 if COMMAND was not found.`;

interface ExecOptions extends AcquireCommandOptions {
  killAfter: string;
  limit?: string;
  /** More names to hold with NAME (`--and`, repeatable). */
  and: string[];
}

/** `exec NAME -- COMMAND...`: runs a command while holding the lock. */
export function registerExec(program: Command, runner: CommandRunner): void {
  const command = program
    .command('exec')
    .description('Run COMMAND while holding the lock, renewing it in the background; release it when COMMAND exits.')
    .argument('<name>', 'lock name')
    .argument('<command...>', 'the command and its arguments, after "--"');
  addAcquireOptions(command, '30s', 'lease, renewed every third of it while COMMAND runs; others take over this long after a crash')
    .option('--limit <n>', 'a counting semaphore: run while fewer than n commands hold NAME (1 to 32; the same n everywhere)')
    .option('--and <name>', 'also hold this lock (repeatable): all names at once, locked in one fixed order', collect, [])
    .option('--kill-after <duration>', 'after the lock is lost: how long COMMAND has between SIGTERM and SIGKILL', '10s')
    .addHelpText('after', EXAMPLES)
    .action((name: string, argv: string[], options: ExecOptions, cmd: Command) =>
      runner.run(cmd, (session) => exec(session, name, argv, options), { ownerWithPid: true }),
    );
}

async function exec(session: Session, name: string, argv: readonly string[], options: ExecOptions): Promise<number> {
  const { leaseMs, wait, data, mode } = parseAcquireOptions(options);
  const limit = parseLimitOption(options.limit);
  if (limit !== undefined && data !== undefined) throw new UsageError(LIMIT_WITH_DATA());
  if (limit !== undefined && mode === 'read') throw new UsageError(READ_WITH_OPTION('--limit'));
  const also = options.and;
  if (also.length > 0 && limit !== undefined) throw new UsageError(AND_WITH_OPTION('--limit'));
  if (also.length > 0 && data !== undefined) throw new UsageError(AND_WITH_OPTION('--data'));
  const killAfterMs = parseDurationOption(options.killAfter, '--kill-after');

  const signals = new WaitThenForward(name);
  try {
    const lock = await waitForLock(session, { name, also, wait, leaseMs, data, limit, mode, heartbeat: true, signal: signals.interrupt });
    return await runWhileHeld(session, lock, {
      argv,
      killAfterMs,
      started: signals.forwardTo,
      release: () => lock.release(),
    });
  } finally {
    signals.stop();
  }
}

/** Collects a repeatable option's values. */
function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

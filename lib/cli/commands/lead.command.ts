import { type Command, Option } from 'commander';
import type { Lock } from '../../core/engine/lock';
import { LockUnavailableError } from '../../errors/lock.errors';
import { FOLLOWING, LED_ELSEWHERE, NOT_ELECTED, PROGRAM } from '../cli.messages';
import { CliError } from '../cli.errors';
import type { CommandRunner } from '../command-runner';
import { runWhileHeld, WaitThenForward } from '../exec/run-while-held';
import { ExitCode } from '../exit-codes';
import { parseDataOption, parseDurationOption } from '../options';
import { outageError } from '../wait-for-lock';
import type { Session } from '../session';
import { firstRoundOf, type Leadership } from '../../core/leadership/leadership';
import { untilAborted } from '../../utils/clock';

const EXAMPLES = `
Campaigns for the leadership NAME among the hosts running the same command: one of them leads
and runs COMMAND; the others follow, reading the lock once per --watch-interval, and take over one
lease after the leader's last heartbeat (a crash), or within one interval when it stops gracefully
(COMMAND exited, SIGINT/SIGTERM/SIGHUP, which are passed on to COMMAND). If leadership is lost while
COMMAND runs (DynamoDB unreachable for a whole lease, or taken over), COMMAND gets SIGTERM, then
SIGKILL after --kill-after, and lead exits 3: let a supervisor (systemd, Kubernetes) start it again
to campaign anew. Put "--" before COMMAND.

Examples:
  $ dynamo-lock lead scheduler -- node scheduler.js
  $ dynamo-lock lead ingest --lease-duration 10s --watch-interval 1s -- ./consume-stream.sh
  $ dynamo-lock lead backup --wait 5m -- ./backup.sh || echo "another host leads"
  $ dynamo-lock lead nightly --no-wait -- ./nightly.sh || echo "another host leads now"

Exit status: COMMAND's own (128 + N if signal N ended it), 1 if not elected within --wait
(with --no-wait: if another host leads now, even a crashed one whose lease has not run out),
3 if leadership was lost while COMMAND ran, 4 if DynamoDB fails (with --no-wait: at the campaign's
first request), 127 if COMMAND was not found.`;

interface LeadCommandOptions {
  leaseDuration: string;
  watchInterval?: string;
  /** A duration, `false` for `--no-wait`, or `undefined` to campaign without limit. */
  wait?: string | false;
  data?: string;
  killAfter: string;
}

/** `lead NAME -- COMMAND...`: runs a command while this host leads. */
export function registerLead(program: Command, runner: CommandRunner): void {
  program
    .command('lead')
    .description('Campaign for leadership NAME; run COMMAND while this host leads, and stop it if leadership is lost.')
    .argument('<name>', 'leadership name (a lock name)')
    .argument('<command...>', 'the command and its arguments, after "--"')
    .addOption(
      new Option(
        '-l, --lease-duration <duration>',
        "leader's lease, renewed every third of it; followers take over this long after a crash",
      ).default('30s'),
    )
    .addOption(new Option('--watch-interval <duration>', 'how often a follower reads the lock (default: a third of the lease)'))
    .addOption(new Option('-w, --wait <duration>', 'give up (exit 1) if not elected after this long (default: campaign without limit)'))
    .addOption(new Option('-n, --no-wait', 'exit 1 at once if another host leads now (4 if DynamoDB fails)'))
    .addOption(new Option('--data <json>', "JSON stored with the leader's lock and shown by inspect and list"))
    .option('--kill-after <duration>', 'after leadership is lost: how long COMMAND has between SIGTERM and SIGKILL', '10s')
    .addHelpText('after', EXAMPLES)
    .action((name: string, argv: string[], options: LeadCommandOptions, cmd: Command) =>
      runner.run(cmd, (session) => lead(session, name, argv, options), { ownerWithPid: true }),
    );
}

async function lead(session: Session, name: string, argv: readonly string[], options: LeadCommandOptions): Promise<number> {
  const leaseMs = parseDurationOption(options.leaseDuration, '--lease-duration');
  const watchMs = options.watchInterval === undefined ? undefined : parseDurationOption(options.watchInterval, '--watch-interval');
  const waitMs = typeof options.wait === 'string' ? parseDurationOption(options.wait, '--wait') : undefined;
  const killAfterMs = parseDurationOption(options.killAfter, '--kill-after');
  const data = parseDataOption(options.data);

  const signals = new WaitThenForward(name);
  try {
    // One read first: the campaign retries network errors for ever, so an unreachable endpoint fails here, at once.
    const holder = await session.manager.inspect(name);
    const leadership = session.manager.lead(name, { leaseDuration: leaseMs, watchInterval: watchMs, data });
    let lock: Lock;
    if (options.wait === false) lock = await electedNow(session, leadership, signals.interrupt);
    else {
      // Someone leads already: say why nothing runs yet.
      if (holder) session.note(`${PROGRAM}: ${FOLLOWING(name, holder)}`);
      lock = await elected(session, leadership, waitMs, signals.interrupt);
    }
    return await runWhileHeld(session, lock, {
      argv,
      killAfterMs,
      started: signals.forwardTo,
      release: async () => {
        const held = lock.isHeld;
        await leadership.resign();
        return held;
      },
    });
  } finally {
    signals.stop();
  }
}

/**
 * Waits until this host is elected, at most `waitMs`.
 * @throws CliError with exit code 1 when not elected in time; the interrupt's reason on a signal.
 */
async function elected(session: Session, leadership: Leadership, waitMs: number | undefined, interrupt: AbortSignal): Promise<Lock> {
  const signals = waitMs === undefined ? [interrupt] : [interrupt, AbortSignal.timeout(waitMs)];
  const startedAt = performance.now();
  try {
    return await leadership.whenLeader(AbortSignal.any(signals));
  } catch (error) {
    if (interrupt.aborted) throw error;
    const holder = await session.manager.inspect(leadership.name).catch(() => null);
    throw new CliError(NOT_ELECTED(leadership.name, holder, performance.now() - startedAt), ExitCode.busy, { cause: error });
  }
}

/**
 * `--no-wait`: the lock of the term when the campaign's first round elects this host.
 * @throws CliError with exit code 1 when another host leads now; the interrupt's reason on a
 * signal; the `LockLostError` of a term lost before the command starts (exit code 3); the first
 * failed request's error (exit code 4), as `exec --no-wait` does: the campaign would retry it.
 */
async function electedNow(session: Session, leadership: Leadership, interrupt: AbortSignal): Promise<Lock> {
  const lock = await untilAborted(interrupt, firstRoundOf(leadership)).catch((error: unknown) => {
    throw error instanceof LockUnavailableError ? outageError(leadership.name, error, undefined) : error;
  });
  if (lock) {
    if (lock.signal.aborted) throw lock.signal.reason;
    return lock;
  }
  const holder = await session.manager.inspect(leadership.name).catch(() => null);
  throw new CliError(LED_ELSEWHERE(leadership.name, holder), ExitCode.busy);
}

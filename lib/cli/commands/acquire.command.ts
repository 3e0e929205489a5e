import type { Command } from 'commander';
import type { CommandRunner } from '../command-runner';
import { ExitCode } from '../exit-codes';
import { type AcquireCommandOptions, addAcquireOptions, parseAcquireOptions } from '../options';
import type { Session } from '../session';
import { onSignals } from '../signals';
import { interruptReason, waitForLock } from '../wait-for-lock';

const EXAMPLES = `
The lock stays held after the command ends, until "release", or until the lease runs out
without a "renew". Nothing renews it in the background: pick a lease longer than the work,
or renew it as you go.

Examples:
  $ LEASE=$(dynamo-lock acquire deploy --lease-duration '15 minutes' --wait 30s) || exit
  $ ./deploy.sh
  $ dynamo-lock release deploy "$LEASE"

  $ dynamo-lock acquire nightly-report --no-wait --data '{"job":"report","run":42}'
  $ dynamo-lock renew deploy "$LEASE" --lease-duration 300s

  $ READ=$(dynamo-lock acquire catalog --read --lease-duration 10m) || exit   # shared with other readers
  $ dynamo-lock release catalog "$READ"`;

/** `acquire NAME`: takes a lock that outlives the command and prints its lease id. */
export function registerAcquire(program: Command, runner: CommandRunner): void {
  const command = program
    .command('acquire')
    .description('Acquire a lock and print its lease id on stdout (and nothing else there). The lock outlives the command.')
    .argument('<name>', 'lock name');
  addAcquireOptions(command, '5m', 'how long the lock stays held without a renew')
    .addHelpText('after', EXAMPLES)
    .action((name: string, options: AcquireCommandOptions, cmd: Command) => runner.run(cmd, (session) => acquire(session, name, options)));
}

async function acquire(session: Session, name: string, options: AcquireCommandOptions): Promise<number> {
  const { leaseMs, wait, data, mode } = parseAcquireOptions(options);
  const interrupt = new AbortController();
  const stopHandling = onSignals((signal) => interrupt.abort(interruptReason(name, signal)));
  try {
    const lock = await waitForLock(session, { name, wait, leaseMs, data, mode, heartbeat: false, signal: interrupt.signal });
    // Leave without releasing: the lease id printed below is how later commands reach the lock.
    session.keepLocks();
    session.io.out(`${lock.leaseId}\n`);
    return ExitCode.ok;
  } finally {
    stopHandling();
  }
}

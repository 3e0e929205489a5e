import type { Command } from 'commander';
import { LockLostError } from '../../errors/lock.errors';
import { LEASE_NOT_HELD } from '../cli.messages';
import { LeaseNotHeldError } from '../cli.errors';
import type { CommandRunner } from '../command-runner';
import { ExitCode } from '../exit-codes';
import { parseDurationOption } from '../options';
import type { Session } from '../session';
import { leaseNotHeld } from './lease-holder';
import { parseLeaseId } from '../lease-id-args';

const EXAMPLES = `
Examples:
  $ dynamo-lock renew deploy "$LEASE"                            # same lease duration as before
  $ LEASE=$(dynamo-lock renew deploy "$LEASE" --lease-duration 300s)

Exits 3 when the lease no longer holds the lock (it ran out, was released, or was taken over).`;

interface RenewOptions {
  leaseDuration?: string;
}

/** `renew NAME LEASE_ID`: extends a lease taken with `acquire`, and prints its lease id. */
export function registerRenew(program: Command, runner: CommandRunner): void {
  program
    .command('renew')
    .description('Renew a lease taken with "acquire": it runs for the lease duration again from now. Prints the lease id.')
    .argument('<name>', 'lock name')
    .argument('<lease-id>', 'lease id printed by acquire', parseLeaseId)
    .option('-l, --lease-duration <duration>', 'new lease duration (default: the lease duration it has)')
    .addHelpText('after', EXAMPLES)
    .action((name: string, leaseId: string, options: RenewOptions, cmd: Command) =>
      runner.run(cmd, (session) => renew(session, name, leaseId, options)),
    );
}

async function renew(session: Session, name: string, leaseId: string, options: RenewOptions): Promise<number> {
  let leaseMs = options.leaseDuration === undefined ? undefined : parseDurationOption(options.leaseDuration, '--lease-duration');
  if (leaseMs === undefined) {
    // Keep the lease duration the lease was taken with, not the library's default.
    const current = await session.manager.inspect(name);
    if (!current) throw new LeaseNotHeldError(LEASE_NOT_HELD(name, null));
    leaseMs = current.leaseDuration;
  }
  try {
    await session.manager.renewLease(name, leaseId, leaseMs);
  } catch (error) {
    if (error instanceof LockLostError) throw await leaseNotHeld(session, name, error);
    throw error;
  }
  session.io.out(`${leaseId}\n`);
  return ExitCode.ok;
}

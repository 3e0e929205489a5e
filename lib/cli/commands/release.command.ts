import type { Command } from 'commander';
import type { CommandRunner } from '../command-runner';
import { ExitCode } from '../exit-codes';
import type { Session } from '../session';
import { leaseNotHeld } from './lease-holder';
import { parseLeaseId } from '../lease-id-args';

const EXAMPLES = `
Examples:
  $ dynamo-lock release deploy "$LEASE"
  $ trap 'dynamo-lock release deploy "$LEASE"' EXIT

Prints nothing. Exits 3 when the lease did not hold the lock (it ran out or was taken over);
releasing the same lease twice succeeds.`;

/** `release NAME LEASE_ID`: releases a lease taken with `acquire`. */
export function registerRelease(program: Command, runner: CommandRunner): void {
  program
    .command('release')
    .description('Release a lease taken with "acquire".')
    .argument('<name>', 'lock name')
    .argument('<lease-id>', 'lease id printed by acquire', parseLeaseId)
    .addHelpText('after', EXAMPLES)
    .action((name: string, leaseId: string, _options: unknown, cmd: Command) =>
      runner.run(cmd, (session) => release(session, name, leaseId)),
    );
}

async function release(session: Session, name: string, leaseId: string): Promise<number> {
  if (!(await session.manager.releaseLease(name, leaseId))) throw await leaseNotHeld(session, name);
  return ExitCode.ok;
}

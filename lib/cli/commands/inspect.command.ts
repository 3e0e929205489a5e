import type { Command } from 'commander';
import { LOCK_FREE } from '../cli.messages';
import type { CommandRunner } from '../command-runner';
import { ExitCode } from '../exit-codes';
import { jsonOption } from '../options';
import { jobFireFields, lockInfoFields, lockInfoJson } from '../output/lock-info.view';
import { renderFields } from '../output/table';
import type { Session } from '../session';

const EXAMPLES = `
Examples:
  $ dynamo-lock inspect deploy
  $ dynamo-lock inspect deploy --json | jq -r .owner

With --json, prints the lock as an object (times in ISO 8601, leaseDuration in milliseconds),
or null when it is free. The key of a scheduled job also shows its last fire claimed (scheduled
time, the instance that ran it, start, end, outcome), held or free (lastFire in --json while
held). Exits 0 either way.`;

interface InspectOptions {
  json?: boolean;
}

/** `inspect NAME`: who holds a lock, since when, its fencing token and data. */
export function registerInspect(program: Command, runner: CommandRunner): void {
  program
    .command('inspect')
    .description('Show who holds a lock, since when, its fencing token, lease and data.')
    .argument('<name>', 'lock name')
    .addOption(jsonOption())
    .addHelpText('after', EXAMPLES)
    .action((name: string, options: InspectOptions, cmd: Command) => runner.run(cmd, (session) => inspect(session, name, options)));
}

async function inspect(session: Session, name: string, options: InspectOptions): Promise<number> {
  const info = await session.manager.inspect(name);
  const { io } = session;
  const now = new Date();
  if (options.json) io.out(`${JSON.stringify(info && lockInfoJson(info), null, 2)}\n`);
  else if (info) io.out(`${renderFields(lockInfoFields(info, now), { maxWidth: io.stdoutColumns }).join('\n')}\n`);
  else {
    io.out(`${LOCK_FREE(name)}\n`);
    // A scheduled job's key keeps its last fire after the release.
    const fire = await session.manager.lastFire(name);
    if (fire) io.out(`${renderFields(jobFireFields(fire, now), { maxWidth: io.stdoutColumns }).join('\n')}\n`);
  }
  return ExitCode.ok;
}

import { Command } from 'commander';
import { ENVIRONMENT_HELP, EXIT_CODES_HELP, oneLine, PROGRAM, USAGE_HINT } from './cli.messages';
import type { CommandRunner } from './command-runner';
import { registerAcquire } from './commands/acquire.command';
import { registerExec } from './commands/exec.command';
import { registerInspect } from './commands/inspect.command';
import { registerLead } from './commands/lead.command';
import { registerList } from './commands/list.command';
import { registerRelease } from './commands/release.command';
import { registerRenew } from './commands/renew.command';
import { registerTableCheck } from './commands/table-check.command';
import { registerTableCreate } from './commands/table-create.command';
import { addGlobalOptions } from './global-options';
import { packageVersion } from './version';

const EXAMPLES = `
Examples:
  $ dynamo-lock table-create --table locks
  $ dynamo-lock exec deploy --wait 10m -- ./deploy.sh
  $ dynamo-lock lead scheduler -- node scheduler.js
  $ LEASE=$(dynamo-lock acquire deploy --lease-duration '15 minutes') && ./deploy.sh; dynamo-lock release deploy "$LEASE"
  $ dynamo-lock list --prefix deploy

Durations: a number with a unit, e.g. 500ms, 30s, '15 minutes', 1m30s, 1h30m, '2 hours', 1d.`;

/**
 * The `dynamo-lock` command line: global options, every command, help with examples and
 * exit codes. Commander's own exits (help, version, usage errors) are thrown as
 * `CommanderError`s instead of ending the process.
 */
export function buildProgram(runner: CommandRunner): Command {
  const { io } = runner;
  const program = new Command(PROGRAM)
    .description('Distributed locks on DynamoDB for shell scripts, deploy jobs and CI: flock(1) across machines.')
    .version(packageVersion(), '-V, --version', 'print the version')
    .helpOption('-h, --help', 'show help (every command has its own, with examples)')
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.out(text),
      writeErr: (text) => io.errText(text),
      outputError: (text, write) => write(`${PROGRAM}: ${oneLine(text.replace(/^error: /, ''))} ${USAGE_HINT()}\n`),
    })
    .configureHelp({ showGlobalOptions: true })
    .showSuggestionAfterError(true);
  addGlobalOptions(program);
  registerTableCreate(program, runner);
  registerTableCheck(program, runner);
  registerAcquire(program, runner);
  registerRenew(program, runner);
  registerRelease(program, runner);
  registerExec(program, runner);
  registerLead(program, runner);
  registerInspect(program, runner);
  registerList(program, runner);
  program.addHelpText('after', `${EXAMPLES}\n\n${EXIT_CODES_HELP()}\n\n${ENVIRONMENT_HELP()}`);
  return program;
}

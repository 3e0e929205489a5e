import type { Command } from 'commander';

/** Commands that take a lease id argument. */
const LEASE_COMMANDS = new Set(['renew', 'release']);

/** A lease id: 128 random bits in base64url, 22 characters, and so 1 in 64 begins with "-". */
const LEASE_ID = /^[A-Za-z0-9_-]{22}$/;

/**
 * Makes lease ids that begin with "-" reach `renew` and `release` as arguments. Commander
 * would read `-hQ3...` as `-h` (help: exit 0, nothing released) and `-GPX...` as an unknown
 * option, so such an id is moved behind a `--`, where only arguments are read.
 * @param argv as `process.argv`; returned unchanged for every other command.
 */
export function protectLeaseIds(argv: readonly string[], program: Command): string[] {
  const args = [...argv];
  const end = args.indexOf('--');
  const stop = end < 0 ? args.length : end;
  const commandAt = args.findIndex((arg, index) => index >= 2 && index < stop && LEASE_COMMANDS.has(arg));
  if (commandAt < 0) return args;
  const flags = knownFlags(program);
  const moved: string[] = [];
  for (let index = stop - 1; index > commandAt; index--) {
    const arg = args[index];
    if (arg.startsWith('-') && LEASE_ID.test(arg) && !flags.has(arg)) moved.unshift(...args.splice(index, 1));
  }
  if (moved.length === 0) return args;
  const separator = args.indexOf('--');
  if (separator < 0) return [...args, '--', ...moved];
  args.splice(separator + 1, 0, ...moved);
  return args;
}

/** Every option flag of the program and its commands (`-q`, `--table`, `--no-wait`, ...). */
function knownFlags(program: Command): Set<string> {
  const flags = new Set<string>();
  for (const command of [program, ...program.commands]) {
    for (const option of command.options) {
      if (option.short) flags.add(option.short);
      if (option.long) flags.add(option.long);
    }
  }
  return flags;
}

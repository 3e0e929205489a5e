import { type Command, Option } from 'commander';

/** The options every command takes, from the command line or the environment. */
export interface GlobalOptions {
  table?: string;
  endpoint?: string;
  region?: string;
  profile?: string;
  owner?: string;
  keyPrefix?: string;
  partitionKey?: string;
  /** `NAME=VALUE`, as given. */
  sortKey?: string;
  quiet?: boolean;
  debug?: boolean;
}

/** Adds the global options to the program; subcommands inherit them. */
export function addGlobalOptions(program: Command): Command {
  const options = [
    new Option('--table <name>', 'DynamoDB lock table (default "nestjs-dynamo-lock")').env('DYNAMO_LOCK_TABLE'),
    new Option('--endpoint <url>', 'DynamoDB endpoint, e.g. http://localhost:8000 for DynamoDB Local').env('DYNAMODB_ENDPOINT'),
    new Option('--region <region>', 'AWS region').env('AWS_REGION'),
    new Option('--profile <name>', 'AWS profile from ~/.aws/config and ~/.aws/credentials').env('AWS_PROFILE'),
    new Option('--owner <name>', 'owner name stored with locks you take (default user@host, plus :pid for exec)').env('DYNAMO_LOCK_OWNER'),
    new Option('--key-prefix <prefix>', 'prefix added to every lock name, to share a table between apps').env('DYNAMO_LOCK_KEY_PREFIX'),
    new Option(
      '--partition-key <name>',
      'partition key attribute of the table, for locks in a table shared with your items (default "key")',
    ).env('DYNAMO_LOCK_PARTITION_KEY'),
    new Option(
      '--sort-key <name=value>',
      "the table's sort key and the value lock items have in it, e.g. SK=LOCK (default: no sort key)",
    ).env('DYNAMO_LOCK_SORT_KEY'),
    new Option('-q, --quiet', 'no progress line or notes on stderr; errors only'),
    new Option('--debug', 'log the lock engine and print stack traces on stderr'),
  ];
  for (const option of options) program.addOption(option.helpGroup('Global Options:'));
  return program;
}

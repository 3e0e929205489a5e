import { inspect } from 'node:util';
import { CommanderError } from 'commander';
import {
  LockBusyError,
  LockConfigurationError,
  LockLostError,
  LockTableError,
  LockValidationError,
  LockUnavailableError,
} from '../errors/lock.errors';
import type { LockTableKeys } from '../interfaces/lock-table-keys.interface';
import { connectionProblem } from '../store/dynamo/transient-error';
import {
  AWS_ERROR,
  ENDPOINT_UNREACHABLE,
  errorText,
  NO_CREDENTIALS,
  NO_REGION,
  oneLine,
  PROGRAM,
  TABLE_NOT_FOUND,
  UNEXPECTED,
} from './cli.messages';
import { CliError } from './cli.errors';
import { ExitCode } from './exit-codes';
import type { CliIo } from './io';

/** What the failing command was talking to, for clearer messages. */
export interface ErrorContext {
  tableName?: string;
  endpoint?: string;
  /** The table's key attributes, when not the default ones: table-create needs them too. */
  tableKeys?: LockTableKeys;
}

/** How an error ends the CLI: its exit code and the line to print (none if already printed). */
export interface ErrorOutcome {
  exitCode: number;
  message: string | undefined;
}

interface ErrorShape {
  name?: unknown;
  code?: unknown;
  message?: unknown;
  errors?: unknown;
  $metadata?: unknown;
}

/** Maps an error to its exit code and its one-line message. */
export function classifyError(error: unknown, context: ErrorContext = {}): ErrorOutcome {
  if (error instanceof CommanderError) return { exitCode: error.exitCode === 0 ? ExitCode.ok : ExitCode.usage, message: undefined };
  if (error instanceof CliError) return { exitCode: error.exitCode, message: error.message };
  if (error instanceof LockBusyError) return { exitCode: ExitCode.busy, message: error.message };
  if (error instanceof LockValidationError) return { exitCode: ExitCode.usage, message: error.message };
  if (error instanceof LockLostError) return { exitCode: ExitCode.lost, message: error.message };
  // An outage while taking a lock: said as the library says it (no answer showed a holder).
  if (error instanceof LockUnavailableError) return { exitCode: ExitCode.infrastructure, message: error.message };
  // A missing table: the CLI's own advice (--table, table-create), not the module's options.
  if (error instanceof LockTableError && error.problem === 'missing') {
    return { exitCode: ExitCode.infrastructure, message: TABLE_NOT_FOUND(error.tableName, context.tableKeys, error.location) };
  }
  // The table check words SDK failures for the library's options; the CLI says them its own way
  // (--endpoint, --region, --profile), as for every other command.
  if (error instanceof LockConfigurationError && !(error instanceof LockTableError) && isSdkFailure(error.cause)) {
    return classifyError(error.cause, context);
  }
  if (error instanceof LockConfigurationError) return { exitCode: ExitCode.infrastructure, message: error.message };
  return { exitCode: ExitCode.infrastructure, message: describeInfrastructureError(error, context) };
}

/** Prints an error as one line on stderr (with the stack after it under `--debug`) and returns its exit code. */
export function reportError(error: unknown, io: CliIo, debug: boolean, context: ErrorContext = {}): number {
  const { exitCode, message } = classifyError(error, context);
  if (message !== undefined) io.err(`${PROGRAM}: ${oneLine(message)}`);
  if (debug && !(error instanceof CommanderError)) {
    for (let cause: unknown = error; cause !== undefined; cause = cause instanceof Error ? cause.cause : undefined) {
      io.err(cause instanceof Error && cause.stack ? cause.stack : inspect(cause));
    }
  }
  return exitCode;
}

function describeInfrastructureError(error: unknown, context: ErrorContext): string {
  if (typeof error !== 'object' || error === null) return UNEXPECTED(error);
  const shape = error as ErrorShape;
  const name = typeof shape.name === 'string' ? shape.name : 'Error';
  const message = typeof shape.message === 'string' ? shape.message : '';
  if (name === 'ResourceNotFoundException' && context.tableName) return TABLE_NOT_FOUND(context.tableName, context.tableKeys);
  const problem = connectionProblem(error);
  if (problem?.kind === 'no-credentials') return NO_CREDENTIALS(message);
  if (problem?.kind === 'no-region') return NO_REGION();
  if (problem) return ENDPOINT_UNREACHABLE(context.endpoint, networkDetail(problem.error));
  if (shape.$metadata !== undefined) return AWS_ERROR(name, message);
  return UNEXPECTED(error);
}

/** `connect ECONNREFUSED 127.0.0.1:1`, `TimeoutError: ...`: the error that tells why no connection was made. */
function networkDetail(error: unknown): string {
  const code = (error as ErrorShape).code;
  return errorText(error) || (typeof code === 'string' ? code : 'no connection');
}

/** An error of the SDK: DynamoDB's answer, or a request that could not be sent. */
function isSdkFailure(error: unknown): boolean {
  return connectionProblem(error) !== undefined || (typeof error === 'object' && error !== null && '$metadata' in error);
}

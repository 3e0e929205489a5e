import { inspect } from 'node:util';
import { CommanderError } from 'commander';
import { LockBusyError, LockConfigurationError, LockLostError, LockValidationError } from '../errors/lock.errors';
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
}

/** How an error ends the CLI: its exit code and the line to print (none if already printed). */
export interface ErrorOutcome {
  exitCode: number;
  message: string | undefined;
}

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  'ECONNABORTED',
]);

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
  if (name === 'ResourceNotFoundException' && context.tableName) return TABLE_NOT_FOUND(context.tableName);
  if (name === 'CredentialsProviderError') return NO_CREDENTIALS(message);
  if (/region is missing/i.test(message)) return NO_REGION();
  const network = networkDetail(shape);
  if (network) return ENDPOINT_UNREACHABLE(context.endpoint, network);
  if (shape.$metadata !== undefined) return AWS_ERROR(name, message);
  return UNEXPECTED(error);
}

/** `connect ECONNREFUSED 127.0.0.1:1`, `TimeoutError: ...`, or `undefined` when not a network failure. */
function networkDetail(shape: ErrorShape): string | undefined {
  if (typeof shape.code === 'string' && NETWORK_CODES.has(shape.code)) return errorText(shape) || shape.code;
  if (shape.name === 'TimeoutError' || shape.name === 'RequestTimeout') return errorText(shape);
  // Node reports a failed connection to every address of a host as an AggregateError.
  if (Array.isArray(shape.errors)) {
    const first = shape.errors.find((inner): inner is ErrorShape => typeof inner === 'object' && inner !== null);
    if (first) return networkDetail(first);
  }
  return undefined;
}

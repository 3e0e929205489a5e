import {
  BadRequestException,
  type CallHandler,
  ConflictException,
  type ExecutionContext,
  Inject,
  Injectable,
  type NestInterceptor,
  Optional,
  ServiceUnavailableException,
} from '@nestjs/common';
import { catchError, type Observable, throwError } from 'rxjs';
import { LockBusyError, LockKeyError, type LockKeyProblem, LockUnavailableError } from '../errors/lock.errors';
import { LOCK_BUSY_HTTP, LOCK_KEY_INVALID_HTTP, LOCK_UNAVAILABLE_HTTP } from '../errors/lock.messages';

/** Options of {@link LockInterceptor}. */
export interface LockInterceptorOptions {
  /**
   * Tell HTTP clients who holds a busy lock: the holder's owner name (host and pid by default)
   * and fencing token in the 409 body. Off by default: they are internal details.
   */
  exposeHolder?: boolean;
}

/** Injection token of {@link LockInterceptorOptions}, for an interceptor Nest creates. */
export const LOCK_INTERCEPTOR_OPTIONS = Symbol('nestjs-dynamo-lock:interceptor-options');

/** The JSON body of a 409 answer for a busy lock. */
export interface LockConflictBody {
  statusCode: 409;
  error: 'Conflict';
  message: string;
  /** The lock key that was busy. */
  resource: string;
  /** Owner name of the holder, when known and `exposeHolder` is on. */
  holder?: string;
  /** The holder's fencing token, when known and `exposeHolder` is on. */
  fencingToken?: number;
}

/** The JSON body of a 503 answer for a lock DynamoDB did not let the app take (an outage, not a busy lock). */
export interface LockUnavailableBody {
  statusCode: 503;
  error: 'Service Unavailable';
  message: string;
  /** The lock key that could not be acquired. */
  resource: string;
}

/** The JSON body of a 400 answer for a request whose values make no valid lock key. */
export interface LockKeyInvalidBody {
  statusCode: 400;
  error: 'Bad Request';
  message: string;
  /** What is wrong with the key. */
  problem: LockKeyProblem;
}

/**
 * Gives HTTP semantics to busy locks: a `LockBusyError` thrown by the handler (by `@WithLock`
 * on it, or by any service it calls) becomes `409 Conflict` with a JSON body naming the resource
 * (the holder only with `exposeHolder`), and a `Retry-After` header (seconds): when the holder is
 * expected to release, from how long holders of the key usually keep it, else its lease (the
 * longest a crashed holder can block the key). A `LockUnavailableError` (DynamoDB failed or did not answer,
 * and no answer showed another holder) becomes `503 Service Unavailable` with `Retry-After`: the
 * request time limit, in seconds, at least 1. A `LockKeyError` (the request's values make no valid
 * key: a `@WithLock` value missing or blank, a key too long) becomes `400 Bad Request`, whose body
 * says what is wrong without naming the class, method or template. Other errors, and other
 * contexts (RPC, WebSocket), are left unchanged.
 *
 * @example
 * ```ts
 * @UseInterceptors(LockInterceptor)      // or new LockInterceptor({ exposeHolder: true })
 * @Post(':id/pay')
 * @WithLock('invoice-<0>', { wait: false })
 * async pay(@Param('id') id: string): Promise<Receipt> { ... }
 * ```
 */
@Injectable()
export class LockInterceptor implements NestInterceptor {
  private readonly exposeHolder: boolean;

  constructor(@Optional() @Inject(LOCK_INTERCEPTOR_OPTIONS) options: LockInterceptorOptions = {}) {
    this.exposeHolder = options.exposeHolder === true;
  }

  /** @internal */
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return next.handle().pipe(
      catchError((error: unknown) => {
        if (context.getType() !== 'http') return throwError(() => error);
        if (error instanceof LockKeyError) {
          const body: LockKeyInvalidBody = {
            statusCode: 400,
            error: 'Bad Request',
            message: LOCK_KEY_INVALID_HTTP(error.problem),
            problem: error.problem,
          };
          return throwError(() => new BadRequestException(body, { cause: error }));
        }
        if (error instanceof LockUnavailableError) {
          retryAfter(context, error.requestTimeoutMs);
          const body: LockUnavailableBody = {
            statusCode: 503,
            error: 'Service Unavailable',
            message: LOCK_UNAVAILABLE_HTTP(error.key),
            resource: error.key,
          };
          return throwError(() => new ServiceUnavailableException(body, { cause: error }));
        }
        if (!(error instanceof LockBusyError)) return throwError(() => error);
        const wait = error.releaseInMs ?? error.holder?.leaseDuration;
        if (wait !== undefined) retryAfter(context, wait);
        const body: LockConflictBody = {
          statusCode: 409,
          error: 'Conflict',
          message: this.exposeHolder ? error.message : LOCK_BUSY_HTTP(error.key),
          resource: error.key,
        };
        if (this.exposeHolder) Object.assign(body, { holder: error.holder?.owner, fencingToken: error.holder?.fencingToken });
        return throwError(() => new ConflictException(body, { cause: error }));
      }),
    );
  }
}

/** Sets `Retry-After` to `ms` in whole seconds, at least 1 (Express and Fastify responses). */
function retryAfter(context: ExecutionContext, ms: number): void {
  const response = context
    .switchToHttp()
    .getResponse<{ setHeader?: (name: string, value: string) => void; header?: (name: string, value: string) => void }>();
  const value = String(Math.max(1, Math.ceil(ms / 1000)));
  if (typeof response.setHeader === 'function') response.setHeader('Retry-After', value);
  else response.header?.('Retry-After', value);
}

import { type CallHandler, ConflictException, type ExecutionContext, Injectable, type NestInterceptor } from '@nestjs/common';
import { catchError, type Observable, throwError } from 'rxjs';
import { LockBusyError } from '../errors/lock.errors';

/** The JSON body of a 409 answer for a busy lock. */
export interface LockConflictBody {
  statusCode: 409;
  error: 'Conflict';
  message: string;
  /** The lock key that was busy. */
  resource: string;
  /** Owner name of the holder, when known. */
  holder?: string;
}

/**
 * Gives HTTP semantics to busy locks: a `LockBusyError` thrown by the handler (by `@WithLock`
 * on it, or by any service it calls) becomes `409 Conflict` with a JSON body naming the
 * resource, and a `Retry-After` header (seconds) when the holder's lease is known: the longest
 * a crashed holder can block the key. Other contexts (RPC, WebSocket) get the error unchanged.
 *
 * @example
 * ```ts
 * @UseInterceptors(LockInterceptor)
 * @Post(':id/pay')
 * @WithLock('invoice-<0>', { wait: false })
 * pay(@Param('id') id: string) { ... }
 * ```
 */
@Injectable()
export class LockInterceptor implements NestInterceptor {
  /** @internal */
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return next.handle().pipe(
      catchError((error: unknown) => {
        if (!(error instanceof LockBusyError) || context.getType() !== 'http') return throwError(() => error);
        const lease = error.holder?.leaseDuration;
        if (lease) {
          const response = context
            .switchToHttp()
            .getResponse<{ setHeader?: (name: string, value: string) => void; header?: (name: string, value: string) => void }>();
          const value = String(Math.max(1, Math.ceil(lease / 1000)));
          if (typeof response.setHeader === 'function') response.setHeader('Retry-After', value);
          else response.header?.('Retry-After', value);
        }
        const body: LockConflictBody = {
          statusCode: 409,
          error: 'Conflict',
          message: error.message,
          resource: error.key,
          holder: error.holder?.owner,
        };
        return throwError(() => new ConflictException(body));
      }),
    );
  }
}

/**
 * Type expectations of `@WithLock`, checked by `npm run typecheck` (part of `npm test`): each
 * `@ts-expect-error` line must be an error, and everything else must compile.
 */
import { Injectable } from '@nestjs/common';
import { type Observable, of } from 'rxjs';
import { WithLock } from '../../lib';

type Stream<T> = Observable<T>;

@Injectable()
export class Accepted {
  @WithLock('a-<0>')
  async pay(id: string): Promise<string> {
    return id;
  }

  @WithLock('b')
  stream(): Observable<number> {
    return of(1);
  }

  @WithLock('c')
  aliased(): Stream<number> {
    return of(1);
  }

  @WithLock('d', { onBusy: 'skip' })
  async job(): Promise<void> {}

  @WithLock('e', { onBusy: 'skip' })
  async report(): Promise<string | undefined> {
    return 'done';
  }
}

@Injectable()
export class Rejected {
  // @ts-expect-error a synchronous result would become a Promise at run time
  @WithLock('f')
  add(a: number, b: number): number {
    return a + b;
  }

  // @ts-expect-error nothing says the result is a Promise or an Observable
  @WithLock('g')
  opaque(): unknown {
    return of(1);
  }

  // @ts-expect-error an optional Observable is neither
  @WithLock('h')
  maybe(): Observable<number> | undefined {
    return of(1);
  }

  // @ts-expect-error a skipped call resolves to undefined, which Promise<string> does not allow
  @WithLock('i', { onBusy: 'skip' })
  async skipped(): Promise<string> {
    return 'never undefined?';
  }

  // @ts-expect-error a void method has no result to wait for
  @WithLock('j')
  fire(): void {}
}

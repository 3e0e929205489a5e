/**
 * Type expectations of `@WhenLeader`, checked by `npm run typecheck` (part of `npm test`): each
 * `@ts-expect-error` line must be an error, and everything else must compile.
 */
import { Injectable } from '@nestjs/common';
import { type Observable, of } from 'rxjs';
import { WhenLeader } from '../../lib';

@Injectable()
export class LeaderJobs {
  @WhenLeader('scheduler')
  async job(): Promise<void> {}

  @WhenLeader('scheduler')
  async report(): Promise<string | undefined> {
    return 'done';
  }

  @WhenLeader('scheduler', { leaseDuration: '10s', watchInterval: '1s', data: { host: 'a' } })
  tick(): void {}

  @WhenLeader('scheduler')
  count(): number | undefined {
    return 1;
  }

  @WhenLeader('scheduler')
  stream(): Observable<number | undefined> {
    return of(1);
  }

  @WhenLeader('scheduler')
  events(): Observable<void> {
    return of(undefined);
  }
}

@Injectable()
export class RejectedLeaderJobs {
  // @ts-expect-error a follower's call resolves to undefined, which Promise<string> does not allow
  @WhenLeader('scheduler')
  async report(): Promise<string> {
    return 'never undefined?';
  }

  // @ts-expect-error a follower's call returns undefined, which number does not allow
  @WhenLeader('scheduler')
  count(): number {
    return 1;
  }

  // @ts-expect-error a follower's Observable emits undefined, which Observable<number> does not allow
  @WhenLeader('scheduler')
  stream(): Observable<number> {
    return of(1);
  }

  // @ts-expect-error onElected belongs to lead(): @WhenLeader takes the campaign's options only
  @WhenLeader('scheduler', { onElected: () => undefined })
  async other(): Promise<void> {}
}

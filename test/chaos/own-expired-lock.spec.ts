/**
 * Regression for what the chaos suite reported as "waiting on its own expired lease": a process is paused past its lease, so the lock
 * is lost locally (`lock.signal` aborts, as it must), but nobody took it over meanwhile and the item
 * still holds the process's token. Its `release()` then writes nothing, and the same process's next
 * acquisition of the key waits a whole lease on its own token — although the token is provably
 * nobody's. The engine remembers it, like failed releases and abandoned waiters
 * (`own-lock-waits.spec.ts`), and takes it back at once.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { LockLostError } from '../../lib';
import { LockFixture } from '../support/lock-fixture';
import { describeEachServer } from '../support/servers';

const LEASE_MS = 3_000;
let keySeq = 0;
const newKey = (name: string) => `own-expired-${name}-${++keySeq}`;

/** A pause of this process (a GC pause, a blocked event loop, a SIGSTOP). */
function blockEventLoop(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy
  }
}

describeEachServer('own lease that ran out locally', (server) => {
  const fixture = new LockFixture(server);
  beforeAll(() => fixture.setup(), 30_000);
  afterAll(() => fixture.close());

  it('after a pause past its lease, the same process takes its own expired token back at once', async () => {
    const key = newKey('pause');
    const mine = fixture.manager({ ownerName: 'mine-expired', leaseDuration: LEASE_MS });
    const lock = await mine.acquire(key);
    blockEventLoop(LEASE_MS + 300);
    // Lost locally, as it must be after a pause longer than the lease...
    expect(lock.signal.aborted).toBe(true);
    expect(lock.signal.reason).toBeInstanceOf(LockLostError);
    expect((lock.signal.reason as LockLostError).reason).toBe('expired');
    // ...while the item still holds this process's token: nobody took it over.
    expect((await mine.inspect(key))?.owner).toBe('mine-expired');
    expect(await lock.release()).toBe(false);

    const started = performance.now();
    const again = await mine.acquire(key, { wait: 2 * LEASE_MS });
    const tookMs = performance.now() - started;
    await again.release();
    expect(tookMs).toBeLessThan(LEASE_MS / 3);
  }, 20_000);
});

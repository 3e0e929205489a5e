/** Leases longer than Node's longest timer (24.8 days for two leases of waiting) still wait. */
import { describe, expect, it } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import { LockManager } from '../../lib';
import { MemoryLockStore } from '../../lib/store/memory-lock.store';
import { MemoryLogger } from '../support/lock-fixture';

describe('a 13-day lease', () => {
  it('makes a second caller wait (its default wait, two leases, is kept within the longest timer), not fail at once', async () => {
    const store = new MemoryLockStore();
    const options = { store, leaseDuration: '13d', logger: new MemoryLogger() };
    const [a, b] = [new LockManager(options), new LockManager(options)];
    const held = await a.acquire('long');
    const cancel = new AbortController();
    let settled = false;
    const waiting = b.acquire('long', { signal: cancel.signal }).finally(() => (settled = true));
    await sleep(150);
    expect(settled).toBe(false);
    cancel.abort(new Error('enough'));
    await expect(waiting).rejects.toThrow('enough');
    await held.release();
    await Promise.all([a.close(), b.close()]);
  });
});

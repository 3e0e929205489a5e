import { describe, expect, it } from '@jest/globals';
import { LockLostError } from '../../../../lib';
import type { AcquireOptions } from '../../../../lib/interfaces/acquire-options.interface';
import type { Lock } from '../../../../lib/core/engine/lock';
import { acquireMulti, type MultiLockHost } from '../../../../lib/core/multi/multi-acquisition';

/** A stand-in for one key's lock: held until `lose()` (as a lease run out on the local clock). */
function fakeLock(key: string, token: number) {
  const controller = new AbortController();
  let held = true;
  const lock = {
    key,
    owner: 'me',
    fencingToken: token,
    leaseId: `${key}-${token}`,
    acquiredAt: new Date(),
    signal: controller.signal,
    get isHeld() {
      return held;
    },
  };
  return {
    lock: lock as unknown as Lock,
    lose: () => {
      held = false;
      controller.abort(new LockLostError(`lost ${key}`, key, 'expired'));
    },
  };
}

/** A host whose keys are taken one by one; `onAcquire` sees each call (key, attempt). */
function hostOf(onAcquire: (key: string, calls: number, taken: Map<string, ReturnType<typeof fakeLock>>) => void, waitMs = 5_000) {
  const calls: { key: string; options: AcquireOptions }[] = [];
  const released: Lock[] = [];
  const taken = new Map<string, ReturnType<typeof fakeLock>>();
  const host: MultiLockHost = {
    keyPrefix: '',
    waitMs,
    acquireOne: async (_scope, key, options) => {
      calls.push({ key, options });
      const lock = fakeLock(key, calls.length);
      taken.set(key, lock);
      onAcquire(key, calls.length, taken);
      return lock.lock;
    },
    held: () => undefined,
    isRead: () => false,
    releaseQuietly: async (lock) => void released.push(lock),
    acquireAll: async () => undefined,
  };
  return { host, calls, released };
}

describe('acquireMulti: every part still held before the set is returned', () => {
  it('an early key that ran out while a later one was waited for: all released, taken again in order', async () => {
    // The first time b is taken, a has run out meanwhile.
    const { host, calls, released } = hostOf((key, n, taken) => {
      if (key === 'b' && n === 2) taken.get('a')!.lose();
    });
    const lock = await acquireMulti(host, 'acquire()', ['b', 'a'], { wait: '5s' });
    expect(calls.map(({ key }) => key)).toEqual(['a', 'b', 'a', 'b']);
    expect(released.map((part) => part.key).sort()).toEqual(['a', 'b']);
    expect(lock.isHeld).toBe(true);
    expect(lock.fencingTokenOf('a')).toBe(3);
  });

  it('with the wait used up: the lost key’s LockLostError, nothing kept', async () => {
    const { host, released } = hostOf((key, _n, taken) => {
      if (key === 'b') taken.get('a')!.lose();
    });
    const error = await acquireMulti(host, 'acquire()', ['a', 'b'], { wait: false }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockLostError);
    expect((error as LockLostError).key).toBe('a');
    expect(released.map((part) => part.key).sort()).toEqual(['a', 'b']);
  });

  it('a fast-path grant with a part no longer held: released, then the ordered path', async () => {
    const { host, calls, released } = hostOf(() => undefined);
    const stale = fakeLock('a', 100);
    stale.lose();
    host.acquireAll = async () => [stale.lock, fakeLock('b', 101).lock];
    const lock = await acquireMulti(host, 'acquire()', ['a', 'b'], {});
    expect(released).toHaveLength(2);
    expect(calls.map(({ key }) => key)).toEqual(['a', 'b']);
    expect(lock.isHeld).toBe(true);
  });
});

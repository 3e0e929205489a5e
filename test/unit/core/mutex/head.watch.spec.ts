/**
 * The watch of the version at the head of a key's line, as pure logic on given monotonic times:
 * the pass falls due after a whole lease of silence, the roll call half-way through it, and the
 * pass goes to the smallest live ticket, the waiter's own, or the next one.
 */
import { describe, expect, it } from '@jest/globals';
import { KeyHistory } from '../../../../lib/core/engine/key-history';
import { HeadWatch, skipTarget, TIMING_READ_SHARE } from '../../../../lib/core/mutex/head.watch';
import type { LockRecord } from '../../../../lib/store/mutex/mutex.record';
import { CLAIM_LEASE_MS } from '../../../../lib/store/mutex/mutex-store.protocol';

const KEY = 'report';
const LEASE = 1_000;
const T0 = 5_000;

/** The item held by ticket 10 (token `holder`, lease 1 s), with tickets 11 to 14 taken behind it. */
function held(extra: Partial<LockRecord> = {}): LockRecord {
  return { key: KEY, token: 'holder', rvn: 'v1', leaseMs: LEASE, head: 10, tail: 15, ...extra };
}

/** A watch of `record` started at {@link T0}. */
function watching(record = held(), history = new KeyHistory()): { watch: HeadWatch; history: KeyHistory } {
  const watch = new HeadWatch(history, KEY, 30_000);
  watch.start(record, record.rvn!, T0, { owner: 'other', fencingToken: 7, leaseDuration: LEASE });
  return { watch, history };
}

describe('HeadWatch', () => {
  it('has nothing due before it watches anything', () => {
    const watch = new HeadWatch(new KeyHistory(), KEY, 30_000);
    expect(watch.observed).toBeUndefined();
    expect(watch.passDue(Number.MAX_SAFE_INTEGER)).toBe(false);
    expect(watch.dueAt(held(), 11)).toBeUndefined();
    expect(watch.shouldMarkAlive(Number.MAX_SAFE_INTEGER, held(), 11)).toBe(false);
  });

  it('makes the pass due once the version stayed the same for the holder’s whole lease', () => {
    const { watch } = watching();
    expect(watch.passDue(T0)).toBe(false);
    expect(watch.passDue(T0 + LEASE - 1)).toBe(false);
    expect(watch.passDue(T0 + LEASE)).toBe(true);
  });

  it('counts from the first time the version was seen, across watches and calls of this process', () => {
    const history = new KeyHistory();
    const { watch } = watching(held(), history);
    // Seen again later (the same version): the watch does not start anew.
    watch.start(held(), 'v1', T0 + 600, undefined);
    expect(watch.passDue(T0 + LEASE)).toBe(true);
    // A later call's watch of the key goes on from the same first sighting.
    const later = new HeadWatch(history, KEY, 30_000);
    expect(later.observed?.at).toBe(T0);
    expect(later.passDue(T0 + LEASE)).toBe(true);
  });

  it('starts anew when the version changes (a heartbeat)', () => {
    const { watch } = watching();
    watch.start(held({ rvn: 'v2' }), 'v2', T0 + 900, undefined);
    expect(watch.passDue(T0 + LEASE)).toBe(false);
    expect(watch.passDue(T0 + 900 + LEASE)).toBe(true);
  });

  it('gives a promoted waiter that has not written the claim lease of the line', () => {
    const promoted = held({ token: undefined, leaseMs: undefined, claimMs: 2_000 });
    const { watch } = watching(promoted);
    expect(watch.observed?.leaseMs).toBe(2_000);
    expect(watch.passDue(T0 + 1_999)).toBe(false);
    expect(watch.passDue(T0 + 2_000)).toBe(true);
    // No claim lease in the item: the longest.
    const { watch: unknown } = watching(held({ token: undefined, leaseMs: undefined }));
    expect(unknown.observed?.leaseMs).toBe(CLAIM_LEASE_MS);
  });

  it('calls the roll call half-way through the lease, for a ticket behind the head', () => {
    const { watch } = watching();
    const seen = held();
    expect(watch.shouldMarkAlive(T0 + LEASE / 2 - 1, seen, 12)).toBe(false);
    expect(watch.shouldMarkAlive(T0 + LEASE / 2, seen, 12)).toBe(true);
    expect(watch.dueAt(seen, 12)).toBe(T0 + LEASE / 2);
    // A far-back timing read waits for three quarters of the lease.
    expect(watch.dueAt(seen, 12, true)).toBe(T0 + TIMING_READ_SHARE * LEASE);
  });

  it('leaves the roll call to others: no ticket, the head’s own ticket, or a smaller ticket answered', () => {
    const { watch } = watching();
    const late = T0 + LEASE / 2;
    expect(watch.shouldMarkAlive(late, held(), undefined)).toBe(false);
    expect(watch.shouldMarkAlive(late, held(), 10)).toBe(false);
    expect(watch.shouldMarkAlive(late, held({ live: 11 }), 12)).toBe(false);
    // A larger ticket answered: a smaller one answers too, so the pass goes to it.
    expect(watch.shouldMarkAlive(late, held({ live: 13 }), 12)).toBe(true);
    // Not answering, it waits for the pass.
    expect(watch.dueAt(held(), undefined)).toBe(T0 + LEASE);
  });

  it('answers the roll call of a version once, and then waits for the pass', () => {
    const { watch } = watching();
    const seen = held();
    const watched = watch.answered(seen, 12, true);
    expect(watched).toEqual({ ...seen, live: 12 });
    expect(watch.view(held({ rvn: 'other' }))).toBe(watched);
    expect(watch.shouldMarkAlive(T0 + LEASE / 2, seen, 12)).toBe(false);
    expect(watch.dueAt(seen, 12)).toBe(T0 + LEASE);
    // A new version has a roll call of its own.
    watch.start(held({ rvn: 'v2' }), 'v2', T0 + 800, undefined);
    expect(watch.shouldMarkAlive(T0 + 800 + LEASE / 2, held({ rvn: 'v2' }), 12)).toBe(true);
  });

  it('keeps the item it watched when its answer to the roll call was refused, and does not answer that version again', () => {
    const { watch } = watching();
    expect(watch.answered(held(), 12, false)).toBeUndefined();
    expect(watch.view(undefined)).toEqual(held());
    expect(watch.shouldMarkAlive(T0 + LEASE, held(), 12)).toBe(false);
  });

  it('counts a read’s round trip: the roll call is due when the answer would come after it', () => {
    const history = new KeyHistory();
    for (let i = 0; i < 4; i++) history.recordRoundTrip(40);
    const { watch } = watching(held(), history);
    expect(watch.due(held(), 12, T0 + LEASE / 2 - 41)).toBe(false);
    expect(watch.due(held(), 12, T0 + LEASE / 2 - 40)).toBe(true);
  });

  it('tells whether the pass goes to this waiter’s ticket, by the item the watch started from', () => {
    expect(watching(held()).watch.passesTo(undefined, 12)).toBe(true);
    expect(watching(held({ live: 11 })).watch.passesTo(undefined, 12)).toBe(false);
    expect(watching(held({ live: 11 })).watch.passesTo(undefined, 11)).toBe(true);
    expect(watching(held()).watch.passesTo(undefined, undefined)).toBe(false);
  });

  it('stops watching, here and in the key’s history', () => {
    const { watch, history } = watching();
    watch.stop();
    expect(watch.observed).toBeUndefined();
    expect(watch.view(undefined)).toBeUndefined();
    expect(history.observation(KEY)).toBeUndefined();
    expect(watch.passDue(T0 + 10 * LEASE)).toBe(false);
  });
});

describe('skipTarget', () => {
  it('passes to the smallest ticket that answered the roll call', () => {
    const seen = held({ live: 12 });
    expect(skipTarget(seen, 14)).toEqual({ target: 12, mine: false, seen });
    expect(skipTarget(seen, undefined)).toEqual({ target: 12, mine: false, seen });
  });

  it('passes to the waiter’s own ticket when no smaller one answered', () => {
    expect(skipTarget(held(), 13)).toMatchObject({ target: 13, mine: true });
    expect(skipTarget(held({ live: 14 }), 13)).toMatchObject({ target: 13, mine: true });
    expect(skipTarget(held({ live: 13 }), 13)).toMatchObject({ target: 13, mine: true });
  });

  it('passes to the next ticket when nobody answered and the waiter has none', () => {
    expect(skipTarget(held(), undefined)).toMatchObject({ target: 11, mine: false });
    expect(skipTarget(held({ head: undefined }), undefined)).toMatchObject({ target: 1, mine: false });
  });
});

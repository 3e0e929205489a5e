/**
 * What a waiter in line learns from its views of the item, and how it times its next read by it:
 * the key's hold time from the holds releasers wrote, the line's pace from the faster of the
 * spans it measured far back, and a first timing read that does not trust a guessed pace.
 */
import { describe, expect, it } from '@jest/globals';
import { KeyHistory } from '../../lib/core/engine/key-history';
import { type ReadPlan, ReadScheduler } from '../../lib/core/waiting/read.scheduler';
import type { LockRecord } from '../../lib/store/mutex/mutex.record';

const KEY = 'line';

/** The item held by ticket `head`, with 200 tickets taken behind it; `released` is the last releaser's token. */
function held(head: number, extra: Partial<LockRecord> = {}): LockRecord {
  return { key: KEY, head, tail: head + 200, token: `holder-${head}`, rvn: `v${head}`, ...extra };
}

/** A waiter's plan far back, at the default 30 s lease (5 s claim lease). */
function farPlan(ticket: number): ReadPlan {
  return { ticket, viewAgeMs: 0, viewValidMs: 1_250, far: true, farReadMs: 2_500, timingReadMs: 3_750 };
}

function history({ holdMs, roundTripMs }: { holdMs: number; roundTripMs: number }): KeyHistory {
  const facts = new KeyHistory();
  facts.recordHold(KEY, holdMs);
  for (let i = 0; i < 16; i++) facts.recordRoundTrip(roundTripMs);
  return facts;
}

/** A waiter with `ticket` far back that saw the line at each `[head, at]` (timing reads). */
function lineSeen(facts: KeyHistory, ticket: number, views: [head: number, at: number][]): ReadScheduler {
  const schedule = new ReadScheduler(facts, KEY, 1_000, 0);
  for (const [head, at] of views) schedule.noteTimingView(held(head), at, ticket);
  return schedule;
}

/** Ticket 100, far back, with holds of 20 ms: it saw the line serve 20 tickets in 800 ms (40 ms each, two spans). */
function movingLine(): { schedule: ReadScheduler; ticket: number } {
  const ticket = 100;
  const schedule = lineSeen(history({ holdMs: 20, roundTripMs: 4 }), ticket, [
    [0, 0],
    [10, 400],
    [20, 800],
  ]);
  return { schedule, ticket };
}

describe('read timing of a waiter in line', () => {
  it('takes the holds that releasers wrote into the key’s hold time', () => {
    // This process last held the key while its event loop was busy: 1 s for a 20 ms job.
    const facts = history({ holdMs: 1_000, roundTripMs: 5 });
    const schedule = new ReadScheduler(facts, KEY, 1_000, 0);
    for (let head = 1; head <= 3; head++) schedule.noteView(held(head, { released: `holder-${head - 1}`, lastHoldMs: 20 }), head * 50, 100);
    expect(facts.holdEstimate(KEY)).toBe(20);
  });

  it('counts a release seen several times once (heartbeats change the version, not the release)', () => {
    const facts = new KeyHistory();
    for (let i = 0; i < 5; i++) facts.recordHold(KEY, 30);
    const schedule = new ReadScheduler(facts, KEY, 1_000, 0);
    schedule.noteView(held(1, { released: 'holder-0', lastHoldMs: 500 }), 0, 100);
    for (let i = 0; i < 4; i++) schedule.noteView(held(1, { released: 'holder-0', lastHoldMs: 500, rvn: `v1-${i}` }), 10 + i, 100);
    schedule.noteTimingView(held(2, { released: 'holder-0', lastHoldMs: 500 }), 20, 100);
    // One slow hold among the last five: the estimate stays at the usual 30 ms.
    expect(facts.holdEstimate(KEY)).toBe(30);
  });

  it('does not count again the release its own process recorded, nor one seen by an earlier call', () => {
    const facts = new KeyHistory();
    // This process held the key 500 ms and released it (token `holder-0`).
    facts.recordHold(KEY, 500, 'holder-0');
    const first = new ReadScheduler(facts, KEY, 1_000, 0);
    first.noteView(held(1, { released: 'holder-0', lastHoldMs: 500 }), 0, 100);
    first.noteView(held(2, { released: 'holder-1', lastHoldMs: 20 }), 10, 100);
    first.noteView(held(3, { released: 'holder-2', lastHoldMs: 20 }), 20, 100);
    first.noteView(held(4, { released: 'holder-3', lastHoldMs: 500 }), 30, 100);
    // Holds 500, 20, 20, 500: the lower middle is 20 (its own release counted twice, it would be 500).
    expect(facts.holdEstimate(KEY)).toBe(20);
    // A later call of the process sees the last release again: still counted once.
    const later = new ReadScheduler(facts, KEY, 1_000, 40);
    later.noteView(held(4, { released: 'holder-3', lastHoldMs: 500 }), 40, 100);
    expect(facts.holdEstimate(KEY)).toBe(20);
  });

  it('times a far-back read by the faster of the spans it measured: a stall in the last one does not make it sleep past its turn', () => {
    const ticket = 70;
    // 20 tickets served in 1.2 s (60 ms each), then 10 in 3 s: the line stalled for a while.
    const schedule = lineSeen(history({ holdMs: 20, roundTripMs: 20 }), ticket, [
      [0, 0],
      [20, 1_200],
      [30, 4_200],
    ]);
    // 40 places from its turn: at 60 ms a turn, it is served within 2.4 s, and must read before.
    const delay = schedule.delay(4_200, farPlan(ticket));
    expect(delay).toBeLessThan(40 * 60);
    expect(delay).toBeGreaterThan(0);
  });

  it('does not take a single span slower than a usual turn for the pace (a short first span may hold a stall)', () => {
    // Holds of 20 ms and round trips of 4 ms: a usual turn is 30 ms.
    const ticket = 70;
    // 10 tickets in 800 ms: 80 ms each, a stall of a few hundred milliseconds in the span.
    const schedule = lineSeen(history({ holdMs: 20, roundTripMs: 4 }), ticket, [
      [0, 0],
      [10, 800],
    ]);
    // 60 places from its turn: taken at 30 ms a turn, it reads within 60 turns of that.
    expect(schedule.delay(800, farPlan(ticket))).toBeLessThanOrEqual(60 * 30);
  });

  it('drops the spans measured across a stall of the line: the first read after it measures the pace anew', () => {
    const { schedule, ticket } = movingLine();
    // The line stands still for 5 s (a dead head waited out), then moves again.
    schedule.noteTimingView(held(20), 3_000, ticket);
    schedule.noteTimingView(held(30), 6_000, ticket);
    const plan = farPlan(ticket);
    expect(schedule.delay(6_000, plan)).toBeLessThanOrEqual(plan.timingReadMs / 4);
  });

  it('keeps its spans when an eventually consistent read shows an older copy (a smaller head), not a stall', () => {
    const { schedule, ticket } = movingLine();
    // A replica behind by a few tickets, long after the last view.
    schedule.noteTimingView(held(15), 3_000, ticket);
    // 80 places from its turn at 40 ms a turn: aimed by that pace, not a first read that measures it anew.
    expect(schedule.delay(3_000, farPlan(ticket))).toBeGreaterThan(farPlan(ticket).timingReadMs / 4);
  });

  it.each([
    ['seen gone in between', true],
    ['not seen gone', false],
  ])('measures the pace anew when the item was deleted and created again, its tickets numbered afresh (%s)', (_, seenGone) => {
    const { schedule } = movingLine();
    if (seenGone) schedule.noteView({ key: KEY }, 900, undefined);
    // Recreated with tickets a billion further on; the line moves at 40 ms a ticket again.
    const base = 1_000_000_000;
    const ticket = base + 100;
    schedule.noteTimingView(held(base), 1_000, ticket);
    schedule.noteTimingView(held(base + 10), 1_400, ticket);
    // 90 places from its turn, 81 to its aim, at the pace of that one span (taken no slower than a
    // usual turn, 30 ms): not at holds alone (20 ms a place, 1.6 s), as a pace measured across the
    // two lines (nearly 0) would have it.
    expect(schedule.delay(1_400, farPlan(ticket))).toBeGreaterThan(2_000);
  });

  it('with no pace measured yet, reads again within a quarter of the longest pause, whatever round trips it saw', () => {
    // Round trips of 200 ms, seen in the burst of requests of a start-up: a turn guessed from
    // them (20 ms + 2.5 round trips) would be 520 ms, and 50 places 26 s.
    const facts = history({ holdMs: 20, roundTripMs: 200 });
    const schedule = new ReadScheduler(facts, KEY, 1_000, 0);
    schedule.noteView(held(0), 0, 50);
    const plan = farPlan(50);
    expect(schedule.delay(0, plan)).toBeLessThanOrEqual(plan.timingReadMs / 4);
  });

  it('with no pace measured yet and long holds, reads half-way to its turn by the holds alone', () => {
    // Holds of 200 ms: 17 places from its aim take at least 3.4 s, and the first timing read
    // comes at half of that, not within a quarter of the longest pause (940 ms).
    const facts = history({ holdMs: 200, roundTripMs: 5 });
    const schedule = new ReadScheduler(facts, KEY, 1_000, 0);
    schedule.noteView(held(0), 0, 20);
    expect(schedule.delay(0, farPlan(20))).toBeCloseTo((17 * 200) / 2);
  });

  it('counts a timer that fired very late (a paused event loop) as 100 ms late at most', () => {
    const facts = new KeyHistory();
    for (let i = 0; i < 30; i++) facts.recordTimerLateness(10_000);
    expect(facts.timerLateness()).toBeCloseTo(100, 0);
  });

  it('next in line, reads a round trip and 5 ms apart at most for two seconds of an overdue release, then 100 ms apart', () => {
    for (const facts of [history({ holdMs: 20, roundTripMs: 4 }), history({ holdMs: 0, roundTripMs: 4 })]) {
      const pausesFrom = (start: number) => {
        const schedule = new ReadScheduler(facts, KEY, 1_000, 0);
        schedule.noteView(held(5), 0, 6);
        let now = start;
        return Array.from({ length: 40 }, () => {
          const pause = schedule.delay(now, { ...farPlan(6), far: false });
          now += pause;
          return pause;
        });
      };
      // Half a second overdue: the pauses grow from a few ms, and stop growing at 9 ms (a round trip and 5 ms).
      expect(Math.max(...pausesFrom(500))).toBeCloseTo(9);
      // Ten seconds overdue (a long job's holder): they grow on to 100 ms, ten reads a second.
      expect(Math.max(...pausesFrom(10_000))).toBeCloseTo(100);
    }
  });

  it('next in line behind a holder whose start in the item is over a minute old, reads 100 ms apart from the first read (no close reads)', () => {
    for (const facts of [history({ holdMs: 20, roundTripMs: 4 }), new KeyHistory()]) {
      const pausesWith = (acquiredAgoMs: number) => {
        const schedule = new ReadScheduler(facts, KEY, 1_000, 0);
        schedule.noteView(held(5, { acquiredAt: Date.now() - acquiredAgoMs }), 0, 6);
        let now = 0;
        return Array.from({ length: 40 }, () => {
          const pause = schedule.delay(now, { ...farPlan(6), far: false });
          now += pause;
          return pause;
        });
      };
      // A minute and more: the pauses grow to 100 ms, as two seconds into an overdue release.
      expect(Math.max(...pausesWith(61_000))).toBeCloseTo(100);
      expect(Math.max(...pausesWith(3_600_000))).toBeCloseTo(100);
      // Half a minute: its start is trusted, and the release is overdue for close reads.
      expect(Math.max(...pausesWith(30_000))).toBeLessThanOrEqual(100);
    }
  });

  it('with no hold known to this process, times its reads by the last hold written in the item', () => {
    // The holder took the lock free (no release in the item since), after holding it 1 s before.
    const schedule = new ReadScheduler(new KeyHistory(), KEY, 1_000, 0);
    schedule.noteView({ key: KEY, head: 5, tail: 7, token: 'holder', rvn: 'v5', lastHoldMs: 1_000 }, 0, 6);
    expect(schedule.delay(0, { ...farPlan(6), far: false })).toBeGreaterThan(900);
  });
});

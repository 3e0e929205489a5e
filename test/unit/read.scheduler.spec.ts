/**
 * What a waiter in line learns from its views of the item, and how it times its next read by it:
 * the key's hold time from the holds releasers wrote, the line's pace from the faster of the
 * spans it measured far back, and a first timing read that does not trust a guessed pace.
 */
import { describe, expect, it } from '@jest/globals';
import { KeyHistory } from '../../lib/core/key-history';
import { type ReadPlan, ReadScheduler } from '../../lib/core/read.scheduler';
import type { LockRecord } from '../../lib/store/lock-record';

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

describe('read timing of a waiter in line', () => {
  it('takes the holds that releasers wrote into the key’s hold time, each release once', () => {
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

  it('times a far-back read by the faster of the spans it measured: a stall in the last one does not make it sleep past its turn', () => {
    const facts = history({ holdMs: 20, roundTripMs: 20 });
    const schedule = new ReadScheduler(facts, KEY, 1_000, 0);
    const ticket = 70;
    schedule.noteTimingView(held(0), 0, ticket);
    // 20 tickets served in 1.2 s (60 ms each), then 10 in 3 s: the line stalled for a while.
    schedule.noteTimingView(held(20), 1_200, ticket);
    schedule.noteTimingView(held(30), 4_200, ticket);
    // 40 places from its turn: at 60 ms a turn, it is served within 2.4 s, and must read before.
    const delay = schedule.delay(4_200, farPlan(ticket));
    expect(delay).toBeLessThan(40 * 60);
    expect(delay).toBeGreaterThan(0);
  });

  it('does not take a single span slower than a usual turn for the pace (a short first span may hold a stall)', () => {
    // Holds of 20 ms and round trips of 4 ms: a usual turn is 30 ms.
    const facts = history({ holdMs: 20, roundTripMs: 4 });
    const schedule = new ReadScheduler(facts, KEY, 1_000, 0);
    const ticket = 70;
    schedule.noteTimingView(held(0), 0, ticket);
    // 10 tickets in 800 ms: 80 ms each, a stall of a few hundred milliseconds in the span.
    schedule.noteTimingView(held(10), 800, ticket);
    // 60 places from its turn: taken at 30 ms a turn, it reads within 60 turns of that.
    expect(schedule.delay(800, farPlan(ticket))).toBeLessThanOrEqual(60 * 30);
  });

  it('drops the spans measured across a stall of the line: the first read after it measures the pace anew', () => {
    const facts = history({ holdMs: 20, roundTripMs: 4 });
    const schedule = new ReadScheduler(facts, KEY, 1_000, 0);
    const ticket = 100;
    schedule.noteTimingView(held(0), 0, ticket);
    schedule.noteTimingView(held(10), 400, ticket);
    schedule.noteTimingView(held(20), 800, ticket);
    // The line stands still for 5 s (a dead head waited out), then moves again.
    schedule.noteTimingView(held(20), 3_000, ticket);
    schedule.noteTimingView(held(30), 6_000, ticket);
    const plan = farPlan(ticket);
    expect(schedule.delay(6_000, plan)).toBeLessThanOrEqual(plan.timingReadMs / 4);
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
    // Holds of 1 s: 20 places take at least 20 s, and the first timing read is not hurried.
    const facts = history({ holdMs: 1_000, roundTripMs: 5 });
    const schedule = new ReadScheduler(facts, KEY, 1_000, 0);
    schedule.noteView(held(0), 0, 20);
    const plan = farPlan(20);
    expect(schedule.delay(0, plan)).toBe(plan.timingReadMs);
  });
});

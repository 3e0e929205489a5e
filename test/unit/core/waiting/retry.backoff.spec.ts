/**
 * The retry backoff every waiter shares: from the shortest pause, doubled after each failure up to
 * the longest, with jitter, capped per call, and back to the start after an answer.
 */
import { describe, expect, it, jest } from '@jest/globals';
import { RetryBackoff } from '../../../../lib/core/waiting/retry.backoff';
import { RETRY_MAX_MS, RETRY_MIN_MS } from '../../../../lib/utils/backoff';

/** Jitter off: `Math.random()` at the middle of its range scales a pause by exactly 1. */
function noJitter(): void {
  jest.spyOn(Math, 'random').mockReturnValue(0.5);
}

describe('RetryBackoff', () => {
  it('starts at the shortest pause and doubles it after each failure, up to the longest', () => {
    noJitter();
    const backoff = new RetryBackoff();
    expect(backoff.base).toBe(RETRY_MIN_MS);
    const pauses = Array.from({ length: 8 }, () => backoff.next());
    expect(pauses).toEqual([50, 100, 200, 400, 800, 1_600, 2_000, 2_000]);
    expect(RETRY_MAX_MS).toBe(2_000);
    expect(backoff.base).toBe(RETRY_MAX_MS);
  });

  it('starts from the shortest pause again after reset()', () => {
    noJitter();
    const backoff = new RetryBackoff();
    backoff.next();
    backoff.next();
    expect(backoff.base).toBe(4 * RETRY_MIN_MS);
    backoff.reset();
    expect(backoff.base).toBe(RETRY_MIN_MS);
    expect(backoff.next()).toBe(RETRY_MIN_MS);
  });

  it('never returns more than the cap, and still grows behind it', () => {
    noJitter();
    const backoff = new RetryBackoff();
    expect(backoff.next(30)).toBe(30);
    expect(backoff.next(30)).toBe(30);
    // Uncapped, the pause it had reached shows.
    expect(backoff.next()).toBe(4 * RETRY_MIN_MS);
    expect(backoff.next(0)).toBe(0);
  });

  it('spreads each pause by a quarter either way', () => {
    const backoff = new RetryBackoff();
    const random = jest.spyOn(Math, 'random');
    random.mockReturnValueOnce(0);
    expect(backoff.next()).toBe(Math.round(0.75 * RETRY_MIN_MS));
    random.mockReturnValueOnce(0.999_999);
    expect(backoff.next()).toBe(Math.round(1.25 * 2 * RETRY_MIN_MS));
  });
});

import { describe, expect, it } from '@jest/globals';
import { LockValidationError, parseDuration } from '../../lib';

describe('parseDuration', () => {
  it.each([
    [1500, 1500],
    ['500ms', 500],
    ['30s', 30_000],
    ['300s', 300_000],
    ['1.5s', 1_500],
    ['15 minutes', 900_000],
    ['1m30s', 90_000],
    ['1h30m', 5_400_000],
    ['2 hours', 7_200_000],
    ['1d', 86_400_000],
    [' 2 Min 5 Sec ', 125_000],
  ])('reads %p as %p ms', (input, ms) => {
    expect(parseDuration(input, 'leaseDuration')).toBe(ms);
  });

  it.each([
    ['30'],
    [''],
    ['abc'],
    ['5 parsecs'],
    ['-5s'],
    ['0s'],
    [0],
    [-1],
    [Number.NaN],
    [Number.POSITIVE_INFINITY],
    ['1e3s'],
    ['30 days'],
    [null],
    [{}],
  ])('rejects %p with the accepted forms listed', (input) => {
    let error: unknown;
    try {
      parseDuration(input, 'leaseDuration');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(LockValidationError);
    expect((error as Error).message).toMatch(/^leaseDuration must be a positive duration; got .*Accepted forms: .*'15 minutes'/);
  });
});

/** The skip reporter: the first skip of a method logged, later ones counted, at most one line a minute. */
import { describe, expect, it } from '@jest/globals';
import { SkipReporter } from '../../lib/decorators/skip.reporter';
import { MemoryLogger } from '../support/lock-fixture';

describe('SkipReporter', () => {
  it('logs the first skip, then one line a minute with the count since the last line', () => {
    const logger = new MemoryLogger();
    const skips = new SkipReporter('ReportJob.run');
    skips.skipped(logger, 'report', 'a', undefined, 0);
    // One skip a second for two minutes.
    for (let s = 1; s <= 120; s++) skips.skipped(logger, 'report', 'b', undefined, s * 1_000);
    expect(logger.lines.map((l) => l.level)).toEqual(['debug', 'debug', 'debug']);
    expect(logger.lines.map((l) => l.message)).toEqual([
      expect.stringMatching(/^Skipped ReportJob\.run: lock "report" is held by "a"/),
      'Skipped ReportJob.run 60 more times in 60 s: lock "report" was held by "b" last.',
      'Skipped ReportJob.run 60 more times in 60 s: lock "report" was held by "b" last.',
    ]);
  });
});

/**
 * Jest's test order, with the suites known to take longest first: a clean clone (CI) has no
 * timings cached, and Jest would start the largest files first, which are not the slowest (the
 * `@Cron` suites wait for real cron periods). Starting them first keeps both workers busy to the
 * end instead of leaving one suite of two minutes running alone. Suites with cached timings, and
 * the rest, keep Jest's own order after these.
 */
import Sequencer from '@jest/test-sequencer';

/** Path endings of the slowest suites, slowest first (seconds from CI runs of npm test). */
const SLOWEST = [
  'test/nest/cron-fires.spec.ts',
  'test/nest/cron-instances.spec.ts',
  'test/nest/cron-fires-skew.spec.ts',
  'test/process/multi-process.spec.ts',
  'test/process/multi-key-transfers.spec.ts',
  'test/lock/single-attempts.spec.ts',
  'test/lock/scheduled-fires.spec.ts',
  'test/chaos/chaos.e2e-spec.ts',
  'test/cli/cli.e2e-spec.ts',
  'test/lock/many-held.spec.ts',
  'test/lock/read-write.spec.ts',
  'test/process/semaphore-processes.spec.ts',
  'test/package/package.e2e-spec.ts',
  'test/leadership/leader-processes.spec.ts',
];

const rank = (path) => {
  const at = SLOWEST.findIndex((end) => path.replaceAll('\\', '/').endsWith(end));
  return at === -1 ? SLOWEST.length : at;
};

export default class SlowFirstSequencer extends Sequencer {
  async sort(tests) {
    const ordered = await super.sort(tests);
    return [...ordered].sort((a, b) => rank(a.path) - rank(b.path));
  }
}

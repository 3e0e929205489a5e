/**
 * `vitest` for the testing page's vitest spec (`app/invoices.service.vitest.spec.ts`): vitest is
 * not a dependency of this repository, so the functions that spec uses map onto Jest's, which
 * vitest's API mirrors. The snippet check compiles the spec against this module and Jest runs it
 * with `vitest` mapped here (jest.config.mjs).
 */
import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';

export { afterEach, beforeEach, describe, expect, it };

/** The part of vitest's `vi` the spec uses. */
export const vi = {
  useFakeTimers: (): void => void jest.useFakeTimers(),
  useRealTimers: (): void => void jest.useRealTimers(),
  advanceTimersByTimeAsync: async (ms: number): Promise<void> => {
    await jest.advanceTimersByTimeAsync(ms);
  },
};

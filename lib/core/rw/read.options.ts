import { LockValidationError } from '../../errors/lock.errors';
import { LOCK_MODE_INVALID, READ_OPTION_UNSUPPORTED } from '../../errors/lock.messages';
import type { AcquireOptions } from '../../interfaces/acquire-options.interface';

/**
 * Checks the options of a call for a read lock (`mode: 'read'`), before any request: a read lock
 * has no payload, no limit and no scheduled fire. Other modes pass.
 * @throws LockValidationError naming `scope` and the option.
 */
export function checkReadOptions(options: Pick<AcquireOptions, 'mode' | 'limit' | 'data' | 'fireTime'>, scope: string): void {
  const { mode } = options;
  if (mode === undefined || mode === 'write') return;
  if (mode !== 'read' && mode !== 'upgradeable') throw new LockValidationError(LOCK_MODE_INVALID(scope, mode));
  const refused = (['limit', 'data', 'fireTime'] as const).find((name) => options[name] !== undefined);
  if (refused) throw new LockValidationError(READ_OPTION_UNSUPPORTED(scope, refused, mode));
}

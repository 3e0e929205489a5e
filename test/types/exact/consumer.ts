/**
 * An app's view of the published declarations, compiled with the strictest settings apps use
 * (`exactOptionalPropertyTypes`, no `skipLibCheck`): the declarations must be valid there, and
 * only the documented API may be reachable.
 */
import { DynamoLockModule, Lock, LockInterceptor, LockManager, LockService, WithLock } from '../../../dist/index.js';
import { DynamoLockHealthIndicator } from '../../../dist/health/index.js';
import { MemoryLockStore } from '../../../dist/standalone/index.js';

export async function use(service: LockService, manager: LockManager): Promise<void> {
  const lock: Lock = await service.acquire('k', { wait: false, leaseDuration: '10s' });
  await lock.extend('20s');
  await lock.release();
  await manager.close();
  // @ts-expect-error the module closes the service at shutdown: app code cannot
  await service.close();
  // @ts-expect-error engine internals are private
  void service.store;
  // @ts-expect-error engine internals are private
  void manager.store;
  // @ts-expect-error engine internals are private
  void manager.history;
  // @ts-expect-error engine internals are private
  await manager.release(lock);
  // @ts-expect-error engine internals are private
  manager.runHolding(lock, () => 1);
  // @ts-expect-error locks are created by the lock manager only
  void new Lock({});
}

export const parts = [DynamoLockModule, LockInterceptor, WithLock, DynamoLockHealthIndicator, MemoryLockStore];

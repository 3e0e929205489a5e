import type { MutexStorePort } from '../../store/mutex/mutex-store.port';
import { newEntry, readerOf } from '../../store/rw/read.record';
import type { ReadStorePort } from '../../store/rw/read-store.port';

/**
 * The read store as the lease keeper sees it: a heartbeat renews the reader's own entry (its
 * version is the lease's record version); a read shows the item as it is.
 */
export function leaseView(store: ReadStorePort, mutex: MutexStorePort): Pick<MutexStorePort, 'heartbeat' | 'read'> {
  return {
    async heartbeat(write) {
      const entry = newEntry(write.holding.token, write.leaseMs ?? write.ttlLeaseMs, write.owner);
      const result = await store.heartbeat({ key: write.key, entry });
      if (!result.ok) return result;
      const own = readerOf(result.record, entry.id);
      return { ok: true, record: { key: write.key, rvn: own?.version, fencingToken: result.record.fencingToken } };
    },
    read: (key) => mutex.read(key),
  };
}

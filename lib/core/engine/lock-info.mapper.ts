import type { JobFire } from '../../interfaces/job-fire.interface';
import type { LockInfo } from '../../interfaces/lock-info.interface';
import type { FireRecord, LockRecord } from '../../store/mutex/mutex.record';
import { CLAIM_LEASE_MS } from '../../store/mutex/mutex-store.protocol';
import { isReadGroup, readersOf } from '../../store/rw/read.record';

/**
 * What `inspect()` and `list()` tell about a held mutex item: its holder, or, while readers hold
 * it together (`mode: 'read'`), the group (`owner` `readers`, its lease the longest of theirs) with
 * each reader in `holders`.
 */
export function lockInfoOf(record: LockRecord, keyPrefix: string): LockInfo {
  const key = record.key.slice(keyPrefix.length);
  const info: LockInfo = {
    key,
    // A waiter promoted by a release holds before it writes its name and lease (at its first heartbeat).
    owner: record.owner ?? '',
    fencingToken: record.fencingToken ?? 0,
    acquiredAt: new Date(record.acquiredAt ?? record.updatedAt ?? 0),
    updatedAt: new Date(record.updatedAt ?? record.acquiredAt ?? 0),
    leaseDuration: record.leaseMs ?? record.claimMs ?? CLAIM_LEASE_MS,
    data: record.data === undefined ? undefined : JSON.parse(record.data),
    ...(record.fire && { lastFire: jobFireOf(record.fire) }),
  };
  if (!isReadGroup(record)) return info;
  const holders = readersOf(record).map((reader) => ({
    key,
    owner: reader.owner,
    fencingToken: info.fencingToken,
    acquiredAt: info.acquiredAt,
    updatedAt: info.updatedAt,
    leaseDuration: reader.leaseMs,
  }));
  return { ...info, mode: 'read', holders };
}

/** A fire as the item keeps it, for `lastFire()` and `inspect()`. */
export function jobFireOf(fire: FireRecord): JobFire {
  return {
    scheduledAt: new Date(fire.at),
    owner: fire.owner ?? '',
    startedAt: new Date(fire.startedAt ?? fire.at),
    ...(fire.endedAt !== undefined && { endedAt: new Date(fire.endedAt) }),
    outcome: fire.outcome ?? 'running',
  };
}

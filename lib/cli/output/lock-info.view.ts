import type { JobFire } from '../../interfaces/job-fire.interface';
import type { LockInfo } from '../../interfaces/lock-info.interface';
import { holderName } from '../cli.messages';
import { formatDuration, relativeTime } from './format-time';

/** A held lock as `inspect --json` and `list --json` print it. Times are ISO 8601, by the holder's clock. */
export interface LockInfoJson {
  key: string;
  owner: string;
  fencingToken: number;
  acquiredAt: string;
  updatedAt: string;
  /** Lease in milliseconds. */
  leaseDuration: number;
  /** When the lease runs out unless renewed: `updatedAt` + lease. */
  expiresAt: string;
  data?: unknown;
  /** A counting semaphore's limit (the fields above then describe its newest holder). */
  limit?: number;
  /** A semaphore's callers waiting in line. */
  waiting?: number;
  /** A semaphore's holders, oldest grant first. */
  holders?: LockInfoJson[];
  /** A scheduled job's last fire claimed (times in ISO 8601). */
  lastFire?: JobFireJson;
}

/** A scheduled job's last fire as `inspect --json` prints it. */
export interface JobFireJson {
  scheduledAt: string;
  owner: string;
  startedAt: string;
  endedAt?: string;
  outcome: JobFire['outcome'];
}

/** Column headers of {@link lockInfoRow}. */
export const LOCK_COLUMNS = ['KEY', 'OWNER', 'FENCING TOKEN', 'ACQUIRED', 'RENEWED', 'LEASE', 'EXPIRES', 'DATA'] as const;

/** The JSON form of a lock. */
export function lockInfoJson(info: LockInfo): LockInfoJson {
  const json: LockInfoJson = {
    key: info.key,
    owner: info.owner,
    fencingToken: info.fencingToken,
    acquiredAt: info.acquiredAt.toISOString(),
    updatedAt: info.updatedAt.toISOString(),
    leaseDuration: info.leaseDuration,
    expiresAt: expiresAt(info).toISOString(),
  };
  if (info.data !== undefined) json.data = info.data;
  if (info.limit !== undefined) {
    json.limit = info.limit;
    json.waiting = info.waiting ?? 0;
    json.holders = (info.holders ?? []).map(lockInfoJson);
  }
  if (info.lastFire) json.lastFire = jobFireJson(info.lastFire);
  return json;
}

/** The JSON form of a job's last fire. */
function jobFireJson(fire: JobFire): JobFireJson {
  const json: JobFireJson = {
    scheduledAt: fire.scheduledAt.toISOString(),
    owner: fire.owner,
    startedAt: fire.startedAt.toISOString(),
    outcome: fire.outcome,
  };
  if (fire.endedAt) json.endedAt = fire.endedAt.toISOString();
  return json;
}

/** The fields `inspect` shows about a scheduled job's last fire. */
export function jobFireFields(fire: JobFire, now: Date): [string, string][] {
  const fields: [string, string][] = [
    ['Last fire', `${fire.scheduledAt.toISOString()} (${relativeTime(fire.scheduledAt, now)})`],
    ['Ran on', holderName(fire.owner)],
    ['Started', fire.startedAt.toISOString()],
  ];
  if (fire.endedAt) fields.push(['Ended', fire.endedAt.toISOString()]);
  fields.push(['Outcome', fire.outcome]);
  return fields;
}

/** One row of the `list` table (for a semaphore: its newest holder, and how many of its slots are taken). */
export function lockInfoRow(info: LockInfo, now: Date): string[] {
  return [
    info.limit === undefined ? info.key : `${info.key} (${info.holders?.length ?? 1}/${info.limit} slots)`,
    holderName(info.owner),
    String(info.fencingToken),
    relativeTime(info.acquiredAt, now),
    relativeTime(info.updatedAt, now),
    formatDuration(info.leaseDuration),
    expiry(info, now),
    dataText(info.data),
  ];
}

/** The fields `inspect` shows, one per line. */
export function lockInfoFields(info: LockInfo, now: Date): [string, string][] {
  return [
    ['Key', info.key],
    ['Owner', holderName(info.owner)],
    ['Fencing token', String(info.fencingToken)],
    ['Acquired', `${info.acquiredAt.toISOString()} (${relativeTime(info.acquiredAt, now)})`],
    ['Renewed', `${info.updatedAt.toISOString()} (${relativeTime(info.updatedAt, now)})`],
    ['Lease', formatDuration(info.leaseDuration)],
    ['Expires', `${expiresAt(info).toISOString()} (${expiry(info, now)})`],
    ['Data', dataText(info.data)],
    ...(info.lastFire ? jobFireFields(info.lastFire, now) : []),
  ];
}

function expiresAt(info: LockInfo): Date {
  return new Date(info.updatedAt.getTime() + info.leaseDuration);
}

/** `in 4m` or `4s overdue` (by the holder's clock against ours: approximate). */
function expiry(info: LockInfo, now: Date): string {
  const left = expiresAt(info).getTime() - now.getTime();
  return left >= 0 ? `in ${formatDuration(left)}` : `${formatDuration(-left)} overdue`;
}

function dataText(data: unknown): string {
  return data === undefined ? '' : JSON.stringify(data);
}

import { hostname, userInfo } from 'node:os';

/**
 * The default owner name stored with a lock: `user@host`, plus `:pid` for a lock this
 * process holds itself (`exec`). `acquire` leaves out the pid: the lock outlives this process.
 */
export function defaultOwnerName(withPid: boolean): string {
  const owner = `${userName()}@${hostname()}`;
  return withPid ? `${owner}:${process.pid}` : owner;
}

function userName(): string {
  try {
    return userInfo().username;
  } catch {
    // No passwd entry (some containers).
    return process.env.USER ?? process.env.LOGNAME ?? `uid${process.getuid?.() ?? ''}`;
  }
}

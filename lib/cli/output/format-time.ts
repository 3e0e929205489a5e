/** Human-readable durations and relative times for CLI output. */

const UNITS: readonly [suffix: string, ms: number][] = [
  ['d', 86_400_000],
  ['h', 3_600_000],
  ['m', 60_000],
  ['s', 1_000],
];

/**
 * A duration in the form the CLI accepts: `850ms`, `4.2s`, `42s`, `5m`, `1h30m`, `2d3h`.
 * At most two units, the smaller rounded down.
 */
export function formatDuration(ms: number): string {
  const value = Math.max(0, Math.round(ms));
  if (value < 1_000) return `${value}ms`;
  if (value < 10_000) return `${(Math.floor(value / 100) / 10).toString()}s`;
  const parts: string[] = [];
  let rest = value;
  for (const [suffix, size] of UNITS) {
    if (rest < size && parts.length === 0) continue;
    const count = Math.floor(rest / size);
    rest -= count * size;
    if (count > 0) parts.push(`${count}${suffix}`);
    if (parts.length === 2 || (parts.length === 1 && count === 0)) break;
  }
  return parts.join('');
}

/** `3m ago` for a time in the past, `in 42s` for one in the future, relative to `now`. */
export function relativeTime(time: Date, now: Date): string {
  const delta = time.getTime() - now.getTime();
  return delta <= 0 ? `${formatDuration(-delta)} ago` : `in ${formatDuration(delta)}`;
}

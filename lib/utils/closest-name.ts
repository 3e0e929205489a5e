import { UNKNOWN_OPTION } from '../errors/lock.messages';

/**
 * The candidate nearest to a misspelt `name` (case-insensitive edit distance of at most a
 * third of its length, and at least 2), for "did you mean" hints; `undefined` when none is close.
 */
export function closestName(name: string, candidates: readonly string[]): string | undefined {
  const wanted = name.toLowerCase();
  let best: { candidate: string; distance: number } | undefined;
  for (const candidate of candidates) {
    const distance = editDistance(wanted, candidate.toLowerCase());
    if (!best || distance < best.distance) best = { candidate, distance };
  }
  return best && best.distance <= Math.max(2, Math.floor(name.length / 3)) ? best.candidate : undefined;
}

/** Levenshtein distance, one row at a time. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length];
}

/**
 * The message for the first name of `options` that is not in `known` ("`scope` has no option
 * ...; did you mean ...?"), or `undefined` when every name is known. Callers throw it as the
 * error their scope calls for.
 */
export function unknownOptionMessage(options: object, known: readonly string[], scope: string): string | undefined {
  const unknown = Object.keys(options).find((name) => !known.includes(name));
  return unknown === undefined ? undefined : UNKNOWN_OPTION(scope, unknown, closestName(unknown, known), known);
}

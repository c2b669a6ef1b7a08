// "Did you mean …?" for options that take a name from a fixed list (--gpu ids, --model presets).

/**
 * Edit distance between two strings: insertions, deletions, substitutions and transpositions of
 * two adjacent characters each cost 1 (optimal string alignment). Case-sensitive; callers that
 * want case-insensitivity fold the case first, as `nearest` does.
 */
export function editDistance(a: string, b: string): number {
  const m = a.length;
  const n = b.length;
  if (m === 0) return n;
  if (n === 0) return m;
  // Three rows: two back (for transpositions), one back, current.
  let twoBack = new Array<number>(n + 1).fill(0);
  let previous = Array.from({ length: n + 1 }, (_, j) => j);
  let current = new Array<number>(n + 1).fill(0);
  for (let i = 1; i <= m; i++) {
    current[0] = i;
    for (let j = 1; j <= n; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        best = Math.min(best, twoBack[j - 2]! + 1);
      }
      current[j] = best;
    }
    [twoBack, previous, current] = [previous, current, twoBack];
  }
  return previous[n]!;
}

export interface NearestOptions {
  /**
   * The largest edit distance still worth suggesting. Default: a third of the query's length,
   * at least 2, so a typo or two is caught but an unrelated word suggests nothing.
   */
  maxDistance?: number;
}

/**
 * The candidate closest to `query` by edit distance, compared case-insensitively; the first one
 * listed wins a tie. Returns the candidate as listed (its own case), or undefined when the query
 * is blank, there are no candidates, or none is within `maxDistance` and closer than rewriting
 * every character of the query.
 */
export function nearest(
  candidates: readonly string[],
  query: string,
  options: NearestOptions = {},
): string | undefined {
  const folded = query.trim().toLowerCase();
  if (folded === "") return undefined;
  const limit = options.maxDistance ?? Math.max(2, Math.floor(folded.length / 3));
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const distance = editDistance(folded, candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  // A candidate as far away as the query is long shares nothing with it (`8` is two edits from `T4`).
  return bestDistance <= limit && bestDistance < folded.length ? best : undefined;
}

/**
 * The tail of a one-line error: `; did you mean X?` when a candidate is near, else "".
 * For messages such as `--gpu: expected a catalog GPU id, got "h100-80gv"; did you mean H100-80GB?`.
 */
export function didYouMean(candidates: readonly string[], query: string, options: NearestOptions = {}): string {
  const suggestion = nearest(candidates, query, options);
  return suggestion === undefined ? "" : `; did you mean ${suggestion}?`;
}

// The seeded search for the largest batch size b with fits(b) && !fits(b + 1).
import { checkpoint } from "../checkpoint.js";
import { validateSearch } from "./validateTargets.js";

/**
 * Whether a batch size fits. Need not be monotone: a step's memory can drop from one batch to the
 * next (bert-base's replay at capacity needs about 300 MiB less at 516 than at 515). "The largest batch
 * that fits" is therefore defined as the b this search returns: fits(b) and not fits(b + 1), both
 * evaluated; nothing is claimed about larger batches (test/unit/nonMonotone.test.ts).
 */
export type FitsFunction = (batch: number) => Promise<boolean> | boolean;

export interface SearchOptions {
  /** The predicted answer (the analytic one); the search verifies it and b + 1 first. */
  seed: number;
  /** The largest batch the caller wants; without it there is no upper bound. */
  maxBatch?: number;
  /** Checked before every evaluation: a search can be cancelled between probes. */
  signal?: AbortSignal;
}

export interface SearchResult {
  /** The largest batch that fits; 0 when even batch 1 does not. */
  batchSize: number;
  /** How many times fits() was called. */
  evaluations: number;
  /** Each evaluation in order, for reports and tests. */
  trace: { batch: number; fits: boolean }[];
}

/**
 * Finds the largest fitting batch. With an exact seed it makes two evaluations (seed, seed + 1);
 * on a miss it gallops away from the seed by doubling steps until the answer is bracketed, then
 * bisects: O(log |answer − seed|) evaluations. Each batch is evaluated at most once.
 */
export async function searchMaxBatch(fits: FitsFunction, options: SearchOptions): Promise<SearchResult> {
  validateSearch(fits, options);
  const cap = options.maxBatch ?? Number.MAX_SAFE_INTEGER;
  const trace: SearchResult["trace"] = [];
  const known = new Map<number, boolean>();
  const evaluate = async (batch: number): Promise<boolean> => {
    const cached = known.get(batch);
    if (cached !== undefined) return cached;
    // A deep model's evaluation replays tens of thousands of allocations: give a signal its turn.
    await checkpoint(options.signal);
    const result = await fits(batch);
    known.set(batch, result);
    trace.push({ batch, fits: result });
    return result;
  };
  const done = (batchSize: number): SearchResult => ({ batchSize, evaluations: trace.length, trace });

  const seed = Math.min(Math.max(1, Math.floor(options.seed)), cap);
  // Invariant once bracketed: fits(low) (or low = 0) and !fits(high) (or high = cap + 1).
  let low: number;
  let high: number;
  if (await evaluate(seed)) {
    low = seed;
    high = cap + 1;
    // Gallop upward: seed + 1, seed + 2, seed + 4, …
    for (let step = 1; low < cap; step *= 2) {
      const next = Math.min(seed + step, cap);
      if (!(await evaluate(next))) {
        high = next;
        break;
      }
      low = next;
    }
    if (low === cap) return done(cap);
  } else {
    high = seed;
    low = 0;
    // Gallop downward: seed − 1, seed − 2, seed − 4, … down to 1.
    for (let step = 1; high > 1; step *= 2) {
      const next = Math.max(seed - step, 1);
      if (await evaluate(next)) {
        low = next;
        break;
      }
      high = next;
    }
    if (low === 0) return done(0);
  }
  while (high - low > 1) {
    const middle = low + Math.floor((high - low) / 2);
    if (await evaluate(middle)) low = middle;
    else high = middle;
  }
  return done(low);
}

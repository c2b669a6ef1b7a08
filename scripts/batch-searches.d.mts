// Types of batch-searches.mjs, for the tests that import it.
export interface SearchTrace {
  batchSize: number;
  trials: number;
  trace: { batch: number; fits: boolean }[];
}
type Fits = (batch: number) => boolean | Promise<boolean>;
export function bisect1024(fits: Fits): Promise<SearchTrace>;
export function lightningBinsearch(fits: Fits, options?: { initVal?: number; maxTrials?: number }): Promise<SearchTrace>;
export function accelerateFindExecutable(fits: Fits, options?: { startingBatchSize?: number }): Promise<SearchTrace>;
export function ultralyticsAutobatch(
  memoryBytes: (batch: number) => number | null | Promise<number | null>,
  totalBytes: number,
  options?: { fraction?: number; defaultBatch?: number },
): Promise<SearchTrace>;

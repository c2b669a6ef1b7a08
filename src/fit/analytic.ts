// The analytic evaluator: a plan fits when its allocator's segments plus the job's context fit the budget.
import { planTotals, type MemoryPlan } from "../plan/memoryPlan.js";
import { plannedBytes, type AllocatorModel } from "./allocator.js";
import { searchMaxBatch, type FitsFunction, type SearchResult } from "./search.js";

export function analyticFits(plan: MemoryPlan, budgetBytes: number, allocator: AllocatorModel): FitsFunction {
  return (batch) => plannedBytes(plan, batch, allocator) <= budgetBytes;
}

/**
 * The closed-form estimate ⌊(budget − fixed) / perSample⌋ from the plan's affine totals with
 * the allocator's costs; segments and rounding make it approximate, so it only seeds the search.
 */
export function affineEstimate(plan: MemoryPlan, budgetBytes: number, allocator: AllocatorModel): number {
  const { perSampleBytes } = planTotals(plan);
  const fixedBytes = plannedBytes(plan, 0, allocator);
  if (perSampleBytes <= 0) return Number.MAX_SAFE_INTEGER;
  return Math.max(0, Math.floor((budgetBytes - fixedBytes) / perSampleBytes));
}

/** The largest batch the analytic model allows: exact for the model, no device touched. */
export function analyticMaxBatch(
  plan: MemoryPlan,
  budgetBytes: number,
  allocator: AllocatorModel,
  maxBatch?: number,
  signal?: AbortSignal,
): Promise<SearchResult> {
  const seed = affineEstimate(plan, budgetBytes, allocator);
  return searchMaxBatch(analyticFits(plan, budgetBytes, allocator), {
    seed,
    ...(maxBatch !== undefined && { maxBatch }),
    ...(signal !== undefined && { signal }),
  });
}

// The analytic evaluator: a plan fits when its allocator's segments plus the job's context fit the budget.
import { planTotals, type MemoryPlan } from "../plan/memoryPlan.js";
import { plannedBytes, type AllocatorModel } from "./allocator.js";
import { searchMaxBatch, type FitsFunction, type SearchResult } from "./search.js";

export function analyticFits(plan: MemoryPlan, budgetBytes: number, allocator: AllocatorModel): FitsFunction {
  return (batch) => plannedBytes(plan, batch, allocator) <= budgetBytes;
}

/**
 * The closed-form estimate ⌊(budget − fixed) / perSample⌋ from the plan's affine totals with the
 * allocator's costs, then corrected once: the allocator's segments add bytes per sample the
 * totals do not show (ResNet-152 at 224² on 80 GB: 441 against 415, eleven replays to search), so
 * the slope is measured by one replay at the first estimate, and the line through batch 0 and it
 * lands within a batch or two (four replays). Approximate either way: it only seeds the search.
 */
export function affineEstimate(plan: MemoryPlan, budgetBytes: number, allocator: AllocatorModel): number {
  const { perSampleBytes } = planTotals(plan);
  const fixedBytes = plannedBytes(plan, 0, allocator);
  if (perSampleBytes <= 0) return Number.MAX_SAFE_INTEGER;
  const first = Math.max(0, Math.floor((budgetBytes - fixedBytes) / perSampleBytes));
  if (first === 0) return 0;
  const slope = (plannedBytes(plan, first, allocator) - fixedBytes) / first;
  return slope > 0 ? Math.max(0, Math.floor((budgetBytes - fixedBytes) / slope)) : first;
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

// Shared by advice and `gpus --fit`: plans for variants of a setup, their largest batch, and monotone searches over GPU counts.
import { checkpoint } from "../checkpoint.js";
import { VramfitError } from "../errors.js";
import { plannedBytes, type AllocatorModel } from "../fit/allocator.js";
import { analyticMaxBatch } from "../fit/analytic.js";
import { buildPlan } from "../plan/buildPlan.js";
import type { MemoryPlan } from "../plan/memoryPlan.js";
import { resolveSetup, type RunSetup } from "../plan/setup.js";
import type { Workload } from "../workload/workload.js";

/** GPU counts tried when scaling out: powers of two, as clusters are built. */
export const GPU_COUNTS: readonly number[] = Array.from({ length: 13 }, (_, i) => 2 ** i); // 1 … 4096

/** Tensor-parallel degrees within one node (Megatron keeps tensor parallelism inside the NVLink domain). */
export const TP_DEGREES: readonly number[] = [1, 2, 4, 8];

/**
 * How many tensors a planner's cached plans may hold in all. `gpus --fit` asks for the same
 * variants (tensor-parallel degree × data-parallel ranks) for every catalog GPU: kept, GPT-3's
 * sixty-odd variants of 10,225 tensors answer `--min-batch 1536` in 1.5 s; with only the last 16
 * plans kept they were rebuilt for every GPU, 20 s. But a 5,000-layer CNN's plan is 51,604
 * tensors, and keeping every variant of it took 2.7 GB and made half-second garbage-collection
 * pauses; at this bound it takes 1.1 GB, pauses under 0.3 s, the same 38 s. Past it the least
 * recently used plans go.
 */
const TENSORS_KEPT = 1_000_000;

/** Builds plans for variants of one workload, the most recently used kept; a variant that does not apply (bad --tp, …) is undefined. */
export function planner(workload: Workload): (setup: RunSetup) => MemoryPlan | undefined {
  const cache = new Map<string, MemoryPlan | undefined>();
  let tensorsKept = 0;
  return (setup) => {
    const key = JSON.stringify(resolveSetup(setup)) + String(setup.gpusPerNode);
    if (cache.has(key)) {
      const plan = cache.get(key);
      cache.delete(key); // most recently used last
      cache.set(key, plan);
      return plan;
    }
    let plan: MemoryPlan | undefined;
    try {
      plan = buildPlan(workload, setup);
    } catch (error) {
      if (!(error instanceof VramfitError)) throw error;
      plan = undefined;
    }
    tensorsKept += plan?.tensors.length ?? 0;
    for (const [oldest, kept] of cache) {
      if (tensorsKept <= TENSORS_KEPT) break;
      cache.delete(oldest);
      tensorsKept -= kept?.tensors.length ?? 0;
    }
    cache.set(key, plan);
    return plan;
  };
}

/** A budget and how allocations are charged on it: what the analytic model needs to answer. */
export interface Budget {
  budgetBytes: number;
  allocator: AllocatorModel;
  /** The largest batch worth finding (the user's --max-batch). */
  maxBatch?: number;
}

/**
 * The analytic largest batch of a plan on a budget, and the bytes it needs at `batch`. Advice and
 * `gpus --fit` make hundreds of these: each first gives a signal its chance (`checkpoint`).
 */
export async function measureAnalytic(plan: MemoryPlan, budget: Budget, batch: number, signal?: AbortSignal): Promise<{ batchSize: number; bytesAtBatch: number }> {
  await checkpoint(signal);
  const { batchSize } = await analyticMaxBatch(plan, budget.budgetBytes, budget.allocator, budget.maxBatch, signal);
  await checkpoint(signal); // each replay of a deep model's step takes a while
  const bytesAtBatch = plannedBytes(plan, batch, budget.allocator);
  await checkpoint(signal); // and so does the next plan the caller builds
  return { batchSize, bytesAtBatch };
}

/** The first value of an ascending list that passes a monotone test (false … false true … true), or undefined. */
export async function firstPassing<T>(values: readonly T[], pass: (value: T) => Promise<boolean> | boolean): Promise<T | undefined> {
  let low = 0;
  let high = values.length; // the answer's index lies in [low, high]; high = none
  while (low < high) {
    const middle = low + Math.floor((high - low) / 2);
    if (await pass(values[middle]!)) high = middle;
    else low = middle + 1;
  }
  return values[low];
}

// What an evaluator adds to a plan's raw bytes: the allocator's rounding and the CUDA context.
import { allocationSizes, type MemoryPlan } from "../plan/memoryPlan.js";
import { roundUp } from "../units.js";

export interface AllocatorModel {
  /** Every allocation is rounded up to this (cuMemAlloc hands out 2 MiB pages). */
  granularityBytes: number;
  /** Device memory the CUDA context of the job takes before any allocation. */
  contextBytes: number;
}

export const GRANULARITY_BYTES = 2 * 2 ** 20;

/**
 * An assumed CUDA context size for catalog GPUs. A PyTorch process's context with CUDA's lazy
 * module loading takes a few hundred MiB (docs/memory-model.md); 512 MiB leaves room for cuBLAS's
 * workspace too. On a real device the context is already in the measured free memory.
 */
export const ASSUMED_CONTEXT_BYTES = 512 * 2 ** 20;

/** On a real device: free memory was read with a context live, so only rounding remains. */
export const MEASURED_DEVICE: AllocatorModel = { granularityBytes: GRANULARITY_BYTES, contextBytes: 0 };

/** On a catalog GPU or a raw total: the context must be paid out of the total. */
export const CATALOG_DEVICE: AllocatorModel = {
  granularityBytes: GRANULARITY_BYTES,
  contextBytes: ASSUMED_CONTEXT_BYTES,
};

/** A raw budget (`--memory`): the user's number is what the tensors may use. */
export const RAW_BUDGET: AllocatorModel = { granularityBytes: GRANULARITY_BYTES, contextBytes: 0 };

/** The device bytes a plan takes at a batch size under an allocator model. */
export function plannedBytes(plan: MemoryPlan, batch: number, allocator: AllocatorModel): number {
  let total = allocator.contextBytes;
  for (const size of allocationSizes(plan, batch)) total += roundUp(size, allocator.granularityBytes);
  return total;
}

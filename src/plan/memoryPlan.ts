// The MemoryPlan: a workload as named tensors whose sizes are affine in the batch size.

/** The categories of device memory a workload needs (DESIGN.md, "The memory model"). */
export const CATEGORIES = [
  "parameters",
  "gradients",
  "optimizerStates",
  "activations",
  "kvCache",
  "workspace",
] as const;
export type Category = (typeof CATEGORIES)[number];

/** One real allocation of the workload: `fixedBytes + perSampleBytes × batch` bytes. */
export interface PlannedTensor {
  /** Where it comes from, e.g. `layers.3.attention.scores` or `optimizer.adam.exp_avg`. */
  name: string;
  category: Category;
  fixedBytes: number;
  perSampleBytes: number;
}

export interface MemoryPlan {
  /** A short human description, e.g. `7e9 parameters, fp32, sgd`. */
  description: string;
  /** Parameters in the model (after sharding is *not* applied: the whole model). */
  parameterCount: number;
  /** Device memory: what a probe allocates. */
  tensors: PlannedTensor[];
  /** Host memory of offloaded model states (`--offload`); absent when nothing is offloaded. */
  host?: HostPlan;
}

/** Offloaded states in host memory: one rank's tensors (fixed bytes), and how many ranks share the host. */
export interface HostPlan {
  tensors: PlannedTensor[];
  /** Ranks (GPUs) whose offloaded states share this host's memory. */
  ranks: number;
}

/** Host bytes the plan needs on one node: every sharing rank's offloaded states (0 without offload). */
export function hostBytes(plan: MemoryPlan): number {
  if (plan.host === undefined) return 0;
  return plan.host.ranks * plan.host.tensors.reduce((sum, t) => sum + t.fixedBytes, 0);
}

/** Host bytes per category on one node (every category present, 0 where nothing is offloaded). */
export function hostBytesByCategory(plan: MemoryPlan): Record<Category, number> {
  const totals = Object.fromEntries(CATEGORIES.map((c) => [c, 0])) as Record<Category, number>;
  for (const t of plan.host?.tensors ?? []) totals[t.category] += t.fixedBytes * (plan.host?.ranks ?? 0);
  return totals;
}

/** Bytes of one tensor at a batch size. */
export function tensorBytes(tensor: PlannedTensor, batch: number): number {
  return tensor.fixedBytes + tensor.perSampleBytes * batch;
}

/** The allocation sizes a probe makes at a batch size (empty tensors are left out). */
export function allocationSizes(plan: MemoryPlan, batch: number): number[] {
  return plan.tensors.map((t) => tensorBytes(t, batch)).filter((bytes) => bytes > 0);
}

/** Σ fixed and Σ per-sample bytes: the plan's affine totals, before any allocator rounding. */
export function planTotals(plan: MemoryPlan): { fixedBytes: number; perSampleBytes: number } {
  let fixedBytes = 0;
  let perSampleBytes = 0;
  for (const t of plan.tensors) {
    fixedBytes += t.fixedBytes;
    perSampleBytes += t.perSampleBytes;
  }
  return { fixedBytes, perSampleBytes };
}

/**
 * Bytes per category at a batch size (every category present, 0 when it does not apply).
 * `allocate` maps a tensor's bytes to what the allocator takes for it (rounding), if given.
 */
export function bytesByCategory(
  plan: MemoryPlan,
  batch: number,
  allocate: (bytes: number) => number = (bytes) => bytes,
): Record<Category, number> {
  const totals = Object.fromEntries(CATEGORIES.map((c) => [c, 0])) as Record<Category, number>;
  for (const t of plan.tensors) {
    const bytes = tensorBytes(t, batch);
    if (bytes > 0) totals[t.category] += allocate(bytes);
  }
  return totals;
}

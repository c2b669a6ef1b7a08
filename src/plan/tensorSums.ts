// Every tensor a plan allocates, summed by category whatever its lifetime: what a paper's "saved activations per sample" counts.
import { CATEGORIES, type Category, type PlannedTensor } from "./memoryPlan.js";

/** Bytes affine in the batch size: `fixedBytes + perSampleBytes × batch`. */
export interface AffineBytes {
  fixedBytes: number;
  perSampleBytes: number;
}

/** Sums per category (every category present, zeros where none), of the tensors given. */
export type TensorSums = Record<Category, AffineBytes>;

/**
 * Each category's Σ fixed and Σ per-sample bytes over `tensors`, counting each tensor once whether
 * or not it is live beside the others (unlike a phase's totals, which the peak is taken from).
 */
export function tensorSums(tensors: readonly PlannedTensor[]): TensorSums {
  const sums = Object.fromEntries(CATEGORIES.map((c) => [c, { fixedBytes: 0, perSampleBytes: 0 }])) as TensorSums;
  for (const t of tensors) {
    sums[t.category].fixedBytes += t.fixedBytes;
    sums[t.category].perSampleBytes += t.perSampleBytes;
  }
  return sums;
}

// A transformer plan names its first layer's tensors so (src/plan/transformerStep.ts); full
// recomputation's re-run set is `recompute.layers.0.…`, which a per-layer count (Korthikanti et al.
// 2022, Table 2: 2sbh under full recomputation) leaves out.
const FIRST_LAYER = "layers.0.";

/** The tensors of a transformer plan's first layer (`layers.0.…`). */
export function firstLayerTensors(tensors: readonly PlannedTensor[]): PlannedTensor[] {
  return tensors.filter((t) => t.name.startsWith(FIRST_LAYER));
}

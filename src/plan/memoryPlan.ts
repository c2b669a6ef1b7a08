// The MemoryPlan: a workload as named tensors whose sizes are affine in the batch size.
import { tensorColumns } from "./tensorColumns.js";

/** The categories of device memory a workload needs (DESIGN.md, "The memory model"). */
export const CATEGORIES = [
  "parameters",
  "gradients",
  "optimizerStates",
  "activations",
  "kvCache",
  "workspace",
  "communication",
] as const;
export type Category = (typeof CATEGORIES)[number];

/**
 * One real allocation of the workload: `fixedBytes + perSampleBytes × batch` bytes, live from
 * phase `firstPhase` to phase `lastPhase` of the step (indices into `MemoryPlan.phases`, both
 * inclusive; absent: the first and the last phase, i.e. live for the whole step).
 */
export interface PlannedTensor {
  /** Where it comes from, e.g. `layers.3.attention.scores` or `optimizer.adam.exp_avg`. */
  name: string;
  category: Category;
  fixedBytes: number;
  perSampleBytes: number;
  /** The first phase in which it is allocated (default 0). */
  firstPhase?: number;
  /** The last phase in which it is still allocated; it is freed after it (default: the last phase). */
  lastPhase?: number;
}

export interface MemoryPlan {
  /** A short human description, e.g. `7e9 parameters, fp32, sgd`. */
  description: string;
  /** Parameters in the model (after sharding is *not* applied: the whole model), adapters included. */
  parameterCount: number;
  /** Parameters that train: the adapters with `--lora-rank`; absent: all of `parameterCount`. */
  trainableParameterCount?: number;
  /**
   * The step as a timeline: the names of its phases in order (`forward layers.0`, …, `loss`,
   * `backward layers.0`, `optimizer.step`, …). Memory is measured at each phase and the plan
   * needs the maximum over them. Absent: one phase, `step`, in which every tensor is live.
   */
  phases?: string[];
  /** Device memory: every allocation of the step, each live over its phases. */
  tensors: PlannedTensor[];
  /** Host memory of offloaded model states (`--offload`); absent when nothing is offloaded. */
  host?: HostPlan;
  /** The attention kernel every transformer layer is planned with (src/plan/attentionKernel.ts); absent without attention. */
  attentionKernel?: "eager" | "cudnn" | "flash" | "efficient" | "math";
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

/** The phase names of a plan (`["step"]` for a plan without a timeline). */
export function phasesOf(plan: MemoryPlan): string[] {
  return plan.phases !== undefined && plan.phases.length > 0 ? plan.phases : ["step"];
}

/** The phases over which a tensor is live, as [first, last] indices (inclusive). */
export function liveRange(plan: MemoryPlan, tensor: PlannedTensor): [number, number] {
  return [tensor.firstPhase ?? 0, tensor.lastPhase ?? phasesOf(plan).length - 1];
}

/** Whether a tensor is allocated during a phase. */
export function isLive(plan: MemoryPlan, tensor: PlannedTensor, phase: number): boolean {
  const [first, last] = liveRange(plan, tensor);
  return first <= phase && phase <= last;
}

/** The tensors allocated during a phase. */
export function liveTensors(plan: MemoryPlan, phase: number): PlannedTensor[] {
  return plan.tensors.filter((t) => isLive(plan, t, phase));
}

/** Each phase's live bytes as `fixedBytes + perSampleBytes × batch` (before any allocator rounding). */
export function phaseTotals(plan: MemoryPlan): readonly Readonly<{ fixedBytes: number; perSampleBytes: number }>[] {
  const columns = phaseTotalColumns(plan);
  const totals: { fixedBytes: number; perSampleBytes: number }[] = [];
  for (let phase = 0; phase < columns.fixedBytes.length; phase++) totals.push({ fixedBytes: columns.fixedBytes[phase]!, perSampleBytes: columns.perSampleBytes[phase]! });
  return totals;
}

/** Each phase's `fixedBytes` and `perSampleBytes` (as {@link phaseTotals}), phase p at index p. */
export interface PhaseTotalColumns {
  readonly fixedBytes: Float64Array;
  readonly perSampleBytes: Float64Array;
}

/**
 * {@link phaseTotals} as two columns, made once per tensor list. Every answer asks for them (the
 * step's hash, the search's seed, the live-bytes check): a training plan has ~2,000 phases, and
 * an object per phase for each of the advice case's 42 plans was 80,000 allocations.
 */
export function phaseTotalColumns(plan: MemoryPlan): PhaseTotalColumns {
  const cached = totalsByPlan.get(plan.tensors);
  if (cached !== undefined && cached.fixedBytes.length === phasesOf(plan).length) return cached;
  // Differences at each tensor's first phase and after its last, summed once: O(tensors + phases).
  const phases = phasesOf(plan).length;
  const columns = tensorColumns(plan, phases);
  // The differences in plain arrays of small integers while they are ones: this runs once per
  // plan in V8's interpreter, where every element read from a Float64Array is a new heap number
  // (resnet152: ~25,000 of them, 0.7 MB of garbage), and a small integer read from an array is
  // not. The same sums in the same order, so the same totals.
  const fixedDelta: number[] = new Array<number>(phases + 1).fill(0);
  const perSampleDelta: number[] = new Array<number>(phases + 1).fill(0);
  const { fixedBytes, perSampleBytes, firstPhase, lastPhase } = columns;
  for (let i = 0; i < fixedBytes.length; i++) {
    // A zero of either sign adds nothing to deltas that start at +0 (+0 + -0 is +0): skipped, which
    // leaves a CNN's parameters, gradients and states one update each instead of two (resnet152's
    // loop took ~3.4 ms, cold).
    // `x | 0` is the same integer as a small one; a heap number added in would make the array one of doubles.
    const fixedRead = fixedBytes[i]!;
    const perSampleRead = perSampleBytes[i]!;
    if (fixedRead !== 0) {
      const f = fixedRead === (fixedRead | 0) ? fixedRead | 0 : fixedRead;
      fixedDelta[firstPhase[i]!]! += f;
      fixedDelta[lastPhase[i]! + 1]! -= f;
    }
    if (perSampleRead !== 0) {
      const p = perSampleRead === (perSampleRead | 0) ? perSampleRead | 0 : perSampleRead;
      perSampleDelta[firstPhase[i]!]! += p;
      perSampleDelta[lastPhase[i]! + 1]! -= p;
    }
  }
  const fixed = new Float64Array(phases);
  const perSample = new Float64Array(phases);
  let f = 0;
  let p = 0;
  for (let phase = 0; phase < phases; phase++) {
    fixed[phase] = f += fixedDelta[phase]!;
    perSample[phase] = p += perSampleDelta[phase]!;
  }
  const totals = { fixedBytes: fixed, perSampleBytes: perSample };
  totalsByPlan.set(plan.tensors, totals);
  return totals;
}

const totalsByPlan = new WeakMap<readonly PlannedTensor[], PhaseTotalColumns>();

/**
 * Each phase's live bytes at a batch size, every tensor's bytes mapped by `allocate` (what the
 * allocator takes for it, e.g. rounded up to 512 B).
 */
export function phaseBytes(plan: MemoryPlan, batch: number, allocate: (bytes: number) => number = (bytes) => bytes): number[] {
  const phases = phasesOf(plan).length;
  const columns = tensorColumns(plan, phases);
  const delta = new Float64Array(phases + 1);
  for (let i = 0; i < columns.fixedBytes.length; i++) {
    const bytes = columns.fixedBytes[i]! + columns.perSampleBytes[i]! * batch;
    if (bytes <= 0) continue;
    const taken = allocate(bytes);
    delta[columns.firstPhase[i]!]! += taken;
    delta[columns.lastPhase[i]! + 1]! -= taken;
  }
  const live: number[] = [];
  let running = 0;
  for (let phase = 0; phase < phases; phase++) live.push((running += delta[phase]!));
  return live;
}

/**
 * The phase with the most live bytes at a batch size (`allocate` maps a tensor's bytes to what
 * the allocator takes for it); the earliest one on a tie.
 */
export function peakPhase(plan: MemoryPlan, batch: number, allocate: (bytes: number) => number = (bytes) => bytes): number {
  const live = phaseBytes(plan, batch, allocate);
  let peak = 0;
  for (let phase = 1; phase < live.length; phase++) if (live[phase]! > live[peak]!) peak = phase;
  return peak;
}

/** The most live bytes over the step at a batch size: the peak phase's (tensors mapped by `allocate`). */
export function peakBytes(plan: MemoryPlan, batch: number, allocate: (bytes: number) => number = (bytes) => bytes): number {
  return Math.max(...phaseBytes(plan, batch, allocate));
}

/**
 * The plan's affine totals, before any allocator rounding: Σ fixed and Σ per-sample bytes of
 * what is live at the peak phase for `batch` (default: the phase with the most per-sample bytes,
 * which is the peak at large batches).
 */
export function planTotals(plan: MemoryPlan, batch?: number): { fixedBytes: number; perSampleBytes: number } {
  const { fixedBytes, perSampleBytes } = phaseTotalColumns(plan);
  const at = (phase: number) => ({ fixedBytes: fixedBytes[phase]!, perSampleBytes: perSampleBytes[phase]! });
  if (batch !== undefined) return at(peakPhase(plan, batch));
  let best = largeBatchPeak.get(fixedBytes);
  if (best === undefined) {
    best = 0;
    for (let phase = 1; phase < fixedBytes.length; phase++) {
      if (perSampleBytes[phase]! > perSampleBytes[best]! || (perSampleBytes[phase]! === perSampleBytes[best]! && fixedBytes[phase]! > fixedBytes[best]!)) best = phase;
    }
    largeBatchPeak.set(fixedBytes, best);
  }
  return at(best);
}

/**
 * Per phase totals (phaseTotalColumns' columns, made once per tensor list), the phase planTotals
 * reads by default: every answer asks several times (the seed, the report), and the loop over a
 * training plan's ~1,000 phases ran cold each time (`batch --model resnet152`: 2 % of its CPU).
 */
const largeBatchPeak = new WeakMap<Float64Array, number>();

/**
 * Bytes per category live at the peak phase for a batch size (every category present, 0 when it
 * does not apply). `allocate` maps a tensor's bytes to what the allocator takes for it (rounding), if given.
 */
export function bytesByCategory(
  plan: MemoryPlan,
  batch: number,
  allocate: (bytes: number) => number = (bytes) => bytes,
): Record<Category, number> {
  const totals = Object.fromEntries(CATEGORIES.map((c) => [c, 0])) as Record<Category, number>;
  const peak = peakPhase(plan, batch, allocate);
  for (const t of plan.tensors) {
    const bytes = tensorBytes(t, batch);
    if (bytes > 0 && isLive(plan, t, peak)) totals[t.category] += allocate(bytes);
  }
  return totals;
}

/**
 * The largest batch whose step peak (tensors mapped by `allocate`) stays within `budgetBytes`:
 * exact for the plan (the peak grows with the batch). A pure search, with no allocator segments
 * or context (src/fit adds those); 0 when not even batch 1 fits.
 */
export function largestBatchWithin(plan: MemoryPlan, budgetBytes: number, allocate: (bytes: number) => number = (bytes) => bytes): number {
  let low = 0;
  let high = 1;
  while (peakBytes(plan, high, allocate) <= budgetBytes) {
    [low, high] = [high, high * 2];
    if (high > 2 ** 40) return low; // no per-sample bytes: any batch fits
  }
  while (high - low > 1) {
    const middle = Math.floor((low + high) / 2);
    if (peakBytes(plan, middle, allocate) <= budgetBytes) low = middle;
    else high = middle;
  }
  return low;
}

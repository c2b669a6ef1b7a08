// The analytic evaluator: a plan fits when its step, replayed by the job's allocator with the budget less the job's context, completes.
import { phaseTotalColumns, planTotals, type MemoryPlan } from "../plan/memoryPlan.js";
import { fitsBudget, replayStep, type AllocatorModel } from "./allocator.js";
import { searchMaxBatch, type FitsFunction, type SearchResult } from "./search.js";

/**
 * fits(b) for the analytic model: the step at batch b replayed at capacity = budget less the
 * job's context completes (PyTorch frees its cache and retries before it gives up, so what
 * decides is the live segments, not the unconstrained peak). Not monotone in b: see search.ts.
 */
export function analyticFits(plan: MemoryPlan, budgetBytes: number, allocator: AllocatorModel): FitsFunction {
  const room = budgetBytes - allocator.contextBytes;
  return (batch) => !liveBytesExceed(plan, batch, room) && fitsBudget(plan, batch, allocator, budgetBytes);
}

/**
 * Whether some phase of the step at `batch` holds more bytes than `roomBytes` (its tensors' own
 * bytes, from the phase totals: no replay). Then the replay at that capacity cannot complete:
 * once the replay has made a phase's allocations, every tensor live in the phase is allocated at
 * once, each block at least its tensor's bytes, all within the segments the capacity bounds. So
 * it answers fits(b) = false as the replay would, for the cost of a loop over the phases: the
 * seed of a search can be far off (GPT-3 under ZeRO-3 over 64 GPUs with full recomputation, seed
 * 1,102,765 for an answer of 5: 39 replays, most of them at batches whose bytes alone are too many).
 */
export function liveBytesExceed(plan: MemoryPlan, batch: number, roomBytes: number): boolean {
  const { fixedBytes, perSampleBytes } = phaseTotalColumns(plan);
  const bounds = phaseBounds(fixedBytes, perSampleBytes);
  // The phases most likely to exceed first, then the bound under which none can: most calls end
  // here without the loop over ~2,000 phases, which ran cold in a fresh process (255 calls for
  // the advice case: 20-70 ms).
  for (let i = 0; i < bounds.likeliest.length; i++) {
    const phase = bounds.likeliest[i]!;
    if (fixedBytes[phase]! + perSampleBytes[phase]! * batch > roomBytes) return true;
  }
  if (batch >= 0 && bounds.fixedBytes + bounds.perSampleBytes * batch <= roomBytes) return false;
  if (batch >= 0) {
    // Near an answer that bound is passed: only the blocks whose own bound is passed are read
    // (the four catalog GPUs' searches read all ~1,040 of ResNet-152's phases ~20 times, cold).
    const { blockFixedBytes, blockPerSampleBytes } = bounds;
    for (let block = 0; block < blockFixedBytes.length; block++) {
      if (blockFixedBytes[block]! + blockPerSampleBytes[block]! * batch <= roomBytes) continue;
      const end = Math.min(fixedBytes.length, (block + 1) * PHASE_BLOCK);
      for (let phase = block * PHASE_BLOCK; phase < end; phase++) if (fixedBytes[phase]! + perSampleBytes[phase]! * batch > roomBytes) return true;
    }
    return false;
  }
  for (let phase = 0; phase < fixedBytes.length; phase++) if (fixedBytes[phase]! + perSampleBytes[phase]! * batch > roomBytes) return true;
  return false;
}

interface PhaseBounds {
  fixedBytes: number;
  perSampleBytes: number;
  likeliest: number[];
  /** The same two maxima over each run of PHASE_BLOCK phases: the bound of that run alone. */
  blockFixedBytes: Float64Array;
  blockPerSampleBytes: Float64Array;
}

/** Phases per block of liveBytesExceed's second bound. */
const PHASE_BLOCK = 32;

/**
 * Per plan's phase totals (src/plan/memoryPlan.ts, phaseTotalColumns), the largest fixed and the
 * largest per-sample bytes of any phase — for a batch ≥ 0 no phase holds more than their sum
 * (each term is at most its maximum, and floating-point + and × are monotone) — and the phases
 * that hold each: the peak at small and at large batches.
 */
function phaseBounds(fixedBytes: Float64Array, perSampleBytes: Float64Array): PhaseBounds {
  let bounds = boundsByTotals.get(fixedBytes);
  if (bounds !== undefined) return bounds;
  const n = fixedBytes.length;
  let fixed = 0;
  let perSample = 0;
  // Each total read once, the maxima kept in locals: this runs once per plan in V8's interpreter,
  // where every element read from a Float64Array is a new heap number (a training plan's ~2,000
  // phases were read eight times each).
  let fixedMax = n > 0 ? fixedBytes[0]! : 0;
  let perSampleMax = n > 0 ? perSampleBytes[0]! : 0;
  const blocks = Math.ceil(n / PHASE_BLOCK);
  const blockFixedBytes = new Float64Array(blocks);
  const blockPerSampleBytes = new Float64Array(blocks);
  for (let block = 0; block < blocks; block++) {
    let blockFixed = -Infinity;
    let blockPerSample = -Infinity;
    const end = Math.min(n, (block + 1) * PHASE_BLOCK);
    for (let i = block * PHASE_BLOCK; i < end; i++) {
      const f = fixedBytes[i]!;
      const p = perSampleBytes[i]!;
      if (f > fixedMax) {
        fixed = i;
        fixedMax = f;
      }
      if (p > perSampleMax) {
        perSample = i;
        perSampleMax = p;
      }
      // A NaN total is never "more than the room" in the loop: leaving it out of the maxima is exact.
      if (f > blockFixed) blockFixed = f;
      if (p > blockPerSample) blockPerSample = p;
    }
    blockFixedBytes[block] = blockFixed;
    blockPerSampleBytes[block] = blockPerSample;
  }
  const empty = n === 0;
  bounds = { fixedBytes: empty ? 0 : fixedBytes[fixed]!, perSampleBytes: empty ? 0 : perSampleBytes[perSample]!, likeliest: empty ? [] : [perSample, fixed], blockFixedBytes, blockPerSampleBytes };
  boundsByTotals.set(fixedBytes, bounds);
  return bounds;
}
const boundsByTotals = new WeakMap<Float64Array, PhaseBounds>();

/**
 * The closed-form estimate ⌊(budget − fixed) / perSample⌋ from the plan's affine totals with the
 * allocator's costs, then corrected once. At capacity PyTorch frees its cached segments before it
 * gives up, so what must fit is close to the peak of the allocated blocks (ResNet-152 at 224² in
 * 80 GB: blocks 75.3 of 75.8 GiB at the answer, 440, where the unconstrained segments would need
 * 80.5): the slope of that peak is measured by one replay at the first estimate, and the line
 * through batch 0 and it lands at or a batch or two above the answer. Approximate either way: it
 * only seeds the search.
 */
export function affineEstimate(plan: MemoryPlan, budgetBytes: number, allocator: AllocatorModel): number {
  const { perSampleBytes } = planTotals(plan);
  const fixedBytes = replayStep(plan, 0, allocator).allocatedPeakBytes + allocator.contextBytes;
  if (perSampleBytes <= 0) return Number.MAX_SAFE_INTEGER;
  const first = Math.max(0, Math.floor((budgetBytes - fixedBytes) / perSampleBytes));
  if (first === 0) return 0;
  const slope = (replayStep(plan, first, allocator).allocatedPeakBytes + allocator.contextBytes - fixedBytes) / first;
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

// The step's allocation trace: a plan's tensors as the allocations and frees one step makes, in order.
import { isLive, peakPhase, phasesOf, tensorBytes, type MemoryPlan, type PlannedTensor } from "../plan/memoryPlan.js";
import { tensorColumns } from "../plan/tensorColumns.js";

/** One step of replaying a plan at a batch size: a tensor allocated, or freed. */
export type AllocationEvent = { kind: "alloc"; tensor: number; bytes: number } | { kind: "free"; tensor: number };

/**
 * A step's allocations and frees as flat arrays, the form the allocator replays take (a deep
 * model's step is tens of thousands of events: objects for each, at every batch a search tries,
 * made most of a replay's time and long garbage-collection pauses). `order[k] >= 0` allocates
 * tensor `order[k]`, `order[k] < 0` frees tensor `~order[k]`; `bytes[i]` is tensor i's size, and
 * a tensor of no bytes is neither allocated nor freed.
 */
export interface AllocationTrace {
  order: Int32Array;
  bytes: Float64Array;
}

/** Each plan's order of allocations and frees: the same at every batch, so computed once. */
const orders = new WeakMap<readonly PlannedTensor[], Int32Array>();

/**
 * The step's allocations and frees in order: phase by phase, first freeing what the previous
 * phase was the last to use (latest allocated first), then allocating what the phase starts to
 * use (in the order of `tensors`). Tensors live to the end of the step are never freed.
 */
function allocationOrder(plan: MemoryPlan): Int32Array {
  const cached = orders.get(plan.tensors);
  if (cached !== undefined) return cached;
  // Each phase's starting and ending tensors as linked lists threaded through two arrays (a deep
  // model's plan has tens of thousands of tensors, and this runs once per plan in V8's
  // interpreter): two passes over the tensors and one over the phases. Starts are linked from the
  // last tensor down, so each list runs in the order of `tensors`; ends from the first up, so each
  // runs latest first.
  const phases = phasesOf(plan).length;
  const n = plan.tensors.length;
  const { firstPhase: first, lastPhase: last } = tensorColumns(plan, phases);
  const startHead = new Int32Array(phases).fill(-1);
  const endHead = new Int32Array(phases).fill(-1);
  const nextStart = new Int32Array(n);
  const nextEnd = new Int32Array(n);
  for (let i = n - 1; i >= 0; i--) {
    const p = first[i]!;
    nextStart[i] = startHead[p]!;
    startHead[p] = i;
  }
  let ends = 0;
  for (let i = 0; i < n; i++) {
    const p = last[i]!;
    if (p < phases - 1) {
      nextEnd[i] = endHead[p]!;
      endHead[p] = i;
      ends++;
    }
  }
  const order = new Int32Array(n + ends);
  let k = 0;
  for (let phase = 0; phase < phases; phase++) {
    if (phase > 0) for (let e = endHead[phase - 1]!; e >= 0; e = nextEnd[e]!) order[k++] = ~e;
    for (let s = startHead[phase]!; s >= 0; s = nextStart[s]!) order[k++] = s;
  }
  orders.set(plan.tensors, order);
  return order;
}

/** The plan at a batch size as a trace of allocations and frees (see `allocationEvents`). */
export function allocationTrace(plan: MemoryPlan, batch: number): AllocationTrace {
  const { fixedBytes, perSampleBytes } = tensorColumns(plan, phasesOf(plan).length);
  const bytes = new Float64Array(fixedBytes.length);
  for (let i = 0; i < bytes.length; i++) bytes[i] = fixedBytes[i]! + perSampleBytes[i]! * batch;
  return { order: allocationOrder(plan), bytes };
}

/**
 * Per tensor list, the one trace replayTrace hands out: the step's order, and bytes written for
 * the batch last asked for, from the columns they were written from; and the tensors whose bytes
 * change with the batch.
 */
const replayTraces = new WeakMap<readonly PlannedTensor[], { batch: number; trace: AllocationTrace; from: Float64Array; scaled: ScaledTensors }>();

/**
 * The tensors whose bytes depend on the batch (`index`), with their fixed and per-sample bytes:
 * a per-sample size other than 0 (NaN included), and a fixed size of -0 (-0 + 0 × batch is 0 for
 * a batch ≥ 0, -0 below). Every other tensor's bytes are its fixed bytes at every finite batch. A
 * CNN's parameters, gradients and optimizer states are most of its tensors (resnet152: 785 of
 * 3,589 scale with the batch). The sizes are kept in plain arrays, not typed ones: in V8's
 * interpreter, where this runs (once per batch a search tries, in a fresh process), every
 * element read from a Float64Array is a new heap number, and a plain array of small integers
 * hands out its elements as they are (resnet152's 17 batches: ~40,000 heap numbers, 0.6 MB of
 * the garbage that made the command's six scavenges).
 */
interface ScaledTensors {
  index: number[];
  fixedBytes: number[];
  perSampleBytes: number[];
}

function scaledTensors(fixedBytes: Float64Array, perSampleBytes: Float64Array): ScaledTensors {
  const scaled: ScaledTensors = { index: [], fixedBytes: [], perSampleBytes: [] };
  // One pass and no calls (Object.is): it runs once per plan, cold.
  for (let i = 0; i < perSampleBytes.length; i++) {
    const perSample = perSampleBytes[i]!;
    const fixed = fixedBytes[i]!;
    if (perSample !== 0 || (fixed === 0 && 1 / fixed < 0)) {
      scaled.index.push(i);
      // A number read from a Float64Array is a heap number even when it is a small integer, and
      // one in an array makes it an array of doubles: `x | 0` is the same integer as a small one.
      // The same value either way (-0 kept as it is).
      scaled.fixedBytes.push(fixed === (fixed | 0) && (fixed !== 0 || 1 / fixed > 0) ? fixed | 0 : fixed);
      scaled.perSampleBytes.push(perSample === (perSample | 0) && (perSample !== 0 || 1 / perSample > 0) ? perSample | 0 : perSample);
    }
  }
  return scaled;
}

/**
 * {@link allocationTrace} for a replay that keeps nothing of the trace once it returns (the
 * allocator emulations): one bytes array per plan, written again when the batch changes, so the
 * trace returned before is overwritten. A command's replays (19 for `batch --model resnet152`,
 * at most 7 distinct batches per GPU) each made a new array of every tensor's bytes. From one
 * finite batch to another only the tensors that scale with the batch are written again: the
 * loop runs cold, in V8's interpreter, once per batch a search tries.
 */
export function replayTrace(plan: MemoryPlan, batch: number): AllocationTrace {
  const { fixedBytes, perSampleBytes } = tensorColumns(plan, phasesOf(plan).length);
  let kept = replayTraces.get(plan.tensors);
  if (kept === undefined || kept.from !== fixedBytes) {
    kept = { batch: Number.NaN, trace: { order: allocationOrder(plan), bytes: new Float64Array(fixedBytes.length) }, from: fixedBytes, scaled: scaledTensors(fixedBytes, perSampleBytes) };
    replayTraces.set(plan.tensors, kept);
  }
  const { bytes } = kept.trace;
  if (!Object.is(kept.batch, batch)) {
    if (Number.isFinite(batch)) {
      // The first finite batch starts from the fixed bytes, copied natively (every other tensor's
      // bytes at a finite batch, see ScaledTensors): an interpreted walk of every tensor read two
      // heap numbers each from the Float64Arrays (resnet152: 3,589 tensors, once per plan).
      if (!Number.isFinite(kept.batch)) bytes.set(fixedBytes);
      const { index, fixedBytes: fixed, perSampleBytes: perSample } = kept.scaled;
      for (let k = 0; k < index.length; k++) bytes[index[k]!] = fixed[k]! + perSample[k]! * batch;
    } else for (let i = 0; i < bytes.length; i++) bytes[i] = fixedBytes[i]! + perSampleBytes[i]! * batch;
    kept.batch = batch;
  }
  return kept.trace;
}

/** A list of events as a trace: each allocation a tensor of its own, each free the latest allocation of its tensor. */
export function traceOfEvents(events: readonly AllocationEvent[]): AllocationTrace {
  const order = new Int32Array(events.length);
  const sizes: number[] = [];
  const slotOf = new Map<number, number>();
  events.forEach((e, k) => {
    if (e.kind === "alloc") {
      slotOf.set(e.tensor, sizes.length);
      order[k] = sizes.length;
      sizes.push(e.bytes);
    } else {
      let slot = slotOf.get(e.tensor);
      if (slot === undefined) {
        // A free of a tensor never allocated frees nothing: an empty slot of its own.
        slot = sizes.length;
        sizes.push(0);
      }
      order[k] = ~slot;
    }
  });
  return { order, bytes: Float64Array.from(sizes) };
}

/**
 * The plan at a batch size as the sequence of allocations and frees the step makes: phase by
 * phase, first freeing what the previous phase was the last to use (latest allocated first), then
 * allocating what the phase starts to use (in the order of `tensors`). Tensors live to the end
 * of the step are never freed. Empty tensors are left out. `tensor` indexes `plan.tensors`.
 */
export function allocationEvents(plan: MemoryPlan, batch: number): AllocationEvent[] {
  const { order, bytes } = allocationTrace(plan, batch);
  const events: AllocationEvent[] = [];
  for (const code of order) {
    const tensor = code >= 0 ? code : ~code;
    if (bytes[tensor]! <= 0) continue;
    events.push(code >= 0 ? { kind: "alloc", tensor, bytes: bytes[tensor]! } : { kind: "free", tensor });
  }
  return events;
}

/** The allocation sizes live at the plan's peak phase at a batch size (empty tensors are left out). */
export function allocationSizes(plan: MemoryPlan, batch: number): number[] {
  const peak = peakPhase(plan, batch);
  return plan.tensors.filter((t) => isLive(plan, t, peak)).map((t) => tensorBytes(t, batch)).filter((bytes) => bytes > 0);
}

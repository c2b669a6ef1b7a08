// The MemoryPlan: a workload as named tensors whose sizes are affine in the batch size.

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
  // Every answer asks for them (the search's seed, the result's totals): made once per plan.
  const cached = totalsByPlan.get(plan.tensors);
  if (cached !== undefined && cached.phases === phasesOf(plan).length) return cached.totals;
  // Differences at each tensor's first phase and after its last, summed once: O(tensors + phases).
  const phases = phasesOf(plan).length;
  const fixed = new Array<number>(phases + 1).fill(0);
  const perSample = new Array<number>(phases + 1).fill(0);
  for (const t of plan.tensors) {
    const [first, last] = liveRange(plan, t);
    fixed[first]! += t.fixedBytes;
    fixed[last + 1]! -= t.fixedBytes;
    perSample[first]! += t.perSampleBytes;
    perSample[last + 1]! -= t.perSampleBytes;
  }
  const totals: { fixedBytes: number; perSampleBytes: number }[] = [];
  let f = 0;
  let p = 0;
  for (let phase = 0; phase < phases; phase++) {
    f += fixed[phase]!;
    p += perSample[phase]!;
    totals.push(Object.freeze({ fixedBytes: f, perSampleBytes: p }));
  }
  totalsByPlan.set(plan.tensors, { phases, totals });
  return totals;
}

const totalsByPlan = new WeakMap<readonly PlannedTensor[], { phases: number; totals: readonly Readonly<{ fixedBytes: number; perSampleBytes: number }>[] }>();

/**
 * Each phase's live bytes at a batch size, every tensor's bytes mapped by `allocate` (what the
 * allocator takes for it, e.g. rounded up to 512 B).
 */
export function phaseBytes(plan: MemoryPlan, batch: number, allocate: (bytes: number) => number = (bytes) => bytes): number[] {
  const phases = phasesOf(plan).length;
  const delta = new Array<number>(phases + 1).fill(0);
  for (const t of plan.tensors) {
    const bytes = t.fixedBytes + t.perSampleBytes * batch;
    if (bytes <= 0) continue;
    const taken = allocate(bytes);
    delta[t.firstPhase ?? 0]! += taken;
    delta[(t.lastPhase ?? phases - 1) + 1]! -= taken;
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
  // Bucketed by phase with counting sorts (a deep model's plan has tens of thousands of tensors).
  const phases = phasesOf(plan).length;
  const n = plan.tensors.length;
  const startCount = new Int32Array(phases + 1);
  const endCount = new Int32Array(phases + 1);
  const first = new Int32Array(n);
  const last = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    const t = plan.tensors[i]!;
    first[i] = t.firstPhase ?? 0;
    last[i] = t.lastPhase ?? phases - 1;
    startCount[first[i]! + 1]! += 1;
    if (last[i]! < phases - 1) endCount[last[i]! + 1]! += 1;
  }
  for (let p = 0; p < phases; p++) {
    startCount[p + 1]! += startCount[p]!;
    endCount[p + 1]! += endCount[p]!;
  }
  const starting = new Int32Array(startCount[phases]!);
  const ending = new Int32Array(endCount[phases]!);
  const startAt = startCount.slice();
  const endAt = endCount.slice();
  for (let i = 0; i < n; i++) {
    starting[startAt[first[i]!]!++] = i;
    if (last[i]! < phases - 1) ending[endAt[last[i]!]!++] = i;
  }
  const order = new Int32Array(starting.length + ending.length);
  let k = 0;
  for (let phase = 0; phase < phases; phase++) {
    if (phase > 0) for (let e = endCount[phase]! - 1; e >= endCount[phase - 1]!; e--) order[k++] = ~ending[e]!;
    for (let s = startCount[phase]!; s < startCount[phase + 1]!; s++) order[k++] = starting[s]!;
  }
  orders.set(plan.tensors, order);
  return order;
}

/** The plan at a batch size as a trace of allocations and frees (see `allocationEvents`). */
export function allocationTrace(plan: MemoryPlan, batch: number): AllocationTrace {
  const bytes = new Float64Array(plan.tensors.length);
  plan.tensors.forEach((t, i) => (bytes[i] = tensorBytes(t, batch)));
  return { order: allocationOrder(plan), bytes };
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

/**
 * The plan's affine totals, before any allocator rounding: Σ fixed and Σ per-sample bytes of
 * what is live at the peak phase for `batch` (default: the phase with the most per-sample bytes,
 * which is the peak at large batches).
 */
export function planTotals(plan: MemoryPlan, batch?: number): { fixedBytes: number; perSampleBytes: number } {
  const totals = phaseTotals(plan);
  if (batch !== undefined) return totals[peakPhase(plan, batch)]!;
  let best = 0;
  for (let phase = 1; phase < totals.length; phase++) {
    const t = totals[phase]!;
    const b = totals[best]!;
    if (t.perSampleBytes > b.perSampleBytes || (t.perSampleBytes === b.perSampleBytes && t.fixedBytes > b.fixedBytes)) best = phase;
  }
  return totals[best]!;
}

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

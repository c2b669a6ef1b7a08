// How a plan becomes device memory: the driver allocations the job's allocator makes, plus the job's CUDA context.
import type { MemoryPlan } from "../plan/memoryPlan.js";
import { allocationTrace, replayTrace, type AllocationTrace } from "../step/allocationTrace.js";
import { roundUp } from "../units.js";
import { DEFAULT_ALLOC_CONF, formatAllocConf, type AllocConf } from "./allocConf.js";
import { cachingAllocatorSegments, probeSteps, replayAtCapacity, type ReplayResult } from "./cachingAllocator.js";
import { expandableProbeSteps, replayExpandable } from "./expandableSegments.js";

/**
 * The allocator the job uses:
 * - `pytorch`: PyTorch's CUDA caching allocator (its default): segments of 2 MiB, 20 MiB or the
 *   request rounded to 2 MiB, blocks split and reused best-fit, never given back (cachingAllocator.ts);
 * - `expandable`: PyTorch with `expandable_segments:True`: one growing segment per pool, mapped
 *   in 2 MiB / 20 MiB pages (expandableSegments.ts);
 * - `raw`: one `cuMemAlloc` per tensor, freed when the tensor dies, each rounded up to the
 *   driver's 2 MiB page (a framework without a caching allocator).
 */
export const ALLOCATOR_KINDS = ["pytorch", "expandable", "raw"] as const;
export type AllocatorKind = (typeof ALLOCATOR_KINDS)[number];
export const DEFAULT_ALLOCATOR: AllocatorKind = "pytorch";

/** The driver's allocation granularity the `raw` model rounds each tensor to (cuMemAlloc hands out 2 MiB pages). */
export const DRIVER_PAGE_BYTES = 2 * 2 ** 20;

/** How a target charges a plan: the job's allocator, and the CUDA context it pays for besides. */
export interface AllocatorModel {
  kind: AllocatorKind;
  /** Device memory charged for the job's CUDA context (see fit/context.ts). */
  contextBytes: number;
  /** The caching allocator's PYTORCH_CUDA_ALLOC_CONF settings (default: PyTorch's defaults); not for `raw`. */
  conf?: AllocConf;
  /**
   * PyTorch's allowed_memory_maximum on the target (allowedMemoryBytes: ⌊per_process_memory_fraction
   * × the device's total⌋), where the configuration sets a fraction; unset: none.
   */
  allowedBytes?: number;
}

/** The raw model: the tensors live when their 2 MiB-rounded sum peaks, each one cuMemAlloc. */
function rawAllocations({ order, bytes }: AllocationTrace): number[] {
  /** Replays the step's first `steps` events: what is live after them, and each change of the held bytes. */
  const replay = (steps: number, held?: (bytes: number, step: number) => void): Uint8Array => {
    const live = new Uint8Array(bytes.length);
    let total = 0;
    for (let k = 0; k < steps; k++) {
      const code = order[k]!;
      const tensor = code >= 0 ? code : ~code;
      // An empty tensor, or a free of what is not live, changes nothing.
      if (bytes[tensor]! <= 0 || live[tensor] === (code >= 0 ? 1 : 0)) continue;
      live[tensor] = code >= 0 ? 1 : 0;
      total += (code >= 0 ? 1 : -1) * roundUp(bytes[tensor]!, DRIVER_PAGE_BYTES);
      held?.(total, k);
    }
    return live;
  };
  let peak = 0;
  let peakAt = -1;
  replay(order.length, (total, k) => {
    if (total > peak) [peak, peakAt] = [total, k];
  });
  const live = replay(peakAt + 1);
  const sizes: number[] = [];
  for (let k = 0; k <= peakAt; k++) if (order[k]! >= 0 && live[order[k]!] === 1) sizes.push(bytes[order[k]!]!); // in the order allocated
  return sizes;
}

/**
 * The device allocations the job makes at a batch size, in the order it makes them, and the ones
 * it gives back on the way (`releases`, flattened (before, which) pairs, see probeSteps): for
 * `pytorch` the segments of the step's replay at `capacityBytes` where it completes there (the
 * out-of-memory path's cudaFrees included; `atCapacity` true), else those of the replay with no
 * limit, held to the end; for `expandable` the same with pages, one allocation for each run of
 * pages mapped together and unmapped together, the unmapped ones given back (expandableProbeSteps); for `raw` the tensors live at the peak (the
 * driver rounds them), none given back. Only where `atCapacity` does a lower capacity change the
 * calls: the device probe replays again at the room the device really gave.
 */
export function deviceSteps(plan: MemoryPlan, batch: number, kind: AllocatorKind, conf: AllocConf = DEFAULT_ALLOC_CONF, capacityBytes = Number.POSITIVE_INFINITY, allowedBytes = Number.POSITIVE_INFINITY): DeviceSteps {
  // Identical devices (`--device all` on eight of one GPU) probe the same plan at the same batch and
  // capacity, each at once: one replay serves them all. Only the latest few are kept (segment lists).
  let recent = stepsByPlan.get(plan);
  if (recent === undefined) stepsByPlan.set(plan, (recent = new Map()));
  const key = `${kind}:${confKey(conf)}:${allowedBytes}:${batch}:${capacityBytes}`;
  const known = recent.get(key);
  if (known !== undefined) return known;
  const steps = stepsOf(plan, batch, kind, conf, capacityBytes, allowedBytes);
  if (recent.size >= DEVICE_STEPS_PER_PLAN) recent.delete(recent.keys().next().value!);
  recent.set(key, steps);
  return steps;
}

/**
 * `refused`: PyTorch's own per_process_memory_fraction stops the step whatever the device holds
 * (nothing to probe). `pageBytes`: for expandable segments, each allocation's page size (the probe
 * maps it page by page through the driver's virtual-memory API, as PyTorch does).
 */
type DeviceSteps = { readonly sizes: readonly number[]; readonly releases: readonly number[]; readonly atCapacity: boolean; readonly refused?: boolean; readonly pageBytes?: readonly number[] };
const stepsByPlan = new WeakMap<MemoryPlan, Map<string, DeviceSteps>>();
const DEVICE_STEPS_PER_PLAN = 8;

function stepsOf(plan: MemoryPlan, batch: number, kind: AllocatorKind, conf: AllocConf, capacityBytes: number, allowedBytes: number): DeviceSteps {
  const trace = allocationTrace(plan, batch);
  if (kind === "raw") return { sizes: rawAllocations(trace), releases: [], atCapacity: false };
  if (kind === "expandable" || conf.expandableSegments) {
    if (Number.isFinite(capacityBytes)) {
      const { sizes, releases, pageBytes, fits } = expandableProbeSteps(trace, Math.max(0, capacityBytes), conf, { allowedBytes });
      if (fits) return { sizes, releases, pageBytes, atCapacity: true };
    }
    // No limit of the device's: without a fraction nothing is unmapped, so one allocation per map;
    // under one, its own out-of-memory path may unmap (and where it stops the step, no device lets it).
    const { sizes, releases, pageBytes, fits } = expandableProbeSteps(trace, Number.POSITIVE_INFINITY, conf, { allowedBytes });
    return fits ? { sizes, releases, pageBytes, atCapacity: false } : { sizes: [], releases: [], atCapacity: false, refused: true };
  }
  if (Number.isFinite(capacityBytes)) {
    const replay = replayAtCapacity(trace, Math.max(0, capacityBytes), conf, { segments: true, allowedBytes });
    if (replay.fits) return { ...probeSteps(replay.segmentLog!), atCapacity: true };
  }
  if (Number.isFinite(allowedBytes)) {
    // A memory fraction is PyTorch's own limit, not the device's: where the step does not complete
    // under it with all the device's memory, no device lets it; where it does, its segments are
    // those of that replay, the fraction's frees (out-of-memory path, collection) included.
    const replay = replayAtCapacity(trace, Number.POSITIVE_INFINITY, conf, { segments: true, allowedBytes });
    return replay.fits ? { ...probeSteps(replay.segmentLog!), atCapacity: false } : { sizes: [], releases: [], atCapacity: false, refused: true };
  }
  return { sizes: cachingAllocatorSegments(trace, conf), releases: [], atCapacity: false };
}

/**
 * Every device allocation the job makes at a batch size, in order (deviceSteps' sizes): for
 * `pytorch` the segments — of the replay at `capacityBytes` where it completes there, some of
 * them given back on the way (see deviceSteps), else of the replay with no limit, all held at the
 * end; for `expandable` the pages (a run mapped together, one allocation), for `raw` the tensors live at the peak (the driver rounds them).
 */
export function deviceAllocations(plan: MemoryPlan, batch: number, kind: AllocatorKind, conf: AllocConf = DEFAULT_ALLOC_CONF, capacityBytes = Number.POSITIVE_INFINITY): readonly number[] {
  return deviceSteps(plan, batch, kind, conf, capacityBytes).sizes;
}

/** The step's replay at a capacity for `raw`: it holds only live tensors, so its peak decides exactly. */
function replayRaw(trace: AllocationTrace, capacityBytes: number): ReplayResult {
  const sizes = rawAllocations(trace);
  let reserved = 0;
  for (const size of sizes) reserved += roundUp(size, DRIVER_PAGE_BYTES);
  // The tensors' own peak, each rounded to the driver's page.
  let allocated = 0;
  let allocatedPeak = 0;
  const live = new Uint8Array(trace.bytes.length);
  for (const code of trace.order) {
    const tensor = code >= 0 ? code : ~code;
    const bytes = trace.bytes[tensor]!;
    if (bytes <= 0 || live[tensor] === (code >= 0 ? 1 : 0)) continue;
    live[tensor] = code >= 0 ? 1 : 0;
    allocated += (code >= 0 ? 1 : -1) * roundUp(bytes, DRIVER_PAGE_BYTES);
    if (allocated > allocatedPeak) allocatedPeak = allocated;
  }
  const fits = reserved <= capacityBytes;
  return { fits, reservedPeakBytes: reserved, allocatedPeakBytes: allocatedPeak, cudaMallocs: sizes.length, cudaFrees: 0, allocRetries: 0, failedAt: fits ? -1 : trace.order.length - 1 };
}

/**
 * A configuration as written in a replay's key: the default's (frozen) made once, not at every
 * replay (a command's searches ask for a replay a few dozen times, cold).
 */
function confKey(conf: AllocConf): string {
  return conf === DEFAULT_ALLOC_CONF ? DEFAULT_CONF_KEY : formatAllocConf(conf);
}
const DEFAULT_CONF_KEY = formatAllocConf(DEFAULT_ALLOC_CONF);

/** The allocator a model replays: `expandable` when the configuration asks for expandable segments. */
function effectiveKind(model: Pick<AllocatorModel, "kind" | "conf">): AllocatorKind {
  return model.kind === "pytorch" && model.conf?.expandableSegments ? "expandable" : model.kind;
}

/**
 * The step of a plan at a batch size replayed by the job's allocator on a device with
 * `capacityBytes` for its allocations (Infinity: no limit): whether it completes, its peaks and
 * driver calls. The `pytorch` allocator follows PyTorch's out-of-memory path (free the cache,
 * retry), so a step fits when its live segments do, not only when its unconstrained peak does;
 * `expandable` follows its own (unmap the cached free pages, retry: expandableSegments.ts).
 */
export function replayStep(plan: MemoryPlan, batch: number, model: Pick<AllocatorModel, "kind" | "conf" | "allowedBytes">, capacityBytes = Number.POSITIVE_INFINITY): ReplayResult {
  const kind = effectiveKind(model);
  const conf = model.conf ?? DEFAULT_ALLOC_CONF;
  const allowedBytes = model.allowedBytes ?? Number.POSITIVE_INFINITY;
  let cache = replays.get(plan);
  if (cache === undefined) replays.set(plan, (cache = { count: 0, byStep: new Map() }));
  const key = `${kind}:${confKey(conf)}:${allowedBytes}:${batch}`;
  let known = cache.byStep.get(key);
  if (known !== undefined) {
    // Without memory pressure the replay is the same at every capacity its peak fits in; and the
    // caching allocator's replay at one capacity is the replay at every capacity that makes the
    // same choices (ReplayResult.refusedBytes): budgets near each other share their replays.
    const limit = Math.min(Math.max(0, capacityBytes), allowedBytes);
    for (const { capacity, result } of known) {
      if (capacity === capacityBytes) return result;
      if (capacity === Number.POSITIVE_INFINITY && result.reservedPeakBytes <= capacityBytes) return result;
      if (kind === "pytorch" && result.reservedPeakBytes <= limit && limit < result.refusedBytes!) return result;
    }
  }
  // The replays keep nothing of the trace: one bytes array per plan serves them all.
  const trace = replayTrace(plan, batch);
  const capacity = Math.max(0, capacityBytes);
  const result = kind === "pytorch" ? replayAtCapacity(trace, capacity, conf, { allowedBytes }) : kind === "expandable" ? replayExpandable(trace, capacity, conf, { allowedBytes }) : replayRaw(trace, capacity);
  if (cache.count >= REPLAYS_PER_PLAN) {
    cache.byStep.clear();
    cache.count = 0;
    known = undefined;
  }
  if (known === undefined) cache.byStep.set(key, (known = []));
  known.push({ capacity: capacityBytes, result });
  cache.count += 1;
  return result;
}

/**
 * Replays of a plan, per allocator, configuration and batch, each with the capacity it was made
 * at: the search and the report ask for the same batch more than once, and the budgets of several
 * GPUs ask for it at capacities one replay can answer. Only the figures are kept: a deep model's
 * segment lists, kept for every batch advice and `gpus --fit` try, held hundreds of MiB and made
 * garbage-collection pauses long enough to delay a signal.
 */
const replays = new WeakMap<MemoryPlan, { count: number; byStep: Map<string, { capacity: number; result: ReplayResult }[]> }>();
const REPLAYS_PER_PLAN = 256;

/** The device bytes of the allocations at the peak with no memory limit (before the context): PyTorch's peak `memory_reserved()`. */
export function reservedBytes(plan: MemoryPlan, batch: number, kind: AllocatorKind, conf?: AllocConf, allowedBytes?: number): number {
  return replayStep(plan, batch, { kind, ...(conf !== undefined && { conf }), ...(allowedBytes !== undefined && { allowedBytes }) }).reservedPeakBytes;
}

/** The device bytes a plan takes at a batch size under an allocator model with no memory limit: its allocations and the context. */
export function plannedBytes(plan: MemoryPlan, batch: number, allocator: AllocatorModel): number {
  return reservedBytes(plan, batch, allocator.kind, allocator.conf, allocator.allowedBytes) + allocator.contextBytes;
}

/**
 * Whether a plan at a batch size fits a budget (the job's context included): its step, replayed
 * by the job's allocator with the budget less the context for its allocations, completes.
 */
export function fitsBudget(plan: MemoryPlan, batch: number, allocator: AllocatorModel, budgetBytes: number): boolean {
  return replayStep(plan, batch, allocator, budgetBytes - allocator.contextBytes).fits;
}

/**
 * The device bytes a plan takes at a batch size within a budget: where it fits, the most its
 * allocator reserves at that capacity (after freeing its cache when it had to) and the context;
 * where it does not, what it would reserve with no limit, neither the device's nor a memory
 * fraction's (the replay under the fraction stops at its cap: its peak is not what the step needs).
 */
export function bytesWithin(plan: MemoryPlan, batch: number, allocator: AllocatorModel, budgetBytes: number): number {
  const replay = replayStep(plan, batch, allocator, budgetBytes - allocator.contextBytes);
  return (replay.fits ? replay.reservedPeakBytes : reservedBytes(plan, batch, allocator.kind, allocator.conf)) + allocator.contextBytes;
}

// How a plan becomes device memory: the driver allocations the job's allocator makes, plus the job's CUDA context.
import type { MemoryPlan } from "../plan/memoryPlan.js";
import { allocationTrace, type AllocationTrace } from "../step/allocationTrace.js";
import { roundUp } from "../units.js";
import { cachingAllocatorSegments } from "./cachingAllocator.js";
import { expandableSegmentPages } from "./expandableSegments.js";

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
 * The device allocations the job holds at its peak at a batch size, in the order it makes them:
 * what a device probe allocates, and (summed) what the analytic model charges. For `pytorch` the
 * segments, for `expandable` the pages, for `raw` the tensors themselves (the driver rounds them).
 */
export function deviceAllocations(plan: MemoryPlan, batch: number, kind: AllocatorKind): readonly number[] {
  const trace = allocationTrace(plan, batch);
  return kind === "pytorch" ? cachingAllocatorSegments(trace) : kind === "expandable" ? expandableSegmentPages(trace) : rawAllocations(trace);
}

/**
 * Reserved bytes of a plan, per allocator and batch: the search and the report ask for the same
 * batch more than once. Only the totals are kept: a deep model's segment lists, kept for every
 * batch advice and `gpus --fit` try, held hundreds of MiB and made garbage-collection pauses
 * long enough to delay a signal.
 */
const replays = new WeakMap<MemoryPlan, Map<string, number>>();
const REPLAYS_PER_PLAN = 256;

/** The device bytes of the allocations at the peak (before the context): PyTorch's peak `memory_reserved()`. */
export function reservedBytes(plan: MemoryPlan, batch: number, kind: AllocatorKind): number {
  let cache = replays.get(plan);
  if (cache === undefined) replays.set(plan, (cache = new Map()));
  const key = `${kind}:${batch}`;
  const cached = cache.get(key);
  if (cached !== undefined) return cached;
  let total = 0;
  for (const size of deviceAllocations(plan, batch, kind)) total += kind === "raw" ? roundUp(size, DRIVER_PAGE_BYTES) : size;
  if (cache.size >= REPLAYS_PER_PLAN) cache.clear();
  cache.set(key, total);
  return total;
}

/** The device bytes a plan takes at a batch size under an allocator model: its allocations and the context. */
export function plannedBytes(plan: MemoryPlan, batch: number, allocator: AllocatorModel): number {
  return reservedBytes(plan, batch, allocator.kind) + allocator.contextBytes;
}

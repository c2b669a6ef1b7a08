// Edges of PYTORCH_CUDA_ALLOC_CONF's rules worked by hand, each a short step with the device calls it must make: the genuine allocator is checked against them where its wheel lies (allocConfGenuine.test.ts), the emulation everywhere (test/unit/allocConfEdges.test.ts).
import type { AllocationEvent } from "../../src/step/allocationTrace.js";

const MiB = 2 ** 20;

export interface Edge {
  why: string;
  /** The simulated device's total, in MiB: what the fraction is of. */
  totalMiB: number;
  conf: string;
  /** `[id, MiB]` allocates, `id` alone frees. */
  events: readonly ([number, number] | number)[];
  fits: boolean;
  /** + segment or pages given, - given back, in MiB, in order. */
  callsMiB: readonly number[];
}

/**
 * Edges worked by hand from CUDACachingAllocator.cpp (see src/fit/expandableSegments.ts and
 * cachingAllocator.ts). With expandable segments, alloc_block adds the request's segment (get_allocation_size), not the pages
 * it maps, to what is mapped and compares it with ⌊fraction × total⌋ by `>` (large pages 20 MiB,
 * 32 with large_segment_size_mb:32). The collection's age of a block counts the large pool's
 * get_free_block calls only (get_free_blocks_call_count is per pool).
 */
export const EDGES: readonly Edge[] = [
  { why: "exactly at the cap of 500 is allowed (460 + 40, not >)", totalMiB: 1000, conf: "expandable_segments:True,per_process_memory_fraction:0.5", events: [[1, 460], [2, 40]], fits: true, callsMiB: [460, 40] },
  { why: "470 maps 480; 30 more is tested as 480 + 30 > 500, though 20 more MiB of pages would do", totalMiB: 1000, conf: "expandable_segments:True,per_process_memory_fraction:0.5", events: [[1, 470], [2, 30]], fits: false, callsMiB: [480] },
  { why: "480 + 24 ≤ 505 passes the test, then two pages take the mapped bytes to 520, past the cap", totalMiB: 1010, conf: "expandable_segments:True,per_process_memory_fraction:0.5", events: [[1, 480], [2, 24]], fits: true, callsMiB: [480, 40] },
  { why: "a 3 MiB request's segment is large_segment_size_mb: 480 + 32 > 505 (with 20 it would pass)", totalMiB: 1010, conf: "expandable_segments:True,per_process_memory_fraction:0.5,large_segment_size_mb:32", events: [[1, 480], [2, 3]], fits: false, callsMiB: [480] },
  {
    // A small block (its 2 MiB segment), two 150 MiB segments, the first cached; ten small requests
    // served from the small segment (no miss, no collection: it runs only before a new segment);
    // the second cached. The 200 MiB request misses with 302 MiB reserved, over 250 (0.5 × the
    // 500 cap): both cached blocks are a large-pool lookup old (age 1 each, average 1), so both go.
    // Were the small lookups counted, the first would be 11 old, the second 1 (average 6): one freed.
    why: "the collection ages blocks by the large pool's lookups only: both 150 MiB segments freed",
    totalMiB: 1000, conf: "per_process_memory_fraction:0.5,garbage_collection_threshold:0.5",
    events: [[100, 0.0005], [1, 150], [2, 150], 1, ...Array.from({ length: 10 }, (_, k): [number, number] => [101 + k, 0.0005]), 2, [3, 200]],
    fits: true, callsMiB: [2, 150, 150, -150, -150, 200],
  },
];

/** An edge's step as allocation events. */
export function edgeEvents(edge: Edge): AllocationEvent[] {
  return edge.events.map((e) => (typeof e === "number" ? { kind: "free", tensor: e } : { kind: "alloc", tensor: e[0], bytes: Math.round(e[1] * MiB) }));
}

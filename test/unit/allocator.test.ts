// The allocator emulations against PyTorch's rules (c10/cuda/CUDACachingAllocator.cpp), each case worked by hand.
import { describe, expect, it } from "vitest";
import { deviceAllocations, reservedBytes } from "../../src/fit/allocator.js";
import { DEFAULT_ALLOC_CONF, parseAllocConf } from "../../src/fit/allocConf.js";
import { cachingAllocatorSegments, replayAtCapacity, roundSize, segmentSize, probeSteps } from "../../src/fit/cachingAllocator.js";
import { expandableProbeSteps, replayExpandable } from "../../src/fit/expandableSegments.js";
import { buildPlan } from "../../src/plan/buildPlan.js";
import type { MemoryPlan } from "../../src/plan/memoryPlan.js";
import { allocationEvents, type AllocationEvent } from "../../src/step/allocationTrace.js";
import { presetWorkload } from "../../src/workload/presets.js";

const KiB = 2 ** 10;
const MiB = 2 ** 20;

/** A step written as `+bytes` (allocate the next tensor) and `-i` (free tensor i). */
function step(...ops: (number | string)[]): AllocationEvent[] {
  let next = 0;
  return ops.map((op) => (typeof op === "number" ? { kind: "alloc", tensor: next++, bytes: op } : { kind: "free", tensor: Number(op.slice(1)) }));
}

describe("PyTorch's sizes", () => {
  it("rounds every request up to 512 B (round_size, kMinBlockSize)", () => {
    expect([1, 512, 513, 1000, 4096].map((bytes) => roundSize(bytes))).toEqual([512, 512, 1024, 1024, 4096]);
  });

  it("takes 2 MiB segments for ≤ 1 MiB, 20 MiB below 10 MiB, else the request rounded to 2 MiB (get_allocation_size)", () => {
    expect(segmentSize(MiB)).toBe(2 * MiB);
    expect(segmentSize(MiB + 512)).toBe(20 * MiB);
    expect(segmentSize(10 * MiB - 512)).toBe(20 * MiB);
    expect(segmentSize(10 * MiB)).toBe(10 * MiB);
    expect(segmentSize(10 * MiB + 512)).toBe(12 * MiB);
  });
});

describe("the caching allocator's segments", () => {
  it("packs small blocks into one 2 MiB segment until it is full", () => {
    // 500 KiB = 512,000 B, a multiple of 512: four take 2,048,000 of 2,097,152 B; the fifth needs a second segment.
    expect(cachingAllocatorSegments(step(500 * KiB, 500 * KiB, 500 * KiB, 500 * KiB))).toEqual([2 * MiB]);
    expect(cachingAllocatorSegments(step(500 * KiB, 500 * KiB, 500 * KiB, 500 * KiB, 500 * KiB))).toEqual([2 * MiB, 2 * MiB]);
  });

  it("carves 1–10 MiB blocks out of a 20 MiB segment, splitting while more than 1 MiB remains", () => {
    // 6 + 6 + 6 MiB leave 2 MiB (> 1 MiB, split off and cached); a fourth 6 MiB block needs a new segment.
    expect(cachingAllocatorSegments(step(6 * MiB, 6 * MiB, 6 * MiB))).toEqual([20 * MiB]);
    expect(cachingAllocatorSegments(step(6 * MiB, 6 * MiB, 6 * MiB, 6 * MiB))).toEqual([20 * MiB, 20 * MiB]);
  });

  it("reuses a freed block best-fit, splitting it, and never gives a segment back", () => {
    // 100 MiB freed; 60 MiB is carved from it (40 MiB left cached); 50 MiB does not fit the 40: a new segment.
    expect(cachingAllocatorSegments(step(100 * MiB, "-0", 60 * MiB, 50 * MiB))).toEqual([100 * MiB, 50 * MiB]);
  });

  it("serves later large requests out of a freed segment while what remains is enough", () => {
    // 11 MiB gets a 12 MiB segment (1 MiB left, not split); freed, it gives 1.5 MiB (10.5 MiB left, split) and then 10 MiB.
    expect(cachingAllocatorSegments(step(11 * MiB, "-0", 1.5 * MiB, 10 * MiB))).toEqual([12 * MiB]);
    // 11 MiB more does not fit the 10.5 MiB block: a 12 MiB segment of its own.
    expect(cachingAllocatorSegments(step(11 * MiB, "-0", 1.5 * MiB, 11 * MiB))).toEqual([12 * MiB, 12 * MiB]);
  });

  it("merges freed neighbours, so a freed pair serves a request neither could alone", () => {
    // Two 6 MiB blocks and the 8 MiB rest of one 20 MiB segment merge back into 20 MiB: 18 MiB fits.
    expect(cachingAllocatorSegments(step(6 * MiB, 6 * MiB, "-0", "-1", 18 * MiB))).toEqual([20 * MiB]);
  });

  it("takes the smallest cached block that fits, not the first", () => {
    // Blocks of 30 and 50 MiB cached (two segments); 25 MiB goes into the 30 (5 MiB rest), so 45 MiB still fits the 50.
    expect(cachingAllocatorSegments(step(50 * MiB, 30 * MiB, "-0", "-1", 25 * MiB, 45 * MiB))).toEqual([50 * MiB, 30 * MiB]);
  });
});

describe("the out-of-memory path (malloc: alloc_block, release_available_cached_blocks, release_cached_blocks)", () => {
  it("frees a cached whole segment and retries when cudaMalloc fails", () => {
    // 50 MiB freed and cached; 60 MiB finds no cached block and 50 + 60 > 100 MiB: the cached
    // segment is cudaFree'd (release_cached_blocks), and the retry (num_alloc_retries) succeeds.
    const replay = replayAtCapacity(step(50 * MiB, "-0", 60 * MiB), 100 * MiB, undefined, { segments: true });
    expect(replay).toMatchObject({ fits: true, cudaMallocs: 2, cudaFrees: 1, allocRetries: 1, reservedPeakBytes: 60 * MiB, allocatedPeakBytes: 60 * MiB, failedAt: -1 });
    expect(replay.segmentLog).toEqual([50 * MiB, -1, 60 * MiB]);
    // With no limit the cache is kept: 110 MiB reserved.
    expect(replayAtCapacity(step(50 * MiB, "-0", 60 * MiB))).toMatchObject({ fits: true, cudaFrees: 0, reservedPeakBytes: 110 * MiB });
  });

  it("cannot free a segment that is split: the step runs out of memory", () => {
    // Two 6 MiB blocks in one 20 MiB segment, the first freed (cached, but its segment holds the
    // second): 30 MiB needs a segment of its own, 20 + 30 > 40 MiB, nothing whole to free.
    const replay = replayAtCapacity(step(6 * MiB, 6 * MiB, "-0", 30 * MiB), 40 * MiB);
    expect(replay).toMatchObject({ fits: false, failedAt: 3, cudaMallocs: 1, cudaFrees: 0, allocRetries: 1 });
    expect(replayAtCapacity(step(6 * MiB, 6 * MiB, "-0", 30 * MiB), 50 * MiB).fits).toBe(true);
  });

  it("with max_split_size, frees an oversize cached block first (release_available_cached_blocks), no retry counted", () => {
    const conf = parseAllocConf("max_split_size_mb:20");
    // 64 and 32 MiB freed; 40 MiB may not take the 64 MiB block (oversize, more than 20 MiB
    // larger), 96 + 40 > 100 MiB: the smallest oversize block of at least 40 MiB, the 64, goes.
    const replay = replayAtCapacity(step(64 * MiB, 32 * MiB, "-0", "-1", 40 * MiB), 100 * MiB, conf, { segments: true });
    expect(replay).toMatchObject({ fits: true, cudaFrees: 1, allocRetries: 0 });
    expect(replay.segmentLog).toEqual([64 * MiB, 32 * MiB, -1, 40 * MiB]);
    // Without max_split_size the 64 MiB block serves the 40 (split), no segment is needed.
    expect(cachingAllocatorSegments(step(64 * MiB, 32 * MiB, "-0", "-1", 40 * MiB))).toEqual([64 * MiB, 32 * MiB]);
  });

  it("rounds to power-of-two divisions with roundup_power2_divisions", () => {
    const divisions = parseAllocConf("roundup_power2_divisions:4").roundupPower2Divisions;
    // 1.2 MiB lies in [1, 2) MiB: quarters of 256 KiB, so 1.25 MiB; 4.5 MiB in [4, 8): quarters of 1 MiB.
    expect(roundSize(1.2 * MiB, divisions)).toBe(1.25 * MiB);
    expect(roundSize(4.5 * MiB, divisions)).toBe(5 * MiB);
    expect(roundSize(4 * MiB, divisions)).toBe(4 * MiB);
    // Small requests (≤ 512 B × divisions) keep plain 512 B rounding.
    expect(roundSize(1000, divisions)).toBe(1024);
  });

  it("hands a probe the driver calls: sizes in order, and which segment goes back before which", () => {
    expect(probeSteps([50 * MiB, -1, 60 * MiB])).toEqual({ sizes: [50 * MiB, 60 * MiB], releases: [1, 0] });
    expect(probeSteps([2 * MiB, 20 * MiB, -2, -1, 10 * MiB])).toEqual({ sizes: [2 * MiB, 20 * MiB, 10 * MiB], releases: [2, 1, 2, 0] });
  });
});

describe("expandable segments", () => {
  /** The bytes each map_block mapped, in order, with no memory limit (the replay's map log: no unmaps without one). */
  const maps = (events: AllocationEvent[]) => replayExpandable(events, Number.POSITIVE_INFINITY, DEFAULT_ALLOC_CONF, { segments: true }).mapLog;

  it("maps 20 MiB pages for large blocks and carves the end block before mapping more", () => {
    expect(maps(step(6 * MiB, 6 * MiB, 6 * MiB, 6 * MiB))).toEqual([20 * MiB, 20 * MiB]);
  });

  it("has no per-segment waste: what the caching allocator needs a second segment for, it maps a page for", () => {
    // 100 MiB (5 pages, one map), freed; 60 MiB from it, 40 MiB left at the end; 50 MiB extends the end by one 20 MiB page.
    expect(maps(step(100 * MiB, "-0", 60 * MiB, 50 * MiB))).toEqual([100 * MiB, 20 * MiB]);
  });

  it("keeps small blocks in 2 MiB pages of their own pool", () => {
    expect(maps(step(500 * KiB, 500 * KiB, 500 * KiB, 500 * KiB, 500 * KiB, 4 * MiB))).toEqual([2 * MiB, 2 * MiB, 20 * MiB]);
  });
});

describe("a plan through each allocator", () => {
  // Forward then backward: an activation of 3 MiB per sample freed before the 7 MiB gradient is allocated.
  const plan: MemoryPlan = {
    description: "two phases",
    parameterCount: 0,
    phases: ["forward", "backward"],
    tensors: [
      { name: "weights", category: "parameters", fixedBytes: 7 * MiB, perSampleBytes: 0 },
      { name: "activation", category: "activations", fixedBytes: 0, perSampleBytes: 3 * MiB, lastPhase: 0 },
      { name: "grads", category: "gradients", fixedBytes: 7 * MiB, perSampleBytes: 0, firstPhase: 1 },
    ],
  };

  it("pytorch: the freed activation's block is reused for the gradient", () => {
    // Batch 4: the 7 MiB weights take a 20 MiB segment (13 MiB left, split off); the 12 MiB
    // activation fits that 13 MiB block (1 MiB would remain: not split); freed, it holds the 7 MiB
    // gradient. One segment.
    expect(deviceAllocations(plan, 4, "pytorch")).toEqual([20 * MiB]);
    expect(reservedBytes(plan, 4, "pytorch")).toBe(20 * MiB);
  });

  it("raw: the tensors live at the peak of their 2 MiB-rounded sum", () => {
    // Forward holds 8 + 12 MiB (rounded: 8 + 12), backward 8 + 8: the forward peak.
    expect(deviceAllocations(plan, 4, "raw")).toEqual([7 * MiB, 12 * MiB]);
    expect(reservedBytes(plan, 4, "raw")).toBe(20 * MiB);
  });

  it("expandable: pages for the live high-water mark", () => {
    expect(reservedBytes(plan, 4, "expandable")).toBe(20 * MiB);
  });
});

describe("a plan's replay", () => {
  // The plan is replayed from a flat trace (allocationTrace); a caller's events go through
  // traceOfEvents. Both must replay the same step: a deep real plan, many batches.
  const plan = buildPlan(presetWorkload("resnet50")!, { mode: "train", precision: "amp", optimizer: "adamw" });

  it.each([1, 7, 64])("gives the same segments and pages from the plan's trace as from its events, batch %i", (batch) => {
    const events = allocationEvents(plan, batch);
    expect(deviceAllocations(plan, batch, "pytorch")).toEqual(cachingAllocatorSegments(events));
    // Expandable segments: one allocation per map, holding that map's pages (several 20 MiB pages in some).
    const maps = deviceAllocations(plan, batch, "expandable");
    expect(maps).toEqual(expandableProbeSteps(events, Number.POSITIVE_INFINITY).sizes);
    expect(maps).toEqual(replayExpandable(events, Number.POSITIVE_INFINITY, DEFAULT_ALLOC_CONF, { segments: true }).mapLog);
    expect(maps.some((bytes) => bytes > 20 * MiB)).toBe(true);
    // A free of a tensor never allocated, and an allocation of no bytes, change nothing.
    const noisy: AllocationEvent[] = [{ kind: "free", tensor: 1e6 }, { kind: "alloc", tensor: 1e6 + 1, bytes: 0 }, ...events];
    expect(cachingAllocatorSegments(noisy)).toEqual(cachingAllocatorSegments(events));
  });
});

// Expandable segments at a capacity against PyTorch's rules (c10/cuda/CUDACachingAllocator.cpp: get_free_block's walk, map_block, unmap_block, release_blocks), each case worked by hand.
import { describe, expect, it } from "vitest";
import { parseAllocConf } from "../../src/fit/allocConf.js";
import { replayAtCapacity } from "../../src/fit/cachingAllocator.js";
import { expandableProbeSteps, replayExpandable } from "../../src/fit/expandableSegments.js";
import type { AllocationEvent } from "../../src/step/allocationTrace.js";

const MiB = 2 ** 20;
const expandable = parseAllocConf("expandable_segments:True");

/** A step written as `+bytes` (allocate the next tensor) and `-i` (free tensor i). */
function step(...ops: (number | string)[]): AllocationEvent[] {
  let next = 0;
  return ops.map((op) => (typeof op === "number" ? { kind: "alloc", tensor: next++, bytes: op } : { kind: "free", tensor: Number(op.slice(1)) }));
}

describe("expandable segments at a capacity", () => {
  // A 30 MiB block maps two 20 MiB pages and leaves 10 MiB free at the end; B's 30 MiB takes those
  // 10 MiB and maps one page more ([0, 60) mapped). A's block [0, 30) is freed. C's 50 MiB finds no
  // free block and maps three pages after B: 60 + 60 MiB.
  const pressure = step(30 * MiB, 30 * MiB, "-0", 50 * MiB);

  it("without pressure: one map per map_block, of whole pages, merged with the free end block", () => {
    const replay = replayExpandable(pressure, Number.POSITIVE_INFINITY, expandable, { segments: true });
    expect(replay.mapLog).toEqual([40 * MiB, 20 * MiB, 60 * MiB]);
    expect({ reserved: replay.reservedPeakBytes, allocated: replay.allocatedPeakBytes, retries: replay.allocRetries }).toEqual({ reserved: 120 * MiB, allocated: 80 * MiB, retries: 0 });
  });

  it("out of memory: unmaps the whole pages inside cached free blocks, keeps the partial page mapped, and retries once", () => {
    // At 100 MiB C's three pages do not fit beside 60 MiB. release_blocks unmaps page 0 of A's
    // [0, 30) (20 MiB); [20, 30) stays mapped and free. Then 40 + 60 = 100 MiB fits.
    const replay = replayExpandable(pressure, 100 * MiB, expandable, { segments: true });
    expect(replay.mapLog).toEqual([40 * MiB, 20 * MiB, -20 * MiB, 60 * MiB]);
    expect({ fits: replay.fits, reserved: replay.reservedPeakBytes, retries: replay.allocRetries, maps: replay.cudaMallocs, unmaps: replay.cudaFrees }).toEqual({ fits: true, reserved: 100 * MiB, retries: 1, maps: 3, unmaps: 1 });
  });

  it("a device probe allocates each map's pages that are unmapped together as one block, given back where PyTorch unmaps them", () => {
    // No pressure: three maps, nothing unmapped, three allocations (not six pages).
    expect(expandableProbeSteps(pressure, Number.POSITIVE_INFINITY, expandable)).toEqual({ sizes: [40 * MiB, 20 * MiB, 60 * MiB], releases: [], pageBytes: [20 * MiB, 20 * MiB, 20 * MiB], fits: true });
    // At 100 MiB the first map's page 0 is unmapped before C's map and its page 1 is not: two
    // blocks, the first given back before allocation 3 (C's three pages), so at most 100 MiB held.
    expect(expandableProbeSteps(pressure, 100 * MiB, expandable)).toEqual({ sizes: [20 * MiB, 20 * MiB, 20 * MiB, 60 * MiB], releases: [3, 0], pageBytes: [20 * MiB, 20 * MiB, 20 * MiB, 20 * MiB], fits: true });
  });

  it("runs out where even the unmapped pages leave too little, with the failed allocation's index", () => {
    // At 98 MiB: 40 + 60 > 98 after the unmap. The unmapped page [0, 20) and the free [20, 30) hold
    // only 30 MiB before B, so C cannot go there either.
    const replay = replayExpandable(pressure, 98 * MiB, expandable, { segments: true });
    expect({ fits: replay.fits, failedAt: replay.failedAt, log: replay.mapLog }).toEqual({ fits: false, failedAt: 3, log: [40 * MiB, 20 * MiB, -20 * MiB] });
  });

  it("fills an unmapped gap only where the gap and the free blocks beside it hold the request", () => {
    // As above at 100 MiB, then C freed (it merges with [110, 120) into [60, 120), beside the
    // unmapped tail), D 25 MiB (no free block but that one fits: taken, no map), E 15 MiB (the free
    // [20, 30) is too small, [85, 120) fits): still the four device calls; a fifth 20 MiB fits in
    // [100, 120) too.
    const log = [40 * MiB, 20 * MiB, -20 * MiB, 60 * MiB];
    expect(replayExpandable(step(30 * MiB, 30 * MiB, "-0", 50 * MiB, "-2", 25 * MiB, 15 * MiB), 100 * MiB, expandable, { segments: true }).mapLog).toEqual(log);
    expect(replayExpandable(step(30 * MiB, 30 * MiB, "-0", 50 * MiB, "-2", 25 * MiB, 15 * MiB, 20 * MiB), 100 * MiB, expandable, { segments: true }).mapLog).toEqual(log);
  });

  it("takes the free block before unmapped space last: get_free_block walks on while the next block's expandable size is smaller", () => {
    // X 12 MiB maps [0, 20); Z 8 MiB takes [12, 20); W 30 MiB maps [20, 60) and leaves [50, 60)
    // free before the unmapped tail. X is freed. V 9 MiB: the smallest fit is [50, 60) (10 MiB),
    // but its expandable size reaches into the tail, so V takes X's 12 MiB. U 11 MiB then finds no
    // block and maps one page after [50, 60): three maps. Best fit without the walk would map two.
    const replay = replayExpandable(step(12 * MiB, 8 * MiB, 30 * MiB, "-0", 9 * MiB, 11 * MiB), Number.POSITIVE_INFINITY, expandable, { segments: true });
    expect(replay.mapLog).toEqual([20 * MiB, 40 * MiB, 20 * MiB]);
  });

  it("grows the free block before the unmapped tail rather than mapping a whole request anew", () => {
    // A 30 MiB (two pages) freed: [0, 40) cached before the tail. B 50 MiB maps one page more and
    // leaves [50, 60); C 30 MiB maps one more after it: 80 MiB, no out-of-memory path at 80 MiB.
    const replay = replayExpandable(step(30 * MiB, "-0", 50 * MiB, 30 * MiB), 80 * MiB, expandable, { segments: true });
    expect({ fits: replay.fits, log: replay.mapLog, retries: replay.allocRetries }).toEqual({ fits: true, log: [40 * MiB, 20 * MiB, 20 * MiB], retries: 0 });
  });

  it("releases a segment left wholly unmapped and maps a new one, each pool in turn", () => {
    // At 40 MiB: A 30 MiB maps two large pages and is freed; a 500 KiB tensor needs a small page
    // (42 > 40): the large segment is unmapped whole and released. Freed too, then B 30 MiB needs
    // a new large segment (42 > 40 again): the small page goes. Two retries.
    const replay = replayExpandable(step(30 * MiB, "-0", 500 * 1024, "-1", 30 * MiB), 40 * MiB, expandable, { segments: true });
    expect({ fits: replay.fits, log: replay.mapLog, retries: replay.allocRetries }).toEqual({ fits: true, log: [40 * MiB, -40 * MiB, 2 * MiB, -2 * MiB, 40 * MiB], retries: 2 });
  });

  it("is not the caching allocator: here a page shared by a freed and a live block keeps expandable segments from fitting", () => {
    // The caching allocator: 30 + 30 MiB segments, A's cached; C's 50 MiB segment fits at 80 MiB
    // once A's whole segment goes back. Expandable segments need 100 MiB here (the page [20, 40) is
    // half A's and half B's, so it stays mapped).
    expect(replayAtCapacity(pressure, 80 * MiB).fits).toBe(true);
    expect(replayExpandable(pressure, 98 * MiB, expandable).fits).toBe(false);
  });

  it("with max_split_size_mb, releases no expandable block early: the unmap path decides", () => {
    // torch 2.14.1: at 250 MiB, [200 MiB, −200 MiB] then out of memory after one retry (300 > 250).
    const conf = parseAllocConf("expandable_segments:True,max_split_size_mb:128");
    const oversize = step(200 * MiB, "-0", 300 * MiB);
    const replay = replayExpandable(oversize, 250 * MiB, conf, { segments: true });
    expect({ fits: replay.fits, failedAt: replay.failedAt, log: replay.mapLog, retries: replay.allocRetries }).toEqual({ fits: false, failedAt: 2, log: [200 * MiB, -200 * MiB], retries: 1 });
    // At 300 MiB the free 200 MiB block before the tail grows by 100 MiB.
    expect(replayExpandable(oversize, 300 * MiB, conf, { segments: true }).mapLog).toEqual([200 * MiB, 100 * MiB]);
  });
});

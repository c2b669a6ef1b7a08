// vramfit's side of the genuine-allocator comparison, in one place: the events log of a preset's step
// (`vramfit plan --events`), the caching-allocator emulation's device calls, and the analytic largest
// batch at a capacity, each under a PYTORCH_CUDA_ALLOC_CONF.
import { parseSetup, planMemory, resolveWorkload, type MemoryPlan } from "../../src/index.js";
import { DEFAULT_ALLOC_CONF, parseAllocConf, type AllocConf } from "../../src/fit/allocConf.js";
import { analyticMaxBatch } from "../../src/fit/analytic.js";
import { cachingAllocatorSegments, replayAtCapacity, type AllocationStep } from "../../src/fit/cachingAllocator.js";
import { replayExpandable } from "../../src/fit/expandableSegments.js";
import { allocationTrace } from "../../src/step/allocationTrace.js";
import { eventsLog as planEventsLog } from "../../src/step/eventsFile.js";

/** A preset planned as `vramfit plan --model NAME` plans it (the CLI's defaults). */
export function presetPlan(name: string): MemoryPlan {
  return planMemory(resolveWorkload({ model: name }), parseSetup({}));
}

/** The events log of the step at a batch, exactly as `vramfit plan --batch B --events FILE` writes it. */
export function eventsLog(plan: MemoryPlan, batch: number, name: string): string {
  return planEventsLog(plan, batch, [["workload", name], ["batch", String(batch)]]);
}

function confOf(allocConf: string | undefined): AllocConf {
  return allocConf === undefined ? DEFAULT_ALLOC_CONF : parseAllocConf(allocConf);
}

/** What the emulation's replay did: its device calls (+ cudaMalloc, - cudaFree, by size), peaks and retries. */
export interface EmulatedReplay {
  fits: boolean;
  /** The event that ran out of memory (-1: none). */
  failedAt: number;
  deviceCalls: number[];
  peakAllocatedBytes: number;
  peakReservedBytes: number;
  numAllocRetries: number;
}

/** The emulation's replay of the step at a batch on a device with `capacityBytes` (Infinity: no memory pressure). */
export function emulatedReplay(plan: MemoryPlan, batch: number, capacityBytes: number, allocConf: string | undefined): EmulatedReplay {
  return emulatedCalls(allocationTrace(plan, batch), capacityBytes, confOf(allocConf));
}

/**
 * The emulation's replay of any step, as the harness reports the genuine allocator's, under
 * PyTorch's allowed_memory_maximum `allowedBytes` where a fraction sets one.
 */
export function emulatedCalls(step: AllocationStep, capacityBytes: number, conf: AllocConf, allowedBytes = Number.POSITIVE_INFINITY): EmulatedReplay {
  if (conf.expandableSegments) {
    // Maps and unmaps, by size, as the genuine allocator's SEGMENT_MAP / SEGMENT_UNMAP.
    const replay = replayExpandable(step, capacityBytes, conf, { segments: true, allowedBytes });
    return { fits: replay.fits, failedAt: replay.failedAt, deviceCalls: replay.mapLog!, peakAllocatedBytes: replay.allocatedPeakBytes, peakReservedBytes: replay.reservedPeakBytes, numAllocRetries: replay.allocRetries };
  }
  const replay = replayAtCapacity(step, capacityBytes, conf, { segments: true, allowedBytes });
  // A replay that ran out ends its log with the cudaMalloc that failed; the genuine allocator's trace has no entry for it.
  const log = replay.fits ? replay.segmentLog! : replay.segmentLog!.slice(0, -1);
  // The log names a cudaFree by the cudaMalloc it undoes (-(k + 1)); the genuine allocator's by its size.
  const mallocs = log.filter((entry) => entry > 0);
  return {
    fits: replay.fits,
    failedAt: replay.failedAt,
    deviceCalls: log.map((entry) => (entry > 0 ? entry : -mallocs[-entry - 1]!)),
    peakAllocatedBytes: replay.allocatedPeakBytes,
    peakReservedBytes: replay.reservedPeakBytes,
    numAllocRetries: replay.allocRetries,
  };
}

/** The emulation's reserved peak with no memory pressure, under PyTorch's defaults. */
export function emulatedReservedBytes(plan: MemoryPlan, batch: number): number {
  return cachingAllocatorSegments(allocationTrace(plan, batch)).reduce((sum, bytes) => sum + bytes, 0);
}

/** vramfit's analytic largest batch with `capacityBytes` for the allocator (no context, no reserve). */
export async function vramfitLargestBatch(plan: MemoryPlan, capacityBytes: number, allocConf: string | undefined): Promise<number> {
  return (await analyticMaxBatch(plan, capacityBytes, { kind: "pytorch", contextBytes: 0, conf: confOf(allocConf) })).batchSize;
}

// vramfit's side of the genuine-allocator comparison, in one place: the events log of a preset's step
// (`vramfit plan --events`), the caching-allocator emulation's device calls, and the analytic largest
// batch at a capacity, each under a PYTORCH_CUDA_ALLOC_CONF.
import { parseSetup, planMemory, resolveWorkload, type MemoryPlan } from "../../src/index.js";
import { DEFAULT_ALLOC_CONF, parseAllocConf, type AllocConf } from "../../src/fit/allocConf.js";
import { analyticMaxBatch } from "../../src/fit/analytic.js";
import { cachingAllocatorSegments, replayAtCapacity } from "../../src/fit/cachingAllocator.js";
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

/** What the emulation asks of the device with no memory pressure: + cudaMalloc, - cudaFree (its size). */
export function emulatedDeviceCalls(plan: MemoryPlan, batch: number, allocConf: string | undefined): number[] {
  const log = replayAtCapacity(allocationTrace(plan, batch), Number.POSITIVE_INFINITY, confOf(allocConf), { segments: true }).segmentLog!;
  const mallocs = log.filter((entry) => entry > 0);
  return log.map((entry) => (entry > 0 ? entry : -mallocs[-entry - 1]!));
}

/** The emulation's reserved peak with no memory pressure, under PyTorch's defaults. */
export function emulatedReservedBytes(plan: MemoryPlan, batch: number): number {
  return cachingAllocatorSegments(allocationTrace(plan, batch)).reduce((sum, bytes) => sum + bytes, 0);
}

/** vramfit's analytic largest batch with `capacityBytes` for the allocator (no context, no reserve). */
export async function vramfitLargestBatch(plan: MemoryPlan, capacityBytes: number, allocConf: string | undefined): Promise<number> {
  return (await analyticMaxBatch(plan, capacityBytes, { kind: "pytorch", contextBytes: 0, conf: confOf(allocConf) })).batchSize;
}

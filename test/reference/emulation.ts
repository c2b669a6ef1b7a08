// vramfit's side of the genuine-allocator comparison, in one place: the events log of a preset's step,
// the caching-allocator emulation's device calls, and the analytic largest batch at a capacity.
import { parseSetup, planMemory, resolveWorkload, type MemoryPlan } from "../../src/index.js";
import { analyticMaxBatch } from "../../src/fit/analytic.js";
import { cachingAllocatorSegments } from "../../src/fit/cachingAllocator.js";
import { allocationTrace } from "../../src/step/allocationTrace.js";

/** A preset planned as `vramfit plan --model NAME` plans it (the CLI's defaults). */
export function presetPlan(name: string): MemoryPlan {
  return planMemory(resolveWorkload({ model: name }), parseSetup({}));
}

/**
 * The events log of the step at a batch, in the format of `vramfit plan --batch B --events FILE`
 * (docs/memory-model.md, "The replayed events"): `a ID BYTES` / `f ID`, empty tensors left out.
 */
export function eventsLog(plan: MemoryPlan, batch: number, name: string): string {
  const { order, bytes } = allocationTrace(plan, batch);
  const lines = ["# vramfit-events 1", `# workload: ${name}`, `# batch: ${batch}`];
  for (const code of order) {
    const tensor = code >= 0 ? code : ~code;
    if (bytes[tensor]! <= 0) continue;
    lines.push(code >= 0 ? `a ${tensor} ${Math.ceil(bytes[tensor]!)}` : `f ${tensor}`);
  }
  return `${lines.join("\n")}\n`;
}

/**
 * What this emulation models yet (issue 23 item 1, engineer alloc's, adds both): the settings of
 * PYTORCH_CUDA_ALLOC_CONF, and PyTorch's out-of-memory path (free the cache, retry). Until then the
 * comparisons that need them are expected to fail (genuineAllocator.test.ts marks them `it.fails`).
 */
export const MODELS_ALLOC_CONF = false;
export const MODELS_OUT_OF_MEMORY_PATH = false;

/**
 * What the emulation asks of the device with no memory pressure (+ cudaMalloc, - cudaFree), under
 * a PYTORCH_CUDA_ALLOC_CONF: this emulation models PyTorch's defaults only (MODELS_ALLOC_CONF), so
 * it answers the same whatever `allocConf` says.
 */
export function emulatedDeviceCalls(plan: MemoryPlan, batch: number, _allocConf: string | undefined): number[] {
  return cachingAllocatorSegments(allocationTrace(plan, batch));
}

/** The emulation's reserved peak with no memory pressure. */
export function emulatedReservedBytes(plan: MemoryPlan, batch: number): number {
  return cachingAllocatorSegments(allocationTrace(plan, batch)).reduce((sum, bytes) => sum + bytes, 0);
}

/** vramfit's analytic largest batch with `capacityBytes` for the allocator (no context, no reserve). */
export async function vramfitLargestBatch(plan: MemoryPlan, capacityBytes: number, _allocConf: string | undefined): Promise<number> {
  return (await analyticMaxBatch(plan, capacityBytes, { kind: "pytorch", contextBytes: 0 })).batchSize;
}

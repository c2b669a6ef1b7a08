// The addon's step replay (native/addon/replay_step.cc) gives the figures and the segment log of the TypeScript one (src/fit/cachingAllocator.ts), limit or not, configured or not.
import { describe, expect, it } from "vitest";
import { parseAllocConf } from "../../src/fit/allocConf.js";
import { replayAtCapacity } from "../../src/fit/cachingAllocator.js";
import { nativeReplay } from "../../src/native/binding.js";
import { buildPlan } from "../../src/plan/buildPlan.js";
import { allocationTrace } from "../../src/step/allocationTrace.js";
import { presetWorkload } from "../../src/workload/presets.js";

const CONFS = ["", "max_split_size_mb:64", "roundup_power2_divisions:4", "max_split_size_mb:20,roundup_power2_divisions:[1:2,64:8,>:1]"];

describe("replayStep", () => {
  it("is there: the native replay is what answers in a fresh process, the segment log included", () => {
    const native = nativeReplay();
    expect(typeof native).toBe("function");
    // Two small blocks share a 2 MiB segment; a third large one gets its own (20 MiB), then the first's is reused.
    const result = native!(Int32Array.of(0, 1, ~0, 2), Float64Array.of(1000, 600_000, 3_000_000), Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY, 20 * 2 ** 20, Float64Array.of(1), true);
    expect(Array.from(result.segmentLog!)).toEqual([2 * 2 ** 20, 20 * 2 ** 20]);
    expect(native!(Int32Array.of(0), Float64Array.of(1000), 1, Number.POSITIVE_INFINITY, 0, Float64Array.of(1), false).segmentLog).toBeUndefined();
  });

  it.each(["resnet50", "bert-base", "gpt2", "vgg16"])("%s: the same figures as the TypeScript replay, with no limit and under pressure", (name) => {
    const plan = buildPlan(presetWorkload(name)!, { mode: "train", precision: "amp", optimizer: "adamw" });
    for (const batch of [1, 24]) {
      const trace = allocationTrace(plan, batch);
      for (const text of CONFS) {
        const conf = parseAllocConf(text === "" ? "backend:native" : text);
        const unlimited = replayAtCapacity(trace, Number.POSITIVE_INFINITY, conf, { typescript: true });
        // From no pressure to not fitting: between the blocks' peak and the segments' peak the cache must be freed.
        const { allocatedPeakBytes: low, reservedPeakBytes: high } = unlimited;
        for (const capacity of [Number.POSITIVE_INFINITY, high, (low + high) / 2, low, low * 0.9]) {
          const typescript = replayAtCapacity(trace, capacity, conf, { typescript: true });
          const native = replayAtCapacity(trace, capacity, conf);
          expect(native, `${name} batch ${batch} ${text} capacity ${capacity}`).toEqual(typescript);
          // The driver calls in order, cudaFrees of the out-of-memory path and the failing cudaMalloc included.
          const logged = replayAtCapacity(trace, capacity, conf, { segments: true });
          expect(logged, `${name} batch ${batch} ${text} capacity ${capacity}, segments`).toEqual(replayAtCapacity(trace, capacity, conf, { segments: true, typescript: true }));
        }
      }
    }
  });
});

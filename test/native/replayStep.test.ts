// The addon's step replay (native/addon/replay_step.cc) gives the figures and the segment log of the TypeScript one (src/fit/cachingAllocator.ts), limit or not, configured or not.
import { describe, expect, it } from "vitest";
import { DEFAULT_ALLOC_CONF, parseAllocConf } from "../../src/fit/allocConf.js";
import { nativeAnswer, replayAtCapacity } from "../../src/fit/cachingAllocator.js";
import { nativeReplay } from "../../src/native/binding.js";
import { buildPlan } from "../../src/plan/buildPlan.js";
import { allocationTrace } from "../../src/step/allocationTrace.js";
import { presetWorkload } from "../../src/workload/presets.js";
import { randomStep } from "./randomStep.js";

const CONFS = ["", "max_split_size_mb:64", "roundup_power2_divisions:4", "max_split_size_mb:20,roundup_power2_divisions:[1:2,64:8,>:1]", "large_segment_size_mb:64"];

describe("replayStep", () => {
  it("is there: the native replay is what answers in a fresh process, the segment log included", () => {
    const native = nativeReplay();
    expect(typeof native).toBe("function");
    // Two small blocks share a 2 MiB segment; a third large one gets its own (20 MiB), then the first's is reused.
    // io: capacity, max_split_size, max_non_split_rounding, segments, large_segment_size, n, n divisions; then the figures.
    const io = Float64Array.of(Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY, 20 * 2 ** 20, 1, 20 * 2 ** 20, 1, 1);
    const log = native!(Int32Array.of(0, 1, ~0, 2), Float64Array.of(1000, 600_000, 3_000_000), io);
    expect(Array.from(log!)).toEqual([2 * 2 ** 20, 20 * 2 ** 20]);
    // fits, reserved peak, allocated peak (600,000 and 3,000,000 rounded up to 512 B, live together after the first is freed), cudaMallocs, cudaFrees, retries, failedAt
    expect(Array.from(io)).toEqual([1, 22 * 2 ** 20, 600_064 + 3_000_320, 2, 0, 0, -1]);
    io.set([1, Number.POSITIVE_INFINITY, 0, 0, 20 * 2 ** 20, 1, 1]);
    expect(native!(Int32Array.of(0), Float64Array.of(1000), io)).toBeUndefined();
    expect(Array.from(io)).toEqual([0, 0, 0, 0, 0, 1, 0]);
    // Arguments of the wrong kind are a TypeError, not a crash: a wrong array, no divisions, more
    // than PyTorch's 16, fewer than n given, no large segment size, too short for the figures.
    expect(() => native!(Float64Array.of(0) as unknown as Int32Array, Float64Array.of(1000), Float64Array.of(1, 1, 0, 0, 1, 1, 0))).toThrow(TypeError);
    expect(() => native!(Int32Array.of(0), Float64Array.of(1000), Float64Array.of(1, 1, 0, 0, 1, 0, 1))).toThrow(TypeError);
    expect(() => native!(Int32Array.of(0), Float64Array.of(1000), new Float64Array(30).fill(1, 0, 5).fill(17, 5, 6))).toThrow(TypeError);
    expect(() => native!(Int32Array.of(0), Float64Array.of(1000), Float64Array.of(1, 1, 0, 0, 1, 3, 1))).toThrow(TypeError);
    expect(() => native!(Int32Array.of(0), Float64Array.of(1000), Float64Array.of(1, 1, 0, 0, 0, 1, 1))).toThrow(TypeError);
    expect(() => native!(Int32Array.of(0), Float64Array.of(1000), Float64Array.of(1, 1, 0, 0, 1, 1))).toThrow(TypeError);
  });

  it("a tensor allocated again while live: its old block stays allocated, as in TypeScript, and the native arena grows past its first size", () => {
    // The arena starts with room for two blocks per tensor; 400 allocations of two ids outgrow it.
    const order = Int32Array.from({ length: 400 }, (_, k) => k % 2);
    const bytes = Float64Array.of(700_000, 3_000_000);
    for (const capacity of [Number.POSITIVE_INFINITY, 500 * 2 ** 20]) {
      const typescript = replayAtCapacity({ order, bytes }, capacity, undefined, { segments: true, typescript: true });
      expect(typescript.cudaMallocs).toBeGreaterThan(20);
      expect(replayAtCapacity({ order, bytes }, capacity, undefined, { segments: true }), `capacity ${capacity}`).toEqual(typescript);
    }
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

  it("random steps: the same figures and segment log, sizes of every power of two mixed in each pool", () => {
    let freed = 0;
    let failed = 0;
    for (const seed of [1, 2]) {
      const step = randomStep(3000, seed);
      for (const text of CONFS) {
        const conf = parseAllocConf(text === "" ? "backend:native" : text);
        const { allocatedPeakBytes: low, reservedPeakBytes: high } = replayAtCapacity(step, Number.POSITIVE_INFINITY, conf, { typescript: true });
        for (const capacity of [Number.POSITIVE_INFINITY, (low + high) / 2, low * 1.02, low]) {
          const typescript = replayAtCapacity(step, capacity, conf, { segments: true, typescript: true });
          expect(replayAtCapacity(step, capacity, conf, { segments: true }), `seed ${seed} ${text} capacity ${capacity}`).toEqual(typescript);
          if (typescript.cudaFrees > 0) freed += 1;
          if (!typescript.fits) failed += 1;
        }
      }
    }
    // The out-of-memory path was taken, through to failing, not only the plain one.
    expect(freed).toBeGreaterThan(4);
    expect(failed).toBeGreaterThan(2);
  });

  it("the common call (a trace, no configuration or the default one, no options) answers as the TypeScript replay, call after call", () => {
    // replayAtCapacity's short path for it reuses one io: a replay that ran out of memory (its
    // figures written over the configuration) must not change the next one's configuration.
    let failed = 0;
    for (const seed of [4, 5]) {
      const step = randomStep(3000, seed);
      const { allocatedPeakBytes: low, reservedPeakBytes: high } = replayAtCapacity(step, Number.POSITIVE_INFINITY, undefined, { typescript: true });
      for (const capacity of [Number.POSITIVE_INFINITY, low * 0.9, (low + high) / 2, Number.POSITIVE_INFINITY, low, undefined]) {
        const typescript = replayAtCapacity(step, capacity, DEFAULT_ALLOC_CONF, { typescript: true });
        expect(replayAtCapacity(step, capacity), `seed ${seed} capacity ${capacity}`).toEqual(typescript);
        expect(replayAtCapacity(step, capacity, DEFAULT_ALLOC_CONF), `seed ${seed} capacity ${capacity}, the default configuration named`).toEqual(typescript);
        if (!typescript.fits) failed += 1;
      }
    }
    expect(failed).toBeGreaterThan(1);
  });

  it("steps of a few dozen events, which replayAtCapacity replays in TypeScript (no addon to load for them), get the native replay's figures and log", () => {
    const native = nativeReplay()!;
    let failed = 0;
    for (const seed of [6, 7, 8]) {
      for (const events of [2, 20, 64]) {
        const step = randomStep(events, seed);
        const { allocatedPeakBytes: low, reservedPeakBytes: high } = replayAtCapacity(step, Number.POSITIVE_INFINITY, undefined, { typescript: true });
        for (const capacity of [Number.POSITIVE_INFINITY, high, (low + high) / 2, low * 0.9]) {
          const where = `seed ${seed}, ${events} events, capacity ${capacity}`;
          const answer = replayAtCapacity(step, capacity);
          expect(answer, where).toEqual(nativeAnswer(native, step, capacity, DEFAULT_ALLOC_CONF, false));
          expect(replayAtCapacity(step, capacity, DEFAULT_ALLOC_CONF, { segments: true }), where).toEqual(nativeAnswer(native, step, capacity, DEFAULT_ALLOC_CONF, true));
          if (!answer.fits) failed += 1;
        }
      }
    }
    expect(failed).toBeGreaterThan(3); // under pressure too, not only without
  });

  it("sizes past free_pool.h's last size class (2^41 B and more share it) replay as in TypeScript", () => {
    // The random step's sizes times 2^20: 512 MiB to 64 TiB, below the last class and in it.
    const step = randomStep(1500, 3);
    const bytes = step.bytes.map((b) => b * 2 ** 20);
    expect(bytes.filter((b) => b >= 2 ** 41).length).toBeGreaterThan(100);
    const huge = { order: step.order, bytes };
    const { allocatedPeakBytes: low, reservedPeakBytes: high } = replayAtCapacity(huge, Number.POSITIVE_INFINITY, undefined, { typescript: true });
    for (const capacity of [Number.POSITIVE_INFINITY, (low + high) / 2]) {
      expect(replayAtCapacity(huge, capacity, undefined, { segments: true }), `capacity ${capacity}`).toEqual(replayAtCapacity(huge, capacity, undefined, { segments: true, typescript: true }));
    }
  });
});

// Sharing and caching change no answer: every preset on every catalog GPU, asked the way the CLI asks
// (one shared plan, checked once, its replays and answers remembered), against the same question
// asked with nothing shared or cached (a plan object no cache has seen).
import { describe, expect, it } from "vitest";
import { advise, type Advice, type AdviceTarget } from "../../src/advice/advise.js";
import { gpusFit } from "../../src/advice/gpusFit.js";
import { jobModel } from "../../src/fit/charges.js";
import { budgetBytes } from "../../src/fit/budget.js";
import { analyticMaxBatch } from "../../src/fit/analytic.js";
import { GPU_CATALOG, findGpu } from "../../src/devices/catalog.js";
import { findMaxBatch, type BatchResult } from "../../src/index.js";
import type { MemoryPlan } from "../../src/plan/memoryPlan.js";
import { buildPlan } from "../../src/plan/buildPlan.js";
import { sharedPlan } from "../../src/plan/planCache.js";
import type { RunSetup } from "../../src/plan/setup.js";
import { listPresets, presetWorkload } from "../../src/workload/presets.js";
import type { Workload } from "../../src/workload/workload.js";

/**
 * The same plan as a new object all the way down: every cache is keyed by the identity of the plan
 * or of its tensor list (validation, the step's order, phase totals, replays, answers), so this one
 * starts from nothing.
 */
function unshared(plan: MemoryPlan): MemoryPlan {
  return structuredClone(plan);
}

/** An answer without its clock. */
function answer(result: BatchResult): Omit<BatchResult, "elapsedMs"> {
  const { elapsedMs: _, ...rest } = result;
  return rest;
}

describe("shared plans and remembered answers", () => {
  it("answer every preset × catalog GPU as a plan asked afresh does", async () => {
    let compared = 0;
    for (const preset of listPresets()) {
      const setup: RunSetup = preset.kind === "cnn" ? { mode: "train", precision: "fp32", optimizer: "momentum" } : { mode: "train", precision: "amp", optimizer: "adamw" };
      const workload = presetWorkload(preset.name)!;
      const plan = sharedPlan(workload, setup);
      // The CLI's way: the one plan for every target, after gpus --fit has answered for each GPU.
      const rows = await gpusFit(workload, setup);
      expect(sharedPlan(workload, setup)).toBe(plan); // asked again: the same object, not rebuilt
      for (const gpu of GPU_CATALOG) {
        const shared = await findMaxBatch(plan, { gpu: gpu.id });
        const fresh = await findMaxBatch(unshared(plan), { gpu: gpu.id });
        expect(answer(shared), `${preset.name} on ${gpu.id}`).toEqual(answer(fresh));
        expect(rows.find((r) => r.id === gpu.id)?.batchSize, `${preset.name} on ${gpu.id}, gpus --fit`).toBe(fresh.batchSize);
        compared += 1;
      }
    }
    expect(compared).toBe(listPresets().length * GPU_CATALOG.length);
  }, 120_000);

  it("share a step between setups only when its tensors are equal, and keep each setup's description", () => {
    const workload = presetWorkload("resnet50")!;
    const base: RunSetup = { mode: "train", precision: "amp", optimizer: "adamw" };
    // Without ZeRO, 2 and 64 data-parallel GPUs hold the same tensors (DDP's buckets do not grow with the count).
    const two = sharedPlan(workload, { ...base, gpus: 2 });
    const many = sharedPlan(workload, { ...base, gpus: 64 });
    expect(many.tensors).toBe(two.tensors);
    expect(many.description).toContain("64 GPUs");
    expect(two.description).toContain("2 GPUs");
    // One GPU has no buckets: a step of its own.
    const one = sharedPlan(workload, base);
    expect(one.tensors).not.toBe(two.tensors);
    expect(one.tensors.length).toBeLessThan(two.tensors.length);
  });
  it("build every setup advice tries as a plan whose timeline nobody shared does", () => {
    // Setups that share a timeline (ZeRO, GPUs, offload, optimizer) and setups that must not (tp,
    // checkpointing, seq, precision): built after all of them, each against the same workload as
    // a new object (src/plan/timelineCache.ts keys by the architecture's identity: nothing shared).
    const variants = (workload: Workload): RunSetup[] => {
      const base: RunSetup = workload.kind === "cnn" ? { mode: "train", precision: "fp32", optimizer: "momentum" } : { mode: "train", precision: "amp", optimizer: "adamw" };
      const text = workload.kind === "transformer" && workload.architecture.vision === undefined;
      return [
        base,
        { ...base, zeroStage: 2, gpus: 8 },
        { ...base, zeroStage: 3, gpus: 64 },
        { ...base, gpus: 4 },
        { ...base, offload: "optimizer" },
        { ...base, optimizer: "sgd" },
        { ...base, precision: "bf16" },
        { ...base, checkpointing: "full" },
        { ...base, checkpointing: "full", zeroStage: 3, gpus: 8 },
        ...(text ? ([{ ...base, tp: 2 }, { ...base, checkpointing: "selective" }, { ...base, seq: 64 }, { ...base, seq: 64, zeroStage: 2, gpus: 16 }] satisfies RunSetup[]) : []),
      ];
    };
    let compared = 0;
    for (const name of ["gpt2", "llama-3.2-1b", "bert-base", "resnet50", "vit-b16"]) {
      const workload = presetWorkload(name)!;
      const setups = variants(workload);
      const shared = setups.map((setup) => buildPlan(workload, setup));
      setups.forEach((setup, i) => {
        expect(buildPlan(structuredClone(workload), setup), `${name} ${JSON.stringify(setup)}`).toEqual(shared[i]);
        compared += 1;
      });
      // Data parallelism over 4 GPUs reuses the base setup's activations rather than rebuilding them.
      // (ZeRO-2 would too in fp32; under amp it is ZeRO's layout, another tape than torch.cuda.amp's: src/plan/autocast.ts.)
      const activation = (plan: MemoryPlan) => plan.tensors.find((t) => t.category === "activations" && t.perSampleBytes > 0);
      expect(activation(shared[3]!)).toBeDefined();
      expect(activation(shared[3]!)).toBe(activation(shared[0]!));
    }
    expect(compared).toBeGreaterThan(50);
  });

  it("advise the same rows when the changes that cannot be shown are left unmeasured as when every change is measured", async () => {
    // An analytic target leaves a change whose model states alone fit no batch unmeasured until its
    // row could be shown (src/advice/advise.ts); a target with a measure of its own measures every
    // change. Here that measure is the analytic answer, so the two reports differ only in `source`.
    const cases: [string, RunSetup, string, number][] = [
      ["llama-3.1-8b", { mode: "train", precision: "amp", optimizer: "adamw", seq: 4096 }, "H100-80GB", 1], // the rows that reach fill the list
      ["llama-3.1-8b", { mode: "train", precision: "amp", optimizer: "adamw", seq: 4096 }, "RTX-4090", 1], // rows that come closer are shown
      ["llama-2-13b", { mode: "train", precision: "amp", optimizer: "adamw", seq: 2048 }, "A100-80GB", 4],
      ["llama-2-7b", { mode: "train", precision: "amp", optimizer: "adamw", seq: 4096 }, "A100-80GB", 64], // none reaches
    ];
    const withoutSource = (items: Advice[]) => items.map(({ source: _, ...rest }) => rest);
    for (const [name, setup, id, targetBatch] of cases) {
      const workload = presetWorkload(name)!;
      const gpu = findGpu(id);
      const analytic: AdviceTarget = { budgetBytes: budgetBytes({ freeBytes: gpu.totalBytes, totalBytes: gpu.totalBytes }), allocator: jobModel({}), totalBytes: gpu.totalBytes, id: gpu.id };
      const measured: AdviceTarget = { ...analytic, measure: async (plan) => (await analyticMaxBatch(unshared(plan), analytic.budgetBytes, analytic.allocator)).batchSize };
      const fromBatchSize = (await analyticMaxBatch(sharedPlan(workload, setup), analytic.budgetBytes, analytic.allocator)).batchSize;
      const lazy = await advise({ workload, setup, targetBatch, fromBatchSize, target: analytic });
      const every = await advise({ workload, setup, targetBatch, fromBatchSize, target: measured });
      expect(withoutSource(lazy.items), `${name} on ${id}, batch ${targetBatch}`).toEqual(withoutSource(every.items));
      expect(lazy.summary).toBe(every.summary);
      expect(lazy.items.length).toBeGreaterThan(0);
    }
  }, 60_000);
});

// The floors that settle "does not fit" without the work: model states (no plan built) and a phase's bytes (no replay), each claiming only what the full answer says.
import { describe, expect, it } from "vitest";
import { GPU_CATALOG } from "../../src/devices/catalog.js";
import { analyticMaxBatch, liveBytesExceed } from "../../src/fit/analytic.js";
import { DEFAULT_ALLOCATOR, fitsBudget, type AllocatorModel } from "../../src/fit/allocator.js";
import { budgetBytes } from "../../src/fit/budget.js";
import { DEFAULT_JOB_CONTEXT_BYTES } from "../../src/fit/context.js";
import { buildPlan } from "../../src/plan/buildPlan.js";
import { phasesOf, type MemoryPlan } from "../../src/plan/memoryPlan.js";
import type { RunSetup } from "../../src/plan/setup.js";
import { wholeStepStateBytes } from "../../src/plan/stateFloor.js";
import { listPresets, presetWorkload } from "../../src/workload/presets.js";

/** What the built plan keeps from its first phase to its last: every tensor live throughout (not only model states). */
function wholeStepBytes(plan: MemoryPlan): number {
  const last = phasesOf(plan).length - 1;
  return plan.tensors.filter((t) => (t.firstPhase ?? 0) === 0 && (t.lastPhase ?? last) === last).reduce((sum, t) => sum + t.fixedBytes, 0);
}

const TRAIN: RunSetup = { mode: "train", precision: "amp", optimizer: "adamw" };
/** The setups advice asks about (ZeRO over GPU counts, tensor parallelism, checkpointing, offload, a shorter sequence) and a few more. */
const SETUPS: RunSetup[] = [
  TRAIN,
  { ...TRAIN, zeroStage: 2, gpus: 8 },
  { ...TRAIN, zeroStage: 3, gpus: 64 },
  { ...TRAIN, checkpointing: "full", zeroStage: 3, gpus: 4, tp: 2 },
  { ...TRAIN, tp: 2 },
  { ...TRAIN, offload: "optimizer" },
  { ...TRAIN, zeroStage: 3, offload: "both", gpus: 8 },
  { mode: "train", precision: "fp32", optimizer: "sgd" },
  { mode: "train", precision: "bf16", optimizer: "adamw", lora: { rank: 8, targets: ["q", "v"] } },
  { mode: "infer", precision: "fp16", optimizer: "adamw" },
];

describe("wholeStepStateBytes", () => {
  it("is at most what every transformer preset's plan holds for its whole step, and more than nothing", () => {
    let compared = 0;
    for (const preset of listPresets().filter((p) => p.kind === "transformer")) {
      const workload = presetWorkload(preset.name)!;
      for (const setup of SETUPS) {
        let plan: MemoryPlan;
        try {
          plan = buildPlan(workload, setup);
        } catch {
          continue; // a setup that does not apply to this preset
        }
        const floor = wholeStepStateBytes(workload, setup);
        const held = wholeStepBytes(plan);
        expect(floor, `${preset.name} ${JSON.stringify(setup)}`).toBeLessThanOrEqual(held);
        // A floor of 0 would skip nothing: it counts the weights (but where streamed from the host), and
        // without ZeRO or offload the weights and Adam's states are most of what the step holds throughout.
        if (setup.offload !== "both") expect(floor, `${preset.name} ${JSON.stringify(setup)}`).toBeGreaterThan(0);
        if (setup === TRAIN) expect(floor, preset.name).toBeGreaterThan(0.9 * held);
        compared += 1;
      }
    }
    expect(compared).toBeGreaterThan(100);
  }, 120_000);

  it("settles only budgets where the search finds no batch", async () => {
    // Each budget a catalog GPU gives, around the floor of each setup: where the floor exceeds the
    // room, the model's own search must answer 0; where it does not, the floor claims nothing.
    let settled = 0;
    for (const name of ["llama-3.1-8b", "gpt2-xl", "mixtral-8x7b"]) {
      const workload = presetWorkload(name)!;
      for (const setup of SETUPS.slice(0, 6)) {
        let plan: MemoryPlan;
        try {
          plan = buildPlan(workload, { ...setup, ...(name === "llama-3.1-8b" && { seq: 1024 }) });
        } catch {
          continue; // --tp 2 where the heads do not split so
        }
        const floor = wholeStepStateBytes(workload, { ...setup, ...(name === "llama-3.1-8b" && { seq: 1024 }) });
        for (const gpu of GPU_CATALOG) {
          const budget = budgetBytes({ freeBytes: gpu.totalBytes, totalBytes: gpu.totalBytes }, {});
          if (floor <= budget - DEFAULT_JOB_CONTEXT_BYTES) continue;
          const { batchSize } = await analyticMaxBatch(plan, budget, { kind: DEFAULT_ALLOCATOR, contextBytes: DEFAULT_JOB_CONTEXT_BYTES });
          expect(batchSize, `${name} ${JSON.stringify(setup)} on ${gpu.id}`).toBe(0);
          settled += 1;
        }
      }
    }
    expect(settled).toBeGreaterThan(10);
  }, 120_000);
});

describe("liveBytesExceed", () => {
  it("says a batch does not fit only where the replay at that capacity does not complete, and says it near every answer", async () => {
    const allocators: AllocatorModel[] = [
      { kind: "pytorch", contextBytes: DEFAULT_JOB_CONTEXT_BYTES },
      { kind: "raw", contextBytes: DEFAULT_JOB_CONTEXT_BYTES },
      { kind: "expandable", contextBytes: DEFAULT_JOB_CONTEXT_BYTES },
    ];
    let refused = 0;
    let checked = 0;
    for (const name of ["resnet50", "bert-base", "gpt2", "llama-3.2-1b"]) {
      const workload = presetWorkload(name)!;
      const plan = buildPlan(workload, name === "resnet50" ? { mode: "train", precision: "fp32", optimizer: "momentum" } : { ...TRAIN, ...(name === "llama-3.2-1b" && { seq: 1024 }) });
      for (const allocator of allocators) {
        for (const gpu of GPU_CATALOG.filter((g) => ["T4", "A100-40GB", "H100-80GB"].includes(g.id))) {
          const budget = budgetBytes({ freeBytes: gpu.totalBytes, totalBytes: gpu.totalBytes }, {});
          const { batchSize } = await analyticMaxBatch(plan, budget, allocator);
          // Batches around the answer (where the bound is tightest) and far above it.
          for (const batch of [1, batchSize, batchSize + 1, batchSize + 2, Math.ceil(batchSize * 1.05) + 3, 2 * batchSize + 8]) {
            if (batch < 1) continue;
            const exceeds = liveBytesExceed(plan, batch, budget - allocator.contextBytes);
            if (exceeds) {
              expect(fitsBudget(plan, batch, allocator, budget), `${name} at ${batch} on ${gpu.id}, ${allocator.kind}`).toBe(false);
              refused += 1;
            }
            checked += 1;
          }
        }
      }
    }
    expect(refused).toBeGreaterThan(checked / 4); // it does refuse: the batches far above the answer at least
  }, 120_000);
});

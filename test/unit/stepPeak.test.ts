// vramfit's step peak against real PyTorch training steps, measured by scripts/measure-step-peak.py.
//
// Like with like: both sides count allocated bytes — every tensor rounded up to 512 B as PyTorch's
// CUDA caching allocator rounds a request (torch.cuda.memory_allocated()) — with no CUDA context,
// no allocator segments or cache, and no 0-dim scalars (the script cannot tell a device scalar
// from a Python number autograd wrapped; vramfit's few scalars only add to its side).
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import type { Optimizer } from "../../src/plan/bytesPerParameter.js";
import { buildPlan } from "../../src/plan/buildPlan.js";
import { largestBatchWithin, peakBytes, phaseBytes, phasesOf, type MemoryPlan } from "../../src/plan/memoryPlan.js";
import type { OptimizerImpl } from "../../src/plan/optimizerStep.js";
import { presetWorkload } from "../../src/workload/presets.js";
import type { Workload } from "../../src/workload/workload.js";

interface MeasuredCase {
  case: string;
  model: string;
  optimizer: Optimizer;
  optimizerImpl: OptimizerImpl;
  parameterCount: number;
  checkBatch: number;
  predictedPeakAtCheckBytes: number;
  measuredPeakAtCheckBytes: number;
  budgetBytes: number;
  maxBatchForBudget: number;
  peakPhaseAtMaxBatch: string;
}

const fixture = JSON.parse(readFileSync(new URL("../fixtures/torch-step-peaks.json", import.meta.url), "utf8")) as {
  command: string;
  torch: string;
  cases: MeasuredCase[];
};

/** The workload each case measured, as vramfit describes it. */
function workloadOf(model: string): Workload {
  const preset = presetWorkload(model)!;
  if (model !== "bert-base" || preset.kind !== "transformer") return preset;
  // The script trains BertForSequenceClassification: BertModel and a 2-way classifier on the pooler.
  return { ...preset, architecture: { ...preset.architecture, classes: 2 } };
}

function planOf(c: MeasuredCase): MemoryPlan {
  const seq = c.model === "gpt2" ? { seq: 1024 } : c.model === "bert-base" ? { seq: 512 } : {};
  return buildPlan(workloadOf(c.model), { mode: "train", precision: "fp32", optimizer: c.optimizer, optimizerImpl: c.optimizerImpl, attention: "eager", ...seq });
}

const allocated = (bytes: number): number => Math.ceil(bytes / 512) * 512;

describe("the step's peak against real PyTorch steps (test/fixtures/torch-step-peaks.json)", () => {
  test("the fixture says how it was made and covers the issue's cases", () => {
    expect(fixture.command).toContain("scripts/measure-step-peak.py");
    const models = new Set(fixture.cases.map((c) => c.model));
    expect([...models].sort()).toEqual(["bert-base", "gpt2", "resnet152", "resnet50", "vgg16"]);
    for (const model of models) {
      expect(fixture.cases.filter((c) => c.model === model).map((c) => c.optimizer)).toEqual(expect.arrayContaining(["sgd", "momentum", "adam"]));
    }
  });

  test.each(fixture.cases.map((c) => [c.case, c] as const))("the measured peak is affine per op boundary: %s", (_, c) => {
    // The peak fitted from two batches predicts the peak measured at a third.
    expect(Math.abs(c.predictedPeakAtCheckBytes / c.measuredPeakAtCheckBytes - 1)).toBeLessThan(1e-4);
  });

  test.each(fixture.cases.map((c) => [c.case, c] as const))("%s: largest batch within [0.97, 1.00] of the real one, never below the real peak at the check batch", (_, c) => {
    const plan = planOf(c);
    expect(plan.parameterCount).toBe(c.parameterCount);
    const ratio = largestBatchWithin(plan, c.budgetBytes, allocated) / c.maxBatchForBudget;
    expect(ratio).toBeGreaterThanOrEqual(0.97);
    expect(ratio).toBeLessThanOrEqual(1);
    expect(peakBytes(plan, c.checkBatch, allocated)).toBeGreaterThanOrEqual(c.measuredPeakAtCheckBytes);
  });

  test.each(fixture.cases.map((c) => [c.case, c] as const))("%s: the timeline peaks where the real step does (within 1%)", (_, c) => {
    // The script labels every op with the stage running it (`backward layer4.2`, `forward loss`);
    // vramfit's phases name the op within the stage as well.
    const plan = planOf(c);
    const live = phaseBytes(plan, c.maxBatchForBudget, allocated);
    const inRealPeakStage = Math.max(...phasesOf(plan).map((phase, i) => (phase === c.peakPhaseAtMaxBatch || phase.startsWith(`${c.peakPhaseAtMaxBatch} `) ? live[i]! : 0)));
    expect(inRealPeakStage).toBeGreaterThanOrEqual(0.99 * Math.max(...live));
  });
});

// The script's own check, where the system python has torch (CI installs python3-torch only when
// asked to): one Linear layer's step, every op boundary's live bytes derived by hand.
const python = "/usr/bin/python3";
const hasTorch = existsSync(python) && spawnSync(python, ["-c", "import torch"], { stdio: "ignore" }).status === 0;
const hasGcc = spawnSync("gcc", ["--version"], { stdio: "ignore" }).status === 0;
describe.skipIf(!hasTorch || !hasGcc)("scripts/measure-step-peak.py --self-check (needs /usr/bin/python3 with torch, and gcc)", () => {
  test("counts a Linear layer's step to the byte", () => {
    const run = spawnSync(python, ["scripts/measure-step-peak.py", "--self-check"], { encoding: "utf8", timeout: 120_000 });
    expect(run.stderr.slice(-2000)).not.toMatch(/Traceback/);
    expect(run.stdout).toContain("self-check passed");
    expect(run.status).toBe(0);
  });
});

// vramfit's step peak against real PyTorch training steps, measured by scripts/reference/measure-step-peak.py.
//
// Like with like: both sides count allocated bytes — every tensor rounded up to 512 B as PyTorch's
// CUDA caching allocator rounds a request (torch.cuda.memory_allocated()) — with no CUDA context,
// no allocator segments or cache, and no 0-dim scalars (the script cannot tell a device scalar
// from a Python number autograd wrapped; vramfit's few scalars only add to its side).
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import type { Optimizer, Precision } from "../../src/plan/bytesPerParameter.js";
import { BLAS_WORKSPACE_PREFIX } from "../../src/plan/blasWorkspace.js";
import { buildPlan } from "../../src/plan/buildPlan.js";
import { largestBatchWithin, peakBytes, phaseBytes, phasesOf, type MemoryPlan } from "../../src/plan/memoryPlan.js";
import type { OptimizerImpl } from "../../src/plan/optimizerStep.js";
import { presetWorkload } from "../../src/workload/presets.js";
import type { Workload } from "../../src/workload/workload.js";
import { skipsWithoutTorchCpu, torchCpuPython } from "../torchCpuPython.js";
import { ciResource } from "../ciResources.js";

// In CI, made beside the tests (.ci/run): wait for it here, before anything reads its variables.
await ciResource("cpu");

interface MeasuredCase {
  case: string;
  model: string;
  precision: Precision;
  optimizer: Optimizer;
  optimizerImpl: OptimizerImpl;
  parameterCount: number;
  checkBatch: number;
  predictedPeakAtCheckBytes: number;
  measuredPeakAtCheckBytes: number;
  budgetBytes: number;
  maxBatchForBudget: number;
  peakAtMaxBatchBytes: number;
  peakPhaseAtMaxBatch: string;
}

interface Fixture {
  command: string;
  torch: string;
  cases: MeasuredCase[];
  autocastKernels?: Record<string, { AutocastCPU: string; AutocastCUDA: string }>;
}
const readFixture = (name: string): Fixture => JSON.parse(readFileSync(new URL(`../fixtures/${name}`, import.meta.url), "utf8")) as Fixture;
const fixture = readFixture("torch-step-peaks.json");

/** The workload each case measured, as vramfit describes it. */
function workloadOf(model: string): Workload {
  const preset = presetWorkload(model)!;
  if (model !== "bert-base" || preset.kind !== "transformer") return preset;
  // The script trains BertForSequenceClassification: BertModel and a 2-way classifier on the pooler.
  return { ...preset, architecture: { ...preset.architecture, classes: 2 } };
}

/** The plan of a case, less cuBLAS's workspaces: a CPU step has none (src/plan/blasWorkspace.ts). */
function planOf(c: MeasuredCase): MemoryPlan {
  const seq = c.model === "gpt2" ? { seq: 1024 } : c.model === "bert-base" ? { seq: 512 } : {};
  // The fixtures' GPT-2 steps are transformers < 4.46's loss, written out with the shifted copy of the logits.
  const loss = c.model === "gpt2" ? { hfLoss: "legacy" as const } : {};
  const plan = buildPlan(workloadOf(c.model), { mode: "train", precision: c.precision, optimizer: c.optimizer, optimizerImpl: c.optimizerImpl, attention: "eager", ...seq, ...loss });
  return { ...plan, tensors: plan.tensors.filter((t) => !t.name.startsWith(BLAS_WORKSPACE_PREFIX)) };
}

const allocated = (bytes: number): number => Math.ceil(bytes / 512) * 512;

/** vramfit's largest batch for the case's budget is within [0.97, 1.00] of the real one; returns the plan. */
function expectLargestBatch(c: MeasuredCase): MemoryPlan {
  const plan = planOf(c);
  expect(plan.parameterCount).toBe(c.parameterCount);
  const ratio = largestBatchWithin(plan, c.budgetBytes, allocated) / c.maxBatchForBudget;
  expect(ratio).toBeGreaterThanOrEqual(0.97);
  expect(ratio).toBeLessThanOrEqual(1);
  return plan;
}

/** At the real largest batch, vramfit's timeline peaks in the stage the real step peaks in (within 1%). */
function expectPeakStage(c: MeasuredCase): void {
  // The script labels every op with the stage running it (`backward layer4.2`, `forward loss`);
  // vramfit's phases name the op within the stage as well.
  const plan = planOf(c);
  const live = phaseBytes(plan, c.maxBatchForBudget, allocated);
  const inRealPeakStage = Math.max(...phasesOf(plan).map((phase, i) => (phase === c.peakPhaseAtMaxBatch || phase.startsWith(`${c.peakPhaseAtMaxBatch} `) ? live[i]! : 0)));
  expect(inRealPeakStage).toBeGreaterThanOrEqual(0.99 * Math.max(...live));
}

describe("the step's peak against real PyTorch steps (test/fixtures/torch-step-peaks.json)", () => {
  test("the fixture says how it was made and covers the issue's cases", () => {
    expect(fixture.command).toContain("scripts/reference/measure-step-peak.py");
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
    const plan = expectLargestBatch(c);
    expect(peakBytes(plan, c.checkBatch, allocated)).toBeGreaterThanOrEqual(c.measuredPeakAtCheckBytes);
  });

  test.each(fixture.cases.map((c) => [c.case, c] as const))("%s: the timeline peaks where the real step does (within 1%)", (_, c) => expectPeakStage(c));
});

// amp against real autocast steps: CPU bf16 autocast standing in for CUDA fp16 (2 bytes an element
// on both; the CNNs' ops are cast alike on both devices, checked below), so no GPU figures.
// docs/memory-model.md ("amp, measured") has the table and where the differences come from.
const amp = readFixture("torch-step-peaks-amp.json");
const MiB = 2 ** 20;
/**
 * KNOWN GAPS, MiB above the real step at its largest batch (the safe side), pinned: vgg16's plan
 * peaks in classifier.0's backward (its 103 M-parameter weight's 16-bit copy and fp32 gradient),
 * the real CPU autocast step in features.30's; not diagnosed (the CUDA trace of the same step
 * agrees to 1.0000 at batches 4 and 8, test/unit/traceAgreement.test.ts).
 */
const AMP_PEAK_GAPS: Record<string, number> = { "vgg16/amp/sgd/foreach": 26.8, "vgg16/amp/momentum/foreach": 28.0, "vgg16/amp/adam/foreach": 29.1 };

describe("amp against real autocast steps (test/fixtures/torch-step-peaks-amp.json)", () => {
  test("the fixture says how it was made: the CNNs, and CPU autocast casting as CUDA's does", () => {
    expect(amp.command).toContain("scripts/reference/measure-step-peak.py");
    expect(amp.cases.map((c) => `${c.model}/${c.precision}`)).toEqual(expect.arrayContaining(["resnet50/amp", "resnet152/amp", "vgg16/amp"]));
    expect(amp.cases.every((c) => c.precision === "amp")).toBe(true);
    // Every op the CNNs reach is cast (or left alone) on both devices alike, but the loss: the CPU
    // casts cross_entropy_loss's input, CUDA its log_softmax's, one fp32 copy of the logits either way.
    const differ = Object.entries(amp.autocastKernels!).filter(([, k]) => k.AutocastCPU !== k.AutocastCUDA).map(([op]) => op);
    expect(differ.sort()).toEqual(["aten::cross_entropy_loss", "aten::log_softmax.int"]);
    expect(amp.autocastKernels!["aten::conv2d"]).toEqual({ AutocastCPU: "kernel", AutocastCUDA: "kernel" });
  });

  test.each(amp.cases.map((c) => [c.case, c] as const))("the measured peak is affine per op boundary: %s", (_, c) => {
    expect(Math.abs(c.predictedPeakAtCheckBytes / c.measuredPeakAtCheckBytes - 1)).toBeLessThan(1e-4);
  });

  // The fp32 images the loader feeds stay live beside the 16-bit copy the first layer saves
  // (src/plan/cnnStep.ts): without them the largest batch was 0.6-1.4% too large.
  test.each(amp.cases.map((c) => [c.case, c] as const))("%s: largest batch within [0.97, 1.00] of the real one, within 1 MiB of its peak there", (_, c) => {
    const plan = expectLargestBatch(c);
    const over = (peakBytes(plan, c.maxBatchForBudget, allocated) - c.peakAtMaxBatchBytes) / MiB;
    if (AMP_PEAK_GAPS[c.case] !== undefined) expect(over).toBeCloseTo(AMP_PEAK_GAPS[c.case]!, 1);
    else expect(Math.abs(over)).toBeLessThan(1);
  });

  test.each(amp.cases.map((c) => [c.case, c] as const))("%s: the timeline peaks where the real step does (within 1%)", (_, c) => expectPeakStage(c));

  // At a small batch the model states and the weights' copies decide: with torch.cuda.amp's layout
  // (fp32 weights and gradients, each layer's 16-bit copy; src/plan/autocast.ts) vramfit is within
  // 1 MiB of the real step at batch 4. (With ZeRO's layout, planned for amp before, it was up to
  // 181 MiB low: vgg16's 103 M-parameter classifier holds its gradient in 16 and 32 bits.)
  test.each(amp.cases.map((c) => [c.case, c] as const))("%s: at the check batch within 1 MiB of the real peak", (_, c) => {
    expect(Math.abs(c.measuredPeakAtCheckBytes - peakBytes(planOf(c), c.checkBatch, allocated))).toBeLessThan(MiB);
  });
});

// The script's own check, under the torch 2.13 CPU venv: one Linear layer's step, every op that allocates
// derived by hand to the byte, and every view between them allocating nothing.
const hasGcc = spawnSync("gcc", ["--version"], { stdio: "ignore" }).status === 0;
const skipsTorch = skipsWithoutTorchCpu("test/unit/stepPeak.test.ts");
describe.skipIf(skipsTorch || !hasGcc)("scripts/reference/measure-step-peak.py --self-check (needs VRAMFIT_TORCH_CPU_PYTHON, and gcc)", () => {
  test("counts a Linear layer's step to the byte", () => {
    const run = spawnSync(torchCpuPython!, ["scripts/reference/measure-step-peak.py", "--self-check"], { encoding: "utf8", timeout: 170_000 });
    expect(run.stderr.slice(-2000)).not.toMatch(/Traceback/);
    expect(run.stdout).toContain("self-check passed");
    expect(run.status).toBe(0);
  }, 180_000); // torch 2.13 imports in seconds, in a minute or more on a loaded 2-core machine: wait on the process
});

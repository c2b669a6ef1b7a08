// Bytes per parameter by precision and optimizer, and ZeRO's partitioning, against the ZeRO paper.
import { describe, expect, test } from "vitest";
import { buildPlan } from "../../src/plan/buildPlan.js";
import { bytesPerParameter, optimizerStates, zeroShards, type ZeroStage } from "../../src/plan/bytesPerParameter.js";
import { bytesByCategory } from "../../src/plan/memoryPlan.js";
import { presetWorkload } from "../../src/workload/presets.js";

const total = (b: { parameters: number; gradients: number; optimizerStates: number }) => b.parameters + b.gradients + b.optimizerStates;

describe("bytesPerParameter", () => {
  test("amp + Adam is ZeRO's mixed-precision Adam: 2 + 2 + K with K = 12 (Rajbhandari et al. 2020, §3.1)", () => {
    expect(bytesPerParameter("amp", "adam")).toEqual({ parameters: 2, gradients: 2, optimizerStates: 12 });
    expect(bytesPerParameter("amp", "adamw")).toEqual({ parameters: 2, gradients: 2, optimizerStates: 12 });
  });

  test.each([
    // precision, optimizer, weights, grads, states
    ["fp32", "sgd", 4, 4, 0],
    ["fp32", "momentum", 4, 4, 4],
    ["fp32", "adam", 4, 4, 8],
    ["fp32", "adam8bit", 4, 4, 2],
    ["bf16", "adamw", 2, 2, 4],
    ["fp16", "momentum", 2, 2, 2],
    ["amp", "sgd", 2, 2, 4],
    ["amp", "momentum", 2, 2, 8],
    ["amp", "adam8bit", 2, 2, 6],
  ] as const)("%s + %s: %d + %d + %d", (precision, optimizer, parameters, gradients, states) => {
    expect(bytesPerParameter(precision, optimizer)).toEqual({ parameters, gradients, optimizerStates: states });
  });

  test("amp and fp32 total the same bytes for every optimizer (the torch.cuda.amp layout is 4 + 4 + states)", () => {
    for (const optimizer of ["sgd", "momentum", "adam", "adamw", "adam8bit"] as const) {
      expect(total(bytesPerParameter("amp", optimizer))).toBe(total(bytesPerParameter("fp32", optimizer)));
    }
  });

  test("amp keeps an fp32 master copy and the states as separate tensors", () => {
    expect(optimizerStates("amp", "adam").map((s) => s.name)).toEqual(["master", "exp_avg", "exp_avg_sq"]);
  });
});

describe("ZeRO figures (Rajbhandari et al. 2020, Figure 1: Ψ = 7.5B, Adam, mixed precision, Nd = 64)", () => {
  const psi = 7.5e9;
  const modelStatesGB = (stage: ZeroStage, gpus: number) => {
    const plan = buildPlan(
      { kind: "affine", parameterCount: psi, perSampleBytes: 1, fixedBytes: 0 },
      { mode: "train", precision: "amp", optimizer: "adam", zeroStage: stage, gpus },
    );
    const c = bytesByCategory(plan, 0);
    return (c.parameters + c.gradients + c.optimizerStates) / 1e9;
  };

  test("baseline: (2 + 2 + 12) × 7.5B = 120 GB", () => {
    expect(modelStatesGB(0, 64)).toBeCloseTo(120, 6);
  });

  // Figure 1 prints one decimal: 31.4, 16.6, 1.9 GB.
  test.each([
    [1, 31.4],
    [2, 16.6],
    [3, 1.9],
  ] as const)("stage %d over 64 GPUs: %d GB per GPU", (stage, published) => {
    expect(Math.abs(modelStatesGB(stage, 64) - published)).toBeLessThan(0.05);
  });

  test("GPT-2 1.5B with mixed-precision Adam needs 24 GB of model states (§3.1)", () => {
    expect(modelStatesGB(0, 1) / 7.5e9 * 1.5e9).toBeCloseTo(24, 6);
  });

  test("which states each stage partitions", () => {
    expect(zeroShards(0, 8)).toEqual({ parameters: 1, gradients: 1, optimizerStates: 1 });
    expect(zeroShards(1, 8)).toEqual({ parameters: 1, gradients: 1, optimizerStates: 8 });
    expect(zeroShards(2, 8)).toEqual({ parameters: 1, gradients: 8, optimizerStates: 8 });
    expect(zeroShards(3, 8)).toEqual({ parameters: 8, gradients: 8, optimizerStates: 8 });
  });

  test("a layered model partitions per layer and stage 3 gathers its largest layer", () => {
    const llama = presetWorkload("llama-2-7b")!;
    const setup = { mode: "train", precision: "amp", optimizer: "adamw", seq: 512 } as const;
    // ZeRO's layout unpartitioned (stage 1 on one GPU): without --zero, amp is torch.cuda.amp's fp32 layout.
    const full = bytesByCategory(buildPlan(llama, { ...setup, zeroStage: 1, gpus: 1 }), 1);
    const stage3 = buildPlan(llama, { ...setup, zeroStage: 3, gpus: 64 });
    const sharded = bytesByCategory(stage3, 1);
    expect(sharded.optimizerStates).toBeCloseTo(full.optimizerStates / 64, -5);
    expect(sharded.parameters).toBeCloseTo(full.parameters / 64, -5);
    const gathered = stage3.tensors.find((t) => t.name === "zero3.gathered_weights")!;
    // The largest group is one layer (attention 4h², SwiGLU 3h·f, two RMSNorms), larger than the
    // 32000 × 4096 embedding table; its weights in fp16.
    const h = 4096;
    expect(gathered.fixedBytes).toBe((4 * h * h + 3 * h * 11008 + 2 * h) * 2);
  });
});

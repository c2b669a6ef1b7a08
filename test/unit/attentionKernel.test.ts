// SDPA's kernel choice (src/plan/attentionKernel.ts, after torch 2.14's sdp_utils.cpp) and what each kernel keeps in a plan.
import { describe, expect, test } from "vitest";
import { chooseSdpaKernel, type AttentionCall } from "../../src/plan/attentionKernel.js";
import { buildPlan } from "../../src/plan/buildPlan.js";
import { parseComputeCapability } from "../../src/plan/computeCapability.js";
import { parseSetup } from "../../src/plan/setup.js";
import { presetWorkload } from "../../src/workload/presets.js";

const call = (cc: string, over: Partial<AttentionCall>): AttentionCall => ({ elementBytes: 2, bf16: true, gqa: false, headDim: 128, mask: false, cc: parseComputeCapability("cc", cc), training: true, ...over });

describe("chooseSdpaKernel: the first backend of the priority order whose checks pass", () => {
  test.each([
    ["bf16 on Hopper (9.0): cuDNN first", "9.0", {}, "cudnn"],
    ["bf16 with GQA on Hopper: cuDNN takes GQA", "9.0", { gqa: true }, "cudnn"],
    ["bf16 on B200 (10.0): cuDNN", "10.0", {}, "cudnn"],
    ["bf16 on the A100 (8.0): flash", "8.0", {}, "flash"],
    ["bf16 on the L40S (8.9): flash", "8.9", {}, "flash"],
    ["head dim 256 on Hopper: over cuDNN's 128, flash", "9.0", { headDim: 256 }, "flash"],
    ["head dim 256, training on 8.9: flash refuses > 192; no GQA: memory-efficient", "8.9", { headDim: 256 }, "efficient"],
    ["head dim 256 with GQA, training on 8.9: math", "8.9", { headDim: 256, gqa: true }, "math"],
    ["fp32 without GQA: memory-efficient (flash and cuDNN are 16-bit only)", "9.0", { elementBytes: 4, bf16: false }, "efficient"],
    ["fp32 with GQA: math, the s² scores", "9.0", { elementBytes: 4, bf16: false, gqa: true }, "math"],
    ["fp32 with GQA and a padding mask: transformers repeats K and V, memory-efficient", "8.0", { elementBytes: 4, bf16: false, gqa: true, mask: true }, "efficient"],
    ["fp16 on the V100 (7.0): no flash before sm 8.0, memory-efficient", "7.0", { bf16: false }, "efficient"],
    ["fp16 with GQA on the T4 (7.5): math", "7.5", { bf16: false, gqa: true }, "math"],
    ["bf16 with a mask on the A100: no flash, memory-efficient", "8.0", { mask: true }, "efficient"],
  ] as const)("%s", (_, cc, over, kernel) => {
    expect(chooseSdpaKernel(call(cc, over))).toBe(kernel);
  });
});

describe("the kernel in a plan (--attention sdpa, the default)", () => {
  const llama3 = presetWorkload("llama-3-8b")!;
  const scores = (plan: ReturnType<typeof buildPlan>) => plan.tensors.filter((t) => t.name === "layers.0.attention.softmax").map((t) => t.perSampleBytes);
  test("fp32 Llama-3-8B (GQA 32/8): math, whose s² softmax a layer keeps, K and V repeated to 32 heads", () => {
    const plan = buildPlan(llama3, parseSetup({ seq: 1024, precision: "fp32" }));
    expect(plan.attentionKernel).toBe("math");
    expect(plan.description).toContain("attention sdpa → math");
    expect(scores(plan)).toEqual([4 * 32 * 1024 * 1024]);
    expect(plan.tensors.find((t) => t.name === "layers.0.attention.key")!.perSampleBytes).toBe(4 * 1024 * 32 * 128);
  });

  test("bf16 on the target's GPU: cuDNN on an H100, flash on an A100, neither keeping scores", () => {
    const h100 = buildPlan(llama3, parseSetup({ seq: 1024, precision: "bf16", computeCapability: "9.0" }));
    const a100 = buildPlan(llama3, parseSetup({ seq: 1024, precision: "bf16", computeCapability: "8.0" }));
    expect([h100.attentionKernel, a100.attentionKernel]).toEqual(["cudnn", "flash"]);
    expect(scores(h100)).toEqual([]);
    expect(h100.tensors.find((t) => t.name === "layers.0.attention.logsumexp")!.perSampleBytes).toBe(4 * 32 * 1024);
  });

  test("the memory-efficient kernel's logsumexp is padded to 32 queries; a named kernel is taken as given", () => {
    const gpt2 = presetWorkload("gpt2")!;
    const plan = buildPlan(gpt2, parseSetup({ seq: 1000, precision: "fp32" }));
    expect(plan.attentionKernel).toBe("efficient");
    expect(plan.tensors.find((t) => t.name === "layers.0.attention.logsumexp")!.perSampleBytes).toBe(4 * 12 * 1024);
    expect(buildPlan(gpt2, parseSetup({ seq: 1000, precision: "fp32", attention: "flash" })).attentionKernel).toBe("flash");
    expect(buildPlan(gpt2, parseSetup({ seq: 1000, precision: "fp32", attention: "eager" })).attentionKernel).toBe("eager");
  });
});

// The step options (src/plan/stepSetup.ts): how each changes what the step holds, and their one-line errors.
import { describe, expect, test } from "vitest";
import { buildPlan } from "../../src/plan/buildPlan.js";
import { peakBytes, phaseBytes, phasesOf, type MemoryPlan } from "../../src/plan/memoryPlan.js";
import { parseSetup } from "../../src/plan/setup.js";
import { presetWorkload } from "../../src/workload/presets.js";

const llama = presetWorkload("llama-2-7b")!;
const s = 512;
const h = 4096;
const named = (plan: MemoryPlan, name: string) => plan.tensors.filter((t) => t.name === name);

describe("--lora-dropout (PEFT's lora_dropout: lora_B(lora_A(dropout(x))))", () => {
  const base = { seq: s, loraRank: 8, precision: "bf16", attention: "flash" };
  test("each adapted projection drops its own copy of its input and keeps a 1-byte mask; A saves the dropped copy", () => {
    const plan = buildPlan(llama, parseSetup({ ...base, loraDropout: "0.05" }));
    for (const proj of ["q", "v"]) {
      // PEFT casts x to its fp32 adapters' dtype first, and drops the fp32 copy.
      expect(named(plan, `layers.0.lora.${proj}.dropout_output`).map((t) => [t.perSampleBytes, t.category])).toEqual([[4 * s * h, "activations"]]);
      expect(named(plan, `layers.0.lora.${proj}.dropout_mask`).map((t) => t.perSampleBytes)).toEqual([s * h]);
    }
    // Without dropout (PEFT's default, nn.Identity) there is no dropped copy: A saves the fp32 cast of
    // x. With it, A saves the dropped fp32 copy instead and the 1-byte mask is kept too: 2 · s·h bytes
    // a layer and sample more at the end of forward (q's and v's masks), but in the first layer, whose
    // input needs no gradient: its dropout records no node and keeps no mask.
    const none = buildPlan(llama, parseSetup(base));
    expect(none.tensors.some((t) => t.name.includes("dropout"))).toBe(false);
    expect(peakBytes(plan, 4) - peakBytes(none, 4)).toBe(31 * 2 * s * h * 4);
  });

  test("is checked", () => {
    expect(() => parseSetup({ ...base, loraDropout: "1" })).toThrow(/--lora-dropout: .*probability/);
    expect(() => parseSetup({ ...base, loraDropout: "-0.1" })).toThrow(/--lora-dropout/);
    expect(() => parseSetup({ seq: s, loraDropout: "0.1" })).toThrow(/--lora-dropout: .*--lora-rank/);
  });
});

describe("--hf-loss (transformers' causal-LM loss)", () => {
  test("current (≥ 4.46): fp32 logits of every position, no shifted copy; legacy: a 16-bit copy of s − 1 positions", () => {
    const current = buildPlan(llama, parseSetup({ seq: s, precision: "bf16" }));
    const legacy = buildPlan(llama, parseSetup({ seq: s, precision: "bf16", hfLoss: "legacy" }));
    const V = 32000;
    expect(named(current, "loss.log_softmax")[0]!.perSampleBytes).toBe(4 * s * V);
    expect(named(current, "loss.logits_fp32")[0]!.perSampleBytes).toBe(4 * s * V);
    expect(named(current, "loss.shift_logits")).toEqual([]);
    expect(named(legacy, "loss.shift_logits")[0]!.perSampleBytes).toBe(2 * (s - 1) * V);
    expect(named(legacy, "loss.log_softmax")[0]!.perSampleBytes).toBe(4 * (s - 1) * V);
    // In the loss's forward the copy is live beside the logits (GPT-2: 50,257 × 1024 × 2 B a sample);
    // it is gone before backward, where both peak alike.
    const gpt2 = presetWorkload("gpt2")!;
    const atLoss = (plan: MemoryPlan) => {
      const live = phaseBytes(plan, 8);
      return Math.max(...phasesOf(plan).map((phase, i) => (phase.startsWith("forward loss") ? live[i]! : 0)));
    };
    const gpt2Current = buildPlan(gpt2, parseSetup({ seq: 1024, precision: "bf16" }));
    const gpt2Legacy = buildPlan(gpt2, parseSetup({ seq: 1024, precision: "bf16", hfLoss: "legacy" }));
    expect(atLoss(gpt2Legacy) - atLoss(gpt2Current)).toBeGreaterThan(8 * 2 * 1023 * 50257 * 0.9);
    expect(() => parseSetup({ hfLoss: "old" })).toThrow(/--hf-loss: expected one of current, legacy/);
  });
});

describe("--grad-accum N and --zero-grad zeros: gradients that stay alive", () => {
  const bert = presetWorkload("bert-base")!;
  const setup = { seq: 512, precision: "fp32", optimizer: "adamw" };
  const gradientBytes = (plan: MemoryPlan) => plan.tensors.filter((t) => t.category === "gradients").reduce((sum, t) => sum + t.fixedBytes, 0);
  test.each([[{ gradAccum: "4" }], [{ zeroGrad: "zeros" }]])("%o: every gradient is live from the first phase to the last, and each parameter's new gradient is added in place", (extra) => {
    const plain = buildPlan(bert, parseSetup(setup));
    const kept = buildPlan(bert, parseSetup({ ...setup, ...extra }));
    const grads = kept.tensors.filter((t) => t.category === "gradients");
    expect(grads.length).toBeGreaterThan(10);
    expect(grads.every((t) => t.firstPhase === undefined && t.lastPhase === undefined)).toBe(true);
    expect(gradientBytes(kept)).toBe(gradientBytes(plain));
    // In forward nothing but the gradients differs: 4 bytes × BERT-base's 109,482,240 parameters (plus the allocator's rounding per tensor).
    const first = (plan: MemoryPlan) => phaseBytes(plan, 8)[0]!;
    expect(first(kept) - first(plain)).toBe(gradientBytes(plain));
    expect(gradientBytes(plain)).toBeGreaterThanOrEqual(4 * 109_482_240);
    // Backward adds each new gradient into the kept one: a transient of the same size where the group's gradient is made.
    expect(kept.tensors.filter((t) => t.name.endsWith(".grads.incoming")).every((t) => t.firstPhase === t.lastPhase && t.firstPhase !== undefined)).toBe(true);
    expect(peakBytes(kept, 8)).toBeGreaterThan(peakBytes(plain, 8));
  });

  test("a raw workload's gradients too; both are training options", () => {
    const raw = { kind: "affine", parameterCount: 1e9, perSampleBytes: 2 ** 20, fixedBytes: 0 } as const;
    const grads = buildPlan(raw, parseSetup({ gradAccum: "8" })).tensors.find((t) => t.name === "gradients")!;
    expect([grads.firstPhase, grads.lastPhase]).toEqual([undefined, undefined]);
    expect(() => parseSetup({ mode: "infer", gradAccum: "2" })).toThrow(/--grad-accum: .*--mode train/);
    expect(() => parseSetup({ gradAccum: "0" })).toThrow(/--grad-accum/);
    expect(() => parseSetup({ zeroGrad: "false" })).toThrow(/--zero-grad: expected one of none, zeros/);
  });
});

describe("QLoRA: frozen 4-bit projections keep their input (bitsandbytes' MatMul4Bit saves A when it needs a gradient)", () => {
  test("nf4 keeps the inputs that frozen 16-bit projections do not: 2·s·(h + f) bytes a layer and sample, and 2·s·h more past the first", () => {
    const base = { seq: s, loraRank: 16, precision: "bf16", attention: "flash" };
    const saved = (plan: MemoryPlan, name: string) => plan.tensors.filter((t) => t.name === name && t.category === "activations").map((t) => t.perSampleBytes);
    const nf4 = buildPlan(llama, parseSetup({ ...base, weights: "nf4" }));
    const bf16 = buildPlan(llama, parseSetup(base));
    const f = 11008;
    expect(saved(nf4, "layers.3.mlp.input")).toEqual([2 * s * h]);
    expect(saved(nf4, "layers.3.mlp.down_input")).toEqual([2 * s * f]);
    expect(saved(bf16, "layers.3.mlp.input")).toEqual([]);
    // q's and v's frozen 4-bit bases keep the norm's 16-bit output too (their fp32 adapters keep only
    // their own fp32 copies), in every layer but the first, whose input needs no gradient.
    expect(saved(nf4, "layers.3.attention.input")).toEqual([2 * s * h]);
    expect(saved(bf16, "layers.3.attention.input")).toEqual([]);
    expect(saved(nf4, "layers.0.attention.input")).toEqual([]);
    const activations = (plan: MemoryPlan) => plan.tensors.filter((t) => t.category === "activations").reduce((sum, t) => sum + t.perSampleBytes, 0);
    expect(activations(nf4) - activations(bf16)).toBe(32 * 2 * s * (h + f) + 31 * 2 * s * h);
  });
});

describe("LlamaRMSNorm's fp32 upcast (transformers 5.18 modeling_llama.py lines 62-67)", () => {
  test("in 16 bits a norm keeps an fp32 copy of its input and its normalized 16-bit output, not the input itself", () => {
    const plan = buildPlan(llama, parseSetup({ seq: s, precision: "bf16", attention: "flash" }));
    const saved = (name: string) => plan.tensors.filter((t) => t.name === name && t.category === "activations").map((t) => t.perSampleBytes);
    expect(saved("layers.3.norm1.input_fp32")).toEqual([4 * s * h]);
    expect(saved("layers.3.norm1.normalized")).toEqual([2 * s * h]);
    expect(saved("layers.3.norm1.rstd")).toEqual([4 * s]);
    // The residual stream that fed it is no longer kept for the norm's backward.
    expect(saved("layers.3.norm1.input")).toEqual([]);
    const fp32 = buildPlan(llama, parseSetup({ seq: s, precision: "fp32", attention: "flash" }));
    expect(fp32.tensors.some((t) => t.name === "layers.3.norm1.input_fp32")).toBe(false);
    expect(fp32.tensors.filter((t) => t.name === "layers.3.norm1.normalized" && t.category === "activations").map((t) => t.perSampleBytes)).toEqual([4 * s * h]);
  });
});

// LoRA adapters on a frozen model and quantized weights: PEFT's trainable counts, QLoRA's bits, what stays 16-bit, what is saved.
import { describe, expect, test } from "vitest";
import { buildPlan } from "../../src/plan/buildPlan.js";
import { loraParameterCount, parseLoraTargets } from "../../src/plan/lora.js";
import { bytesByCategory, type MemoryPlan } from "../../src/plan/memoryPlan.js";
import { bitsPerWeight, quantizedMatrixBytes } from "../../src/plan/quantization.js";
import { parseSetup, type RunSetup } from "../../src/plan/setup.js";
import { presetWorkload } from "../../src/workload/presets.js";
import type { TransformerArchitecture } from "../../src/workload/transformer.js";
import { invalidMessage } from "./invalidMessage.js";

const architecture = (name: string): TransformerArchitecture => {
  const w = presetWorkload(name);
  if (w?.kind !== "transformer") throw new Error(`${name} is not a transformer preset`);
  return w.architecture;
};
const plan = (name: string, setup: Partial<RunSetup>): MemoryPlan => buildPlan(presetWorkload(name)!, { mode: "train", precision: "bf16", optimizer: "adamw", ...setup });
const tensor = (p: MemoryPlan, name: string) => p.tensors.find((t) => t.name === name);
/** Whether a tensor is kept for backward (an activation) rather than freed in forward or absent. */
const kept = (p: MemoryPlan, name: string): boolean => tensor(p, name)?.category === "activations";

describe("trainable parameters: what PEFT's print_trainable_parameters() reports", () => {
  test("Llama-2-7B, r = 8 on q_proj and v_proj: trainable params 4,194,304 || all params 6,742,609,920", () => {
    const lora = { rank: 8, targets: parseLoraTargets("q,v") };
    expect(loraParameterCount(architecture("llama-2-7b"), lora)).toBe(4_194_304);
    const p = plan("llama-2-7b", { lora, seq: 512 });
    expect(p.trainableParameterCount).toBe(4_194_304);
    expect(p.parameterCount).toBe(6_742_609_920);
  });

  test("Llama-2-7B, r = 16 on all seven projections (all-linear): 39,976,960", () => {
    expect(loraParameterCount(architecture("llama-2-7b"), { rank: 16, targets: parseLoraTargets("all-linear") })).toBe(39_976_960);
    expect(loraParameterCount(architecture("llama-2-7b"), { rank: 16, targets: parseLoraTargets("q,k,v,o,gate,up,down") })).toBe(39_976_960);
  });

  test("without adapters every parameter trains", () => {
    const p = plan("llama-2-7b", { seq: 512 });
    expect(p.trainableParameterCount).toBe(p.parameterCount);
  });

  test("a fused matrix is one adapter: Phi-3's qkv_proj for q (r × (3072 + 9216)), gate_up_proj for up", () => {
    const phi3 = architecture("phi-3-mini");
    expect(loraParameterCount(phi3, { rank: 8, targets: ["q"] })).toBe(32 * 8 * (3072 + 3 * 3072));
    expect(loraParameterCount(phi3, { rank: 8, targets: ["up"] })).toBe(32 * 8 * (3072 + 2 * 8192));
  });
});

describe("the frozen base model and its adapters", () => {
  test("the base keeps its weights only; the adapters have gradients and optimizer states", () => {
    const lora = { rank: 16, targets: parseLoraTargets("all-linear") };
    const p = plan("llama-2-7b", { precision: "amp", lora, seq: 512 });
    expect(tensor(p, "layers.0.grads")).toBeUndefined();
    expect(tensor(p, "layers.0.optimizer.exp_avg")).toBeUndefined();
    const adapters = 39_976_960 / 32;
    // torch.cuda.amp's layout (src/plan/autocast.ts): fp32 adapters, fp32 gradients and states, no master copy.
    expect(tensor(p, "layers.0.lora.grads")!.fixedBytes).toBe(4 * adapters);
    expect(tensor(p, "layers.0.lora.optimizer.master")).toBeUndefined();
    expect(tensor(p, "layers.0.lora.optimizer.exp_avg_sq")!.fixedBytes).toBe(4 * adapters);
    const b = bytesByCategory(p, 1);
    expect(b.optimizerStates).toBe(8 * 39_976_960);
    // ZeRO's layout (any --zero stage): 16-bit gradients, an fp32 master copy and fp32 states.
    const zero = plan("llama-2-7b", { precision: "amp", lora, seq: 512, zeroStage: 1 });
    expect(tensor(zero, "layers.0.lora.grads")!.fixedBytes).toBe(2 * adapters);
    expect(tensor(zero, "layers.0.lora.optimizer.master")!.fixedBytes).toBe(4 * adapters);
    expect(bytesByCategory(zero, 1).optimizerStates).toBe(12 * 39_976_960);
  });

  test("a frozen linear layer saves no input: with adapters on q and v only, the MLP's inputs are not kept", () => {
    const full = plan("llama-2-7b", { seq: 1024 });
    const qv = plan("llama-2-7b", { seq: 1024, lora: { rank: 8, targets: ["q", "v"] } });
    // The step still computes them (the timeline has them as transients); it does not keep them.
    for (const name of ["layers.0.mlp.input", "layers.0.mlp.down_input"]) {
      expect(kept(full, name)).toBe(true);
      expect(kept(qv, name)).toBe(false);
    }
    expect(tensor(qv, "layers.0.attention.input")!.perSampleBytes).toBe(2 * 1024 * 4096);
    // B of each adapter saves A's r-wide output, in fp32: PEFT keeps a 16-bit model's adapters in fp32 (autocast_adapter_dtype).
    expect(tensor(qv, "layers.0.lora.q.a_output")!.perSampleBytes).toBe(4 * 1024 * 8);
    // Flash attention keeps its output for its own backward; eager attention's output is only the frozen o_proj's input.
    expect(kept(qv, "layers.0.attention.output")).toBe(true);
    expect(kept(plan("llama-2-7b", { seq: 1024, attention: "eager", lora: { rank: 8, targets: ["q", "v"] } }), "layers.0.attention.output")).toBe(false);
    // The frozen LM head keeps no input; the cross-entropy still keeps its fp32 log-probabilities.
    expect(kept(qv, "head.input")).toBe(false);
    expect(kept(qv, "loss.log_softmax")).toBe(true);
  });
});

describe("quantized weights, their constants included", () => {
  test("NF4 with double quantization: 4 + 8/64 + 32/(64·256) = 4.127 bits a weight (QLoRA, Dettmers et al. 2023, §3)", () => {
    expect(bitsPerWeight("nf4", 4096, 4096).toFixed(3)).toBe("4.127");
  });
  test("GPTQ/AWQ int4, group 128: an fp16 scale and a 4-bit zero per group, 4.156 bits", () => {
    expect(bitsPerWeight("int4", 4096, 14336)).toBe(4 + 20 / 128);
  });
  test("LLM.int8(): an fp32 absmax per output row (Dettmers et al. 2022, §3.2)", () => {
    expect(quantizedMatrixBytes("int8", 4096, 11008)).toBe(4096 * 11008 + 4 * 11008);
  });
  test("fp8: a byte a weight and one fp32 scale per matrix", () => {
    expect(quantizedMatrixBytes("fp8", 4096, 4096)).toBe(4096 * 4096 + 4);
  });

  test("Llama-3-8B in nf4: the layers' projections take 4.127 bits, embeddings, norms and the LM head stay 16-bit", () => {
    const p = plan("llama-3-8b", { mode: "infer", weights: "nf4", seq: 16 });
    const bf16 = plan("llama-3-8b", { mode: "infer", seq: 16 });
    expect(tensor(p, "embeddings.weights")!.fixedBytes).toBe(tensor(bf16, "embeddings.weights")!.fixedBytes);
    expect(tensor(p, "head.weights")!.fixedBytes).toBe(tensor(bf16, "head.weights")!.fixedBytes);
    const matrices: [number, number][] = [[4096, 4096], [4096, 1024], [4096, 1024], [4096, 4096], [4096, 14336], [4096, 14336], [14336, 4096]];
    const projections = matrices.reduce((sum, [i, o]) => sum + quantizedMatrixBytes("nf4", i, o), 0);
    expect(tensor(p, "layers.0.weights")!.fixedBytes).toBe(projections + 2 * 2 * 4096);
    const total = bytesByCategory(p, 1).parameters;
    expect(total / 1e9).toBeGreaterThan(5.5); // 6.98e9 projections × 4.127 bits + 1.05e9 × 16 bits ≈ 5.7 GB
    expect(total / 1e9).toBeLessThan(5.8);
  });

  test("the largest matrix is dequantized to 16 bits while its layer runs (bitsandbytes' dequantize_4bit): 2 × 4096 × 14336 bytes", () => {
    expect(tensor(plan("llama-3-8b", { mode: "infer", weights: "nf4", seq: 16 }), "dequantize.largest_matrix")!.fixedBytes).toBe(2 * 4096 * 14336);
    expect(tensor(plan("llama-3-8b", { mode: "infer", weights: "fp8", seq: 16 }), "dequantize.largest_matrix")).toBeUndefined();
  });

  test("a KV cache in fp8 or int8 is half the 16-bit one", () => {
    const kv = (kvCache?: "fp8" | "int8") => bytesByCategory(plan("llama-3-8b", { mode: "infer", seq: 4096, ...(kvCache && { kvCache }) }), 1).kvCache;
    expect(kv("fp8")).toBe(kv() / 2);
    expect(kv("int8")).toBe(kv() / 2);
  });
});

describe("QLoRA: vramfit plan --model llama-3-8b --lora-rank 16 --weights nf4 --seq 2048 --batch 4", () => {
  const p = buildPlan(presetWorkload("llama-3-8b")!, parseSetup({ loraRank: 16, weights: "nf4", seq: 2048 }));
  test("holds frozen nf4 weights, adapter gradients and optimizer states, activations and the dequantization buffer", () => {
    const b = bytesByCategory(p, 4);
    const adapters = p.trainableParameterCount!;
    expect(adapters).toBe(32 * 16 * (4096 + 4096 + (4096 + 1024))); // q (4096 → 4096) and v (4096 → 1024): PEFT's default targets
    expect(b.parameters).toBeLessThan(5.8e9 + 2 * adapters);
    // The adapters' gradients exist from backward to the optimizer step, not at the peak in forward.
    expect(p.tensors.filter((t) => t.category === "gradients").every((t) => t.name.includes(".lora."))).toBe(true);
    expect(p.tensors.some((t) => t.category === "gradients" && t.fixedBytes > 0)).toBe(true);
    expect(b.optimizerStates).toBeGreaterThan(0);
    expect(b.activations).toBeGreaterThan(0);
    expect(tensor(p, "dequantize.largest_matrix")!.fixedBytes).toBe(2 * 4096 * 14336);
    expect(p.description).toMatch(/LoRA r=16 on q,v, weights nf4/);
  });
});

describe("options that do not fit together are one-line errors", () => {
  test.each([
    [{ weights: "nf4" }, /--weights: expected --lora-rank R with it, or --mode infer/],
    [{ mode: "train", kvCache: "fp8" }, /--kv-cache: expected --mode infer/],
    [{ loraTargets: "q,v" }, /--lora-targets: expected --lora-rank R with it/],
    [{ loraRank: 8, loraTargets: "q,x" }, /--lora-targets: expected a comma-separated list of q, k, v, o, gate, up, down, or all-linear/],
    [{ loraRank: 0 }, /--lora-rank/],
    [{ mode: "infer", weights: "int3" }, /--weights: expected one of fp16, bf16, fp8, int8, nf4, int4/],
  ])("%o", (options, expected) => {
    expect(invalidMessage(() => parseSetup(options as Parameters<typeof parseSetup>[0]))).toMatch(expected);
  });
});

// Transformer plans against Korthikanti et al. 2022 (activations) and the KV-cache sizes of Llama 2.
import { describe, expect, test } from "vitest";
import { VramfitError } from "../../src/errors.js";
import { buildPlan } from "../../src/plan/buildPlan.js";
import { tensorParallelApplies } from "../../src/plan/transformerPlan.js";
import { bytesByCategory, liveTensors, peakPhase, type MemoryPlan } from "../../src/plan/memoryPlan.js";
import type { RunSetup } from "../../src/plan/setup.js";
import { gptArchitecture } from "../../src/workload/transformerFamilies.js";
import { listPresets, presetWorkload } from "../../src/workload/presets.js";
import type { TransformerWorkload } from "../../src/workload/workload.js";

// What autograd saves (category `activations`): the step's other tensors under the same prefix are
// transients and gradients (`workspace`), which Korthikanti et al. do not count.
const perSampleOf = (plan: MemoryPlan, prefix: string): number =>
  plan.tensors.filter((t) => t.name.startsWith(prefix) && t.category === "activations").reduce((sum, t) => sum + t.perSampleBytes, 0);

// GPT-3 175B as in Korthikanti et al. 2022, Table 3: s = 2048, h = 12288, a = 96, t = 8;
// 16-bit activations, dropout, unfused attention: the assumptions of §4.
const s = 2048;
const h = 12288;
const a = 96;
const t = 8;
const v = 50257;
const gpt3: TransformerWorkload = { kind: "transformer", name: "gpt3", architecture: gptArchitecture({ hiddenSize: h, layers: 96, heads: a, maxPositions: s }) };
// Megatron's 16-bit activations are fp16's here: without ZeRO or --tp, amp is torch.cuda.amp's
// layout, whose residual stream and norms stay fp32 (src/plan/autocast.ts), which the paper does not model.
const korthikanti: RunSetup = { mode: "train", precision: "fp16", optimizer: "adam", seq: s, attention: "eager" };
const layerBytes = (setup: Partial<RunSetup>): number => perSampleOf(buildPlan(gpt3, { ...korthikanti, ...setup }), "layers.0.");
// Beyond the paper's count: each LayerNorm also saves its fp32 mean and rstd per token
// (native_layer_norm's outputs 1 and 2): 2 norms × 2 × 4s bytes, split under sequence parallelism.
const normStatistics = (ways = 1): number => (2 * 2 * 4 * s) / ways;

describe("activations per layer: Korthikanti et al. 2022, Table 2 (b = 1)", () => {
  const sbh = s * h;
  test("no parallelism: sbh(34 + 5as/h) (§4.1, eq. 1)", () => {
    expect(layerBytes({})).toBe(sbh * (34 + (5 * a * s) / h) + normStatistics());
  });
  test("tensor parallel: sbh(10 + 24/t + 5as/(ht)) (§4.2.1, eq. 2)", () => {
    expect(layerBytes({ tp: t })).toBe(sbh * (10 + 24 / t + (5 * a * s) / (h * t)) + normStatistics());
  });
  test("tensor + sequence parallel: sbh(34/t + 5as/(ht)) (§4.2.2, eq. 3)", () => {
    expect(layerBytes({ tp: t, sequenceParallel: true })).toBe(sbh * (34 / t + (5 * a * s) / (h * t)) + normStatistics(t));
  });
  test("tensor parallel + selective recomputation: sbh(10 + 24/t) (§5)", () => {
    expect(layerBytes({ tp: t, checkpointing: "selective" })).toBe(sbh * (10 + 24 / t) + normStatistics());
  });
  test("tensor + sequence parallel + selective recomputation: sbh(34/t) (§5, eq. 6)", () => {
    expect(layerBytes({ tp: t, sequenceParallel: true, checkpointing: "selective" })).toBe(sbh * (34 / t) + normStatistics(t));
  });
  test("full recomputation: 2sbh per layer (Table 2), and a layer's set again while its backward runs", () => {
    const plan = buildPlan(gpt3, { ...korthikanti, checkpointing: "full" });
    expect(perSampleOf(plan, "layers.0.")).toBe(2 * sbh);
    // Recomputed when backward reaches the layer: everything it saves but its input, which was kept.
    expect(perSampleOf(plan, "recompute.layers.0.")).toBe(layerBytes({}) - 2 * sbh);
    // At the peak of a large batch, at most one layer's recomputed set is live.
    const peak = peakPhase(plan, 1024);
    const live = new Set(liveTensors(plan, peak).filter((x) => x.name.startsWith("recompute.")).map((x) => x.name.split(".").slice(1, 3).join(".")));
    expect(live.size).toBeLessThanOrEqual(1);
  });
  test("the 175B model's per-layer figure: 2048·12288·(34 + 80) bytes ≈ 2.87 GB per sample", () => {
    expect((layerBytes({}) - normStatistics()) / 1e9).toBeCloseTo(2.869, 3);
  });
});

describe("activations outside the layers (Korthikanti et al. 2022, §4.3)", () => {
  test("output: final norm and projection inputs plus fp32 log-probabilities, 4sbh(1 + v/h); embedding dropout mask sbh", () => {
    const plan = buildPlan(gpt3, korthikanti);
    // The paper's 4sbh·v/h of fp32 logits is what log_softmax saves, over all s positions: today's
    // Hugging Face loss (transformers ≥ 4.46) pads and shifts the labels, not the logits; the
    // final norm also saves its statistics.
    const output = perSampleOf(plan, "head.") + perSampleOf(plan, "loss.log_softmax");
    expect(output).toBe(4 * s * h * (1 + v / h) + 2 * 4 * s);
    expect(perSampleOf(plan, "embeddings.")).toBe(s * h);
    // transformers < 4.46 shifted a copy of the logits: s − 1 positions, and the copy itself.
    const legacy = buildPlan(gpt3, { ...korthikanti, hfLoss: "legacy" });
    expect(perSampleOf(legacy, "head.") + perSampleOf(legacy, "loss.log_softmax")).toBe(4 * s * h * (1 + v / h) - 4 * v + 2 * 4 * s);
    // The copy itself is held with the model's outputs until the loss is done (a transient, not saved).
    expect(legacy.tensors.filter((x) => x.name === "loss.shift_logits").map((x) => x.perSampleBytes)).toEqual([2 * (s - 1) * v]);
    expect(plan.tensors.some((x) => x.name === "loss.shift_logits")).toBe(false);
  });
});

describe("attention and feed-forward variants", () => {
  test("flash attention drops the s² term, keeping its fp32 logsumexp (4as bytes)", () => {
    const flash = layerBytes({ attention: "flash" });
    expect(layerBytes({}) - flash).toBe(5 * a * s * s - 4 * a * s);
  });

  test("fp32 stores 4-byte activations; masks stay 1 byte", () => {
    const fp32 = layerBytes({ precision: "fp32" });
    // 16-bit: 32 sbh in tensors + 2 sbh masks + 4as² tensors + as² mask (+ the norms' fp32 statistics).
    expect(fp32).toBe(2 * (32 * s * h + 4 * a * s * s) + 2 * s * h + a * s * s + normStatistics());
  });

  test("grouped-query attention saves K and V at the KV width (Llama-2-70B: 8 of 64 heads)", () => {
    const plan = buildPlan(presetWorkload("llama-2-70b")!, { mode: "train", precision: "bf16", optimizer: "adamw", seq: 4096 });
    const key = plan.tensors.find((x) => x.name === "layers.0.attention.key")!;
    const query = plan.tensors.find((x) => x.name === "layers.0.attention.query")!;
    expect(key.perSampleBytes).toBe(2 * 4096 * 8 * 128);
    expect(query.perSampleBytes).toBe(8 * key.perSampleBytes);
  });

  test("a gated FFN saves gate, activation, up and their product: 4 × s·f (Llama-2-7B)", () => {
    const plan = buildPlan(presetWorkload("llama-2-7b")!, { mode: "train", precision: "bf16", optimizer: "adamw", seq: 4096 });
    expect(perSampleOf(plan, "layers.0.mlp.")).toBe(2 * 4096 * 4096 + 4 * 2 * 4096 * 11008);
  });

  test("an LM's plan has one activation tensor per saved tensor per layer, not one lump", () => {
    const plan = buildPlan(presetWorkload("gpt2")!, { mode: "train", precision: "amp", optimizer: "adamw", attention: "eager" });
    const layerTensors = plan.tensors.filter((x) => x.name.startsWith("layers.11."));
    expect(layerTensors.length).toBeGreaterThanOrEqual(12);
    expect(plan.tensors.filter((x) => x.category === "activations" && x.perSampleBytes > 0).length).toBeGreaterThan(12 * 12);
  });
});

describe("inference: weights + KV cache + workspace", () => {
  const KiB = 1024;
  const infer = (name: string, setup: Partial<RunSetup> = {}) =>
    buildPlan(presetWorkload(name)!, { mode: "infer", precision: "fp16", optimizer: "adamw", seq: 4096, ...setup });

  test("Llama-2-7B fp16: 512 KiB of KV cache per token", () => {
    expect(bytesByCategory(infer("llama-2-7b"), 1).kvCache / 4096).toBe(512 * KiB);
  });

  test("Llama-2-70B with 8 KV heads: 320 KiB per token", () => {
    expect(bytesByCategory(infer("llama-2-70b"), 1).kvCache / 4096).toBe(320 * KiB);
  });

  test("the cache holds the prompt and the generated tokens", () => {
    const plan = infer("llama-2-7b", { seq: 1000, generatedTokens: 3096 });
    expect(bytesByCategory(plan, 1).kvCache).toBe(4096 * 512 * KiB);
  });

  test("no gradients or optimizer states; 16-bit weights; the cache scales with the batch", () => {
    const plan = infer("llama-2-7b");
    const at1 = bytesByCategory(plan, 1);
    const at8 = bytesByCategory(plan, 8);
    expect(at1.gradients).toBe(0);
    expect(at1.optimizerStates).toBe(0);
    expect(at1.parameters).toBe(6_738_415_616 * 2);
    expect(at8.kvCache).toBe(8 * at1.kvCache);
    expect(at1.workspace).toBeGreaterThan(0);
  });

  test("eager attention's workspace holds the a·s² scores; flash does not", () => {
    const eager = bytesByCategory(infer("llama-2-7b", { attention: "eager" }), 1).workspace;
    const flash = bytesByCategory(infer("llama-2-7b", { attention: "flash" }), 1).workspace;
    expect(eager - flash).toBeGreaterThanOrEqual(2 * 2 * 32 * 4096 * 4096 - 2 * 4096 * 11008 * 3);
  });

  test("an encoder (BERT) has no KV cache", () => {
    expect(bytesByCategory(infer("bert-large", { seq: 512 }), 1).kvCache).toBe(0);
  });
});

describe("tensor parallelism", () => {
  test("splits the model states of the split matrices across ranks", () => {
    const one = bytesByCategory(buildPlan(presetWorkload("llama-2-7b")!, { mode: "infer", precision: "fp16", optimizer: "sgd", seq: 16 }), 1);
    const eight = bytesByCategory(buildPlan(presetWorkload("llama-2-7b")!, { mode: "infer", precision: "fp16", optimizer: "sgd", seq: 16, tp: 8 }), 1);
    // Only the RMSNorm weights (65 × 4096) stay replicated.
    expect(eight.parameters).toBe((one.parameters - 65 * 4096 * 2) / 8 + 65 * 4096 * 2);
    expect(eight.kvCache).toBe(one.kvCache / 8);
  });
});

describe("options that do not apply are one-line errors", () => {
  const message = (f: () => unknown): string => {
    try {
      f();
    } catch (error) {
      expect(error).toBeInstanceOf(VramfitError);
      expect((error as VramfitError).code).toBe("ERR_INVALID_ARGUMENT");
      return (error as Error).message;
    }
    throw new Error("expected an error");
  };
  const train: RunSetup = { mode: "train", precision: "amp", optimizer: "adamw" };

  test("--tp must divide the heads", () => {
    expect(message(() => buildPlan(presetWorkload("gpt2")!, { ...train, tp: 5 }))).toBe("--tp: expected a divisor of the 12 attention heads of gpt2, got 5");
  });
  test("--tp must divide the KV heads or be a multiple of them, where it divides the heads", () => {
    // llama-3.2-3b: 24 heads, 8 KV heads. 3 divides the heads but neither divides nor is a multiple of 8.
    expect(message(() => buildPlan(presetWorkload("llama-3.2-3b")!, { ...train, tp: 3 }))).toBe("--tp: expected a divisor or multiple of the 8 KV heads of llama-3.2-3b, got 3");
    expect(message(() => buildPlan(presetWorkload("llama-3.2-3b")!, { ...train, tp: 5 }))).toBe("--tp: expected a divisor of the 24 attention heads of llama-3.2-3b, got 5");
  });
  test("--seq beyond a learned position table", () => {
    expect(message(() => buildPlan(presetWorkload("gpt2")!, { ...train, seq: 2048 }))).toMatch(/^--seq: expected at most 1024 for gpt2/);
  });
  test("--image for a text model, --seq for a vision transformer", () => {
    expect(message(() => buildPlan(presetWorkload("bert-base")!, { ...train, image: 224 }))).toMatch(/^--image: expected no --image for bert-base/);
    expect(message(() => buildPlan(presetWorkload("vit-b16")!, { ...train, seq: 197 }))).toMatch(/^--seq: expected no --seq for vit-b16/);
  });
  test("the default sequence is the model's context length", () => {
    expect(buildPlan(presetWorkload("bert-large")!, train).description).toContain("seq 512");
    expect(buildPlan(presetWorkload("llama-3-8b")!, train).description).toContain("seq 8192");
  });

  test("a tensor-parallel degree applies exactly where the plan builds (advice decides the degrees it offers without building them)", () => {
    let refused = 0;
    for (const preset of listPresets()) {
      const workload = presetWorkload(preset.name)!;
      if (workload.kind !== "transformer") continue;
      for (const tp of [1, 2, 3, 4, 5, 6, 8, 12, 16, 32, 64]) {
        let builds = true;
        try {
          buildPlan(workload, { mode: "infer", precision: "fp16", optimizer: "adamw", tp }); // inference: no step to build
        } catch (error) {
          if (!(error instanceof VramfitError)) throw error;
          builds = false;
        }
        expect(tensorParallelApplies(workload, tp), `${preset.name} --tp ${tp}`).toBe(builds);
        if (!builds) refused += 1;
      }
    }
    expect(refused).toBeGreaterThan(20); // degrees that split no head count, KV-head counts neither divided nor dividing
  });
});

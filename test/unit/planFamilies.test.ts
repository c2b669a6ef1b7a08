// What today's families change in a plan: sliding-window KV caches, Q/K norms, Gemma's extra norms.
import { describe, expect, test } from "vitest";
import { buildPlan } from "../../src/plan/buildPlan.js";
import { bytesByCategory, type MemoryPlan } from "../../src/plan/memoryPlan.js";
import type { RunSetup } from "../../src/plan/setup.js";
import { presetWorkload } from "../../src/workload/presets.js";

const plan = (name: string, setup: Partial<RunSetup>): MemoryPlan =>
  buildPlan(presetWorkload(name)!, { mode: "train", precision: "bf16", optimizer: "adamw", ...setup });
const layerTensor = (p: MemoryPlan, name: string): number => p.tensors.find((t) => t.name === `layers.0.${name}`)?.perSampleBytes ?? 0;

describe("sliding-window layers keep only their window in the KV cache (Hugging Face's HybridCache)", () => {
  test("Gemma 2 9B at 8192 tokens: 21 global layers hold 8192, the 21 local ones 4096 (2 × 8 KV heads × 256 × 2 B per token)", () => {
    const perTokenPerLayer = 2 * 8 * 256 * 2;
    const kv = bytesByCategory(plan("gemma-2-9b", { mode: "infer", seq: 8192 }), 1).kvCache;
    expect(kv).toBe(21 * 8192 * perTokenPerLayer + 21 * 4096 * perTokenPerLayer);
  });

  test("below the window every layer holds every token", () => {
    const kv = bytesByCategory(plan("gemma-2-9b", { mode: "infer", seq: 1000 }), 1).kvCache;
    expect(kv).toBe(42 * 1000 * 2 * 8 * 256 * 2);
  });

  test("Gemma 3 1B: 5 local layers (window 512) for every global one, 26 layers: 4 global", () => {
    const perTokenPerLayer = 2 * 1 * 256 * 2;
    const kv = bytesByCategory(plan("gemma-3-1b", { mode: "infer", seq: 32768 }), 1).kvCache;
    expect(kv).toBe(4 * 32768 * perTokenPerLayer + 22 * 512 * perTokenPerLayer);
  });

  test("Mistral 7B's cache is held in full (Hugging Face's default cache for it)", () => {
    const kv = bytesByCategory(plan("mistral-7b", { mode: "infer", seq: 8192 }), 1).kvCache;
    expect(kv).toBe(32 * 8192 * 2 * 8 * 128 * 2);
  });
});

describe("per-layer activations of the new layer parts", () => {
  const s = 1024;
  test("Qwen3's Q and K norms save their inputs: e·s·a·d and e·s·k·d", () => {
    const p = plan("qwen3-8b", { seq: s });
    expect(layerTensor(p, "attention.query_norm_input")).toBe(2 * s * 32 * 128);
    expect(layerTensor(p, "attention.key_norm_input")).toBe(2 * s * 8 * 128);
    expect(layerTensor(plan("qwen2.5-7b", { seq: s }), "attention.query_norm_input")).toBe(0);
  });

  test("Gemma 2's norms after attention and after the FFN save their inputs, e·s·h each", () => {
    const p = plan("gemma-2-9b", { seq: s });
    expect(layerTensor(p, "norm_post_attention.input")).toBe(2 * s * 3584);
    expect(layerTensor(p, "norm_post_mlp.input")).toBe(2 * s * 3584);
  });

  test("Gemma 2's explicit head_dim (256 × 16 heads = 4096 ≠ hidden 3584) sizes Q and the attention output", () => {
    const p = plan("gemma-2-9b", { seq: s });
    expect(layerTensor(p, "attention.query")).toBe(2 * s * 16 * 256);
    expect(layerTensor(p, "attention.output")).toBe(2 * s * 16 * 256);
  });
});

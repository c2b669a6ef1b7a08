// `vramfit plan` and `models` for the models people train and serve now: QLoRA, quantized serving, SD 2.1, today's families.
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { root, runCli, runJson } from "./runCli.js";

interface PlanJson {
  parameterCount: number;
  trainableParameterCount: number;
  breakdown: Record<string, number>;
  highlights: { part: string; bytes: number }[];
  description: string;
  peakPhase: string;
}

describe("vramfit plan for adapters and quantized weights", () => {
  it("QLoRA on Llama-3-8B: frozen nf4 weights, adapter gradients and states, activations, the dequantization buffer", async () => {
    const args = ["plan", "--model", "llama-3-8b", "--lora-rank", "16", "--weights", "nf4", "--seq", "2048", "--batch", "4"];
    const json = await runJson<PlanJson>([...args, "--json"]);
    expect(json.status).toBe(0);
    expect(json.json.trainableParameterCount).toBe(6_815_744); // r = 16 on q and v (PEFT's default targets)
    expect(json.json.parameterCount).toBe(8_030_261_248 + 6_815_744);
    const parts = Object.fromEntries(json.json.highlights.map((h) => [h.part, h.bytes]));
    expect(parts["frozen weights"]).toBeGreaterThan(5.3 * 2 ** 30);
    expect(parts["frozen weights"]).toBeLessThan(5.4 * 2 ** 30);
    expect(parts["dequantization buffer"]).toBe(2 * 4096 * 14336);
    expect(parts.adapters).toBeGreaterThan(0);
    // The breakdown is at the step's peak, the loss (today's transformers upcast the logits to fp32 once, and
    // log_softmax's backward holds them with its gradient): the adapters' gradients come later.
    expect(json.json.peakPhase).toMatch(/^(forward|backward) loss /);
    expect(json.json.breakdown.gradients).toBe(0);
    const withTimeline = await runJson<PlanJson & { timeline: { phase: string; byCategory: Record<string, number> }[] }>([...args, "--json", "--timeline"]);
    expect(withTimeline.json.timeline.find((p) => p.phase === "optimizer.step")!.byCategory.gradients).toBeGreaterThan(0);
    expect(json.json.breakdown.optimizerStates).toBeGreaterThan(0);
    expect(json.json.breakdown.activations).toBeGreaterThan(0);
    const text = await runCli(args);
    expect(text.stdout).toMatch(/LoRA r=16 on q,v, weights nf4/);
    expect(text.stdout).toMatch(/^frozen weights +5\.3\d GiB/m);
    expect(text.stdout).toMatch(/^adapters +\d/m);
    expect(text.stdout).toMatch(/^dequantization buffer +112 MiB/m);
    expect(text.stdout).toMatch(/assumed .*--lora-targets q,v/);
  });

  it("without adapters trainableParameterCount is parameterCount", async () => {
    const run = await runJson<PlanJson>(["plan", "--model", "qwen2.5-7b", "--seq", "1024", "--json"]);
    expect(run.json.trainableParameterCount).toBe(run.json.parameterCount);
    expect(run.json.parameterCount).toBe(7_615_616_512);
  });

  it("serving Qwen2.5-7B in int4 with an fp8 cache at 32k context", async () => {
    const run = await runJson<PlanJson>(["plan", "--model", "qwen2.5-7b", "--mode", "infer", "--weights", "int4", "--kv-cache", "fp8", "--seq", "32768", "--json"]);
    expect(run.status).toBe(0);
    // 28 layers × 2 × 4 KV heads × 128 × 32768 tokens × 1 byte, each layer's key and value rounded to 2 MiB.
    expect(run.json.breakdown.kvCache).toBe(56 * 16 * 2 ** 20);
  });

  it("refuses what does not apply, in one line", async () => {
    const run = await runCli(["plan", "--model", "resnet50", "--lora-rank", "8"]);
    expect(run.status).toBe(2);
    expect(run.stderr.trim().split("\n")).toHaveLength(1);
    expect(run.stderr).toMatch(/--lora-rank/);
    const training = await runCli(["plan", "--model", "llama-3-8b", "--weights", "int4"]);
    expect(training.status).toBe(2);
    expect(training.stderr).toMatch(/--weights: expected --lora-rank R with it, or --mode infer/);
  });
});

describe("vramfit plan and models for today's presets and configs", () => {
  it("sd2.1-unet: 865,910,724 parameters, with or without the encoders resident", async () => {
    const base = await runJson<PlanJson>(["plan", "--model", "sd2.1-unet", "--image", "512", "--precision", "fp16", "--json"]);
    const resident = await runJson<PlanJson>(["plan", "--model", "sd2.1-unet", "--image", "512", "--precision", "fp16", "--resident-encoders", "--json"]);
    expect(base.json.parameterCount).toBe(865_910_724);
    expect(resident.json.breakdown.parameters! - base.json.breakdown.parameters!).toBeGreaterThanOrEqual(2 * (340_387_840 + 83_653_863));
    expect(resident.json.description).toMatch(/text encoder and VAE resident/);
  });

  it("reads today's config.json files", async () => {
    const mixtral = await runJson<PlanJson>(["plan", "--hf-config", resolve(root, "test/fixtures/hf/mixtral-8x7b-v0.1.json"), "--mode", "infer", "--seq", "512", "--json"]);
    expect(mixtral.json.parameterCount).toBe(46_702_792_704);
    const unknown = await runCli(["plan", "--hf-config", resolve(root, "test/fixtures/spec/affine.json")]);
    expect(unknown.status).toBe(2);
  });

  it("models lists the new presets and Mixtral's active parameters", async () => {
    const run = await runCli(["models"]);
    expect(run.stdout).toMatch(/mixtral-8x7b +transformer +46,702,792,704 \(12,879,925,248 active\)/);
    expect(run.stdout).toMatch(/sd2\.1-unet +unet +865,910,724/);
  });
});

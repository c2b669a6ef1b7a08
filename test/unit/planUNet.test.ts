// Stable Diffusion 2.1's UNet: parameter counts, what autograd saves (against PyTorch), and the plan's options.
import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { buildPlan } from "../../src/plan/buildPlan.js";
import { bytesByCategory, peakPhase, phasesOf, type MemoryPlan } from "../../src/plan/memoryPlan.js";
import type { RunSetup } from "../../src/plan/setup.js";
import { tensorSums } from "../../src/plan/tensorSums.js";
import { clipTextEncoder, vaeParameterCount } from "../../src/plan/unetEncoders.js";
import { parameterCount } from "../../src/workload/parameterCount.js";
import { presetWorkload } from "../../src/workload/presets.js";
import { transformerParameterCount } from "../../src/workload/transformer.js";
import { sd21UNet, traceUNet } from "../../src/workload/unet.js";
import { invalidMessage } from "./invalidMessage.js";

const unet = presetWorkload("sd2.1-unet")!;
const plan = (setup: Partial<RunSetup>): MemoryPlan => buildPlan(unet, { mode: "train", precision: "fp32", optimizer: "adamw", ...setup });
const activations = (p: MemoryPlan): number => tensorSums(p.tensors).activations.perSampleBytes;

describe("parameter counts", () => {
  test("the UNet: 865,910,724 (diffusers' UNet2DConditionModel with stabilityai/stable-diffusion-2-1's unet/config.json)", () => {
    expect(parameterCount(unet)).toBe(865_910_724);
  });
  test("the frozen models beside it: the text encoder 340,387,840, the VAE 83,653,863 (their config.json shapes)", () => {
    expect(transformerParameterCount(clipTextEncoder())).toBe(340_387_840);
    expect(vaeParameterCount()).toBe(83_653_863);
  });
});

describe("saved activations against PyTorch (scripts/reference/measure-activations.py --unet, diffusers' modules rebuilt in plain torch)", () => {
  const fixture = new URL("../fixtures/torch-saved-activations-unet.json", import.meta.url);
  test("per sample at 512² (64² latents), fp32, eager attention: within 5% of the storages autograd saved", () => {
    const measured = JSON.parse(readFileSync(fixture, "utf8")) as { models: { latent: number; parameterCount: number; perSampleBytes: number }[] };
    const reference = measured.models[0]!;
    expect(reference.latent).toBe(64);
    expect(reference.parameterCount).toBe(865_910_724);
    const modelled = activations(plan({ image: 512, attention: "eager" }));
    expect(Math.abs(modelled / reference.perSampleBytes - 1)).toBeLessThanOrEqual(0.05);
  });

  test("the trace at 8² and 32² latents equals what the same measurement gave there (38,568,344 and 607,021,184 bytes per sample)", () => {
    // /usr/bin/python3 scripts/reference/measure-activations.py --unet --latent 8 (batch 1 less its 432 batch-independent bytes) and --latent 32.
    const bytes = (latent: number) => traceUNet(sd21UNet(), latent, "eager").saved.reduce((sum, s) => sum + (s.kind === "cast" ? 0 : 4 * s.elements), 0);
    expect(bytes(8)).toBe(38_568_344);
    expect(bytes(32)).toBe(607_021_184);
  });
});

describe("the plan", () => {
  test("trains at 768² (its 96² sample size) unless --image says otherwise", () => {
    expect(plan({}).description).toMatch(/image 768.*96² latents/);
    expect(plan({ image: 512 }).description).toMatch(/64² latents/);
  });

  test("flash attention (SDPA) keeps no heads × tokens² softmax: far less at 768² than eager", () => {
    const eager = activations(plan({ attention: "eager" }));
    const flash = activations(plan({ attention: "flash" }));
    // The five 96²-latent self-attentions alone hold 5 heads × 9216² fp32 scores each.
    expect(eager - flash).toBeGreaterThan(5 * 5 * 9216 ** 2 * 4);
  });

  test("16-bit activations are half the fp32 ones, except upcast attention's fp32 query, key and softmax and its 16-bit probabilities", () => {
    const fp32 = activations(plan({ precision: "fp32", attention: "flash", image: 512 }));
    const fp16 = activations(plan({ precision: "fp16", attention: "flash", image: 512 }));
    expect(fp16 / fp32).toBeGreaterThan(0.5);
    expect(fp16 / fp32).toBeLessThan(0.52);
    const eagerFp16 = plan({ precision: "fp16", attention: "eager", image: 512 });
    const probs = eagerFp16.tensors.find((t) => t.name === "down_blocks.0.attentions.0.transformer_blocks.0.attn1.probs")!;
    const softmax = eagerFp16.tensors.find((t) => t.name === "down_blocks.0.attentions.0.transformer_blocks.0.attn1.softmax")!;
    expect(softmax.perSampleBytes).toBe(4 * 5 * 4096 ** 2);
    expect(probs.perSampleBytes).toBe(2 * 5 * 4096 ** 2);
  });

  test("--resident-encoders adds the frozen text encoder and VAE in the weights' dtype, without gradients or states", () => {
    const without = bytesByCategory(plan({ precision: "amp" }), 1);
    const withEncoders = bytesByCategory(plan({ precision: "amp", residentEncoders: true }), 1);
    expect(withEncoders.parameters - without.parameters).toBe(2 * (340_387_840 + 83_653_863));
    expect(withEncoders.gradients).toBe(without.gradients);
    expect(withEncoders.optimizerStates).toBe(without.optimizerStates);
  });

  test("the step is a timeline: peak in backward, gradients from their block's backward on", () => {
    const p = plan({ precision: "amp" });
    const phases = phasesOf(p);
    expect(phases[0]).toBe("forward conv_in");
    expect(phases).toContain("backward mid_block");
    expect(phases[peakPhase(p, 4)]).toMatch(/^(forward loss|backward )/);
    const grads = p.tensors.find((t) => t.name === "up_blocks.3.grads")!;
    expect(phases[grads.firstPhase!]).toBe("backward up_blocks.3");
    expect(phases[grads.lastPhase!]).toBe("optimizer.step");
  });

  test("--checkpointing keeps each resnet's and transformer's input and recomputes one", () => {
    const full = activations(plan({ checkpointing: "full", image: 512 }));
    const none = activations(plan({ image: 512 }));
    expect(full).toBeLessThan(none / 3);
    expect(plan({ checkpointing: "full" }).tensors.some((t) => t.name.startsWith("recompute."))).toBe(true);
  });

  test("inference: weights and one forward pass's live tensors", () => {
    const p = buildPlan(unet, { mode: "infer", precision: "fp16", optimizer: "adamw", image: 512 });
    const b = bytesByCategory(p, 1);
    expect(b.parameters).toBe(2 * 865_910_724);
    expect(b.gradients + b.optimizerStates + b.activations).toBe(0);
    expect(b.workspace).toBeGreaterThan(0);
  });

  test("options that do not apply are one-line errors", () => {
    expect(invalidMessage(() => plan({ image: 500 }))).toMatch(/--image.*multiple of 8/);
    expect(invalidMessage(() => plan({ seq: 77 }))).toMatch(/--seq/);
    expect(invalidMessage(() => plan({ checkpointing: "selective" }))).toMatch(/none or full/);
  });
});

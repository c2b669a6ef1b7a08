// CNN (and ViT) activations against what PyTorch's autograd saves, measured by scripts/reference/measure-activations.py.
import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { VramfitError } from "../../src/errors.js";
import { buildPlan } from "../../src/plan/buildPlan.js";
import { bytesByCategory, planTotals, type MemoryPlan } from "../../src/plan/memoryPlan.js";
import type { RunSetup } from "../../src/plan/setup.js";
import { tensorSums } from "../../src/plan/tensorSums.js";
import { traceCnn, type CnnNetwork } from "../../src/workload/cnn.js";
import { presetWorkload } from "../../src/workload/presets.js";

interface MeasuredModel {
  model: string;
  image: number;
  parameterCount: number;
  perSampleBytes: number;
  fixedBytes: number;
}
// Made by `/usr/bin/python3 scripts/reference/measure-activations.py` (torch 1.13, torchvision 0.14, CPU, fp32,
// train mode, batch 1 and 2): the fixture records its command and versions.
const fixture = JSON.parse(readFileSync(new URL("../fixtures/torch-saved-activations.json", import.meta.url), "utf8")) as {
  torch: string;
  command: string;
  models: MeasuredModel[];
};

const PRESET_OF: Record<string, string> = { resnet50: "resnet50", resnet152: "resnet152", vgg16: "vgg16", vit_b_16: "vit-b16" };
// torch 1.13's nn.MultiheadAttention materializes the attention matrix: eager attention.
const FP32_TRAIN: RunSetup = { mode: "train", precision: "fp32", optimizer: "sgd", attention: "eager" };

// What autograd saves per sample: every activation of the step, as `plan --json`'s tensorSums counts it.
const activationsPerSample = (plan: MemoryPlan): number => tensorSums(plan.tensors).activations.perSampleBytes;

describe("per-sample activations within 10% of what PyTorch autograd saves (fixture)", () => {
  test("the fixture covers the four models of issue 3 and says how it was made", () => {
    expect(fixture.models.map((m) => m.model).sort()).toEqual(["resnet152", "resnet50", "vgg16", "vit_b_16"]);
    expect(fixture.command).toContain("scripts/reference/measure-activations.py");
    expect(fixture.torch).toMatch(/^\d+\.\d+/);
  });

  test.each(fixture.models.map((m) => [m.model, m] as const))("%s", (_, measured) => {
    const workload = presetWorkload(PRESET_OF[measured.model]!)!;
    const plan = buildPlan(workload, { ...FP32_TRAIN, image: measured.image });
    expect(plan.parameterCount).toBe(measured.parameterCount);
    const modelled = activationsPerSample(plan);
    expect(Math.abs(modelled / measured.perSampleBytes - 1)).toBeLessThanOrEqual(0.1);
  });
});

describe("CNN plans", () => {
  const resnet50 = presetWorkload("resnet50")!;

  test("activations scale with the image area (--image)", () => {
    const at224 = activationsPerSample(buildPlan(resnet50, { ...FP32_TRAIN, image: 224 }));
    const at448 = activationsPerSample(buildPlan(resnet50, { ...FP32_TRAIN, image: 448 }));
    expect(at448 / at224).toBeGreaterThan(3.95);
    expect(at448 / at224).toBeLessThan(4.0);
  });

  test("16-bit activations halve everything but the int64 max-pool indices; autocast keeps the fp32 images too", () => {
    const fp32 = buildPlan(resnet50, FP32_TRAIN);
    const fp16 = buildPlan(resnet50, { ...FP32_TRAIN, precision: "fp16" });
    const amp = buildPlan(resnet50, { ...FP32_TRAIN, precision: "amp" });
    const indices = fp32.tensors.find((t) => t.name === "maxpool.indices")!.perSampleBytes;
    expect(indices).toBe(64 * 56 * 56 * 8);
    expect(fp16.tensors.find((t) => t.name === "maxpool.indices")!.perSampleBytes).toBe(indices);
    const loss = 1000 * 4;
    const labels = 8; // the batch's int64 labels
    const halved = (activationsPerSample(fp32) - indices - loss - labels) / 2 + indices + loss + labels;
    expect(activationsPerSample(fp16)).toBe(halved);
    // Under amp the loader's fp32 images stay live beside the 16-bit copy conv1 saves (measured
    // against CPU autocast steps: test/unit/stepPeak.test.ts, docs/memory-model.md "amp, measured").
    expect(amp.tensors.find((t) => t.name === "inputs.images")!.perSampleBytes).toBe(3 * 224 * 224 * 4);
    expect(activationsPerSample(amp)).toBe(halved + 3 * 224 * 224 * 4);
  });

  test("a vision transformer under amp keeps the fp32 pixels too, and saves their 16-bit cast for the patch embedding", () => {
    const vit = presetWorkload("vit-b16")!;
    const fp16 = buildPlan(vit, { ...FP32_TRAIN, precision: "fp16" });
    const amp = buildPlan(vit, { ...FP32_TRAIN, precision: "amp" });
    const pixels = 3 * 224 * 224;
    expect(fp16.tensors.find((t) => t.name === "inputs.pixel_values")!.perSampleBytes).toBe(2 * pixels);
    expect(amp.tensors.find((t) => t.name === "inputs.pixel_values")!.perSampleBytes).toBe(4 * pixels);
    expect(amp.tensors.find((t) => t.name === "inputs.pixel_values_16bit")!.perSampleBytes).toBe(2 * pixels);
  });

  test("full checkpointing keeps block inputs and one recomputed block: far less than all activations at the peak", () => {
    const resnet152 = presetWorkload("resnet152")!;
    const all = planTotals(buildPlan(resnet152, FP32_TRAIN)).perSampleBytes;
    const checkpointed = buildPlan(resnet152, { ...FP32_TRAIN, checkpointing: "full" });
    // 50 block inputs (≈ 52 MB in fp32) plus one block recomputed, against ≈ 177 MB saved (and
    // backward's gradients on both sides).
    expect(planTotals(checkpointed).perSampleBytes).toBeLessThan(0.45 * all);
    // layer3.0's input (layer2's output, relu'd in place) is kept from forward to layer3.0's backward.
    const input = checkpointed.tensors.find((t) => t.name === "layer2.7.relu.output")!;
    expect(input.perSampleBytes).toBe(512 * 28 * 28 * 4);
    expect(checkpointed.phases![input.lastPhase!]).toMatch(/^backward layer3\.0 /);
    expect(checkpointed.tensors.some((t) => t.name.startsWith("recompute.layer"))).toBe(true);
  });

  test("one activation tensor per saved storage, named after the op that saved it", () => {
    const names = buildPlan(resnet50, FP32_TRAIN).tensors.map((t) => t.name);
    expect(names).toContain("conv1.input");
    expect(names).toContain("bn1.input");
    expect(names).toContain("layer1.0.bn3.input");
    expect(names).toContain("layer4.2.relu.output");
    expect(names).toContain("fc.input");
    // The block input is saved by the block's conv1 and its downsample conv: counted once.
    expect(names.filter((n) => n.endsWith("downsample.0.input"))).toEqual([]);
  });

  test("inference: weights and the forward pass's peak, no gradients", () => {
    const plan = buildPlan(resnet50, { ...FP32_TRAIN, mode: "infer" });
    const c = bytesByCategory(plan, 1);
    expect(c.parameters).toBe(25_557_032 * 4);
    expect(c.gradients + c.optimizerStates + c.activations).toBe(0);
    expect(c.workspace).toBeGreaterThan(0);
  });

  test("momentum SGD in fp32: 4 + 4 + 4 bytes per parameter", () => {
    const c = bytesByCategory(buildPlan(presetWorkload("resnet152")!, { ...FP32_TRAIN, optimizer: "momentum" }), 0);
    expect(c.parameters + c.gradients + c.optimizerStates).toBe(60_192_808 * 12);
  });

  test("--seq, --tp and selective recomputation do not apply to a CNN", () => {
    for (const setup of [{ seq: 512 }, { tp: 2 }, { checkpointing: "selective" as const }]) {
      expect(() => buildPlan(resnet50, { ...FP32_TRAIN, ...setup })).toThrow(VramfitError);
    }
  });
});

describe("traceCnn", () => {
  // A hand-checkable network: conv → bn → relu → residual(conv) → maxpool → flatten → linear.
  const tiny: CnnNetwork = {
    channels: 3,
    imageSize: 8,
    classes: 10,
    layers: [
      { type: "conv", name: "c1", out: 4, kernel: 3, padding: 1, bias: false },
      { type: "batchnorm", name: "bn" },
      { type: "relu", name: "r", inplace: true },
      { type: "residual", name: "res", body: [{ type: "conv", name: "res.c", out: 4, kernel: 3, padding: 1 }] },
      { type: "maxpool", name: "mp", kernel: 2 },
      { type: "flatten" },
      { type: "linear", name: "fc", out: 10 },
    ],
  };

  test("parameters, saved storages and the inference peak, by hand", () => {
    const trace = traceCnn(tiny, 8);
    // c1 4·3·9 = 108; bn 8; res.c 4·4·9 + 4 = 148; fc 64·10 + 10 = 650.
    expect(trace.parameterCount).toBe(108 + 8 + 148 + 650);
    const saved = Object.fromEntries(trace.saved.map((s) => [s.name, s.elements]));
    expect(saved).toEqual({
      "c1.input": 3 * 64, // the image
      "bn.input": 4 * 64, // c1's output
      "r.output": 4 * 64, // bn's output, relu'd in place; also res.c's input (saved once)
      "res.relu.output": 4 * 64, // res.c's output += x, relu'd in place; also mp's input
      "mp.indices": 4 * 16,
      "fc.input": 4 * 16, // mp's output, flattened (a view)
      "loss.log_softmax": 10,
    });
    // Peak: bn's input and output (256 + 256), matched by the residual's held x plus res.c's output.
    expect(trace.inferencePeakElements).toBe(2 * 256);
  });

  test("a linear layer fixes the image size", () => {
    expect(() => buildPlan({ kind: "cnn", name: "tiny", network: tiny }, { ...FP32_TRAIN, image: 16 })).toThrow(/--image: expected 8 for tiny/);
  });
});

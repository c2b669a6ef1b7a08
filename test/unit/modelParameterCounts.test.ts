// Parameter counts computed from the architectures against the published counts.
import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { readHfConfig } from "../../src/workload/hfConfig.js";
import { parameterCount } from "../../src/workload/parameterCount.js";
import { listPresets, presetWorkload } from "../../src/workload/presets.js";

/** |model / published − 1| ≤ tolerance. */
function expectWithin(actual: number, published: number, tolerance: number): void {
  expect(Math.abs(actual / published - 1)).toBeLessThanOrEqual(tolerance);
}

const count = (name: string): number => parameterCount(presetWorkload(name)!);

// Each published count with its source. Tolerance 0.1% (issue 3) unless said otherwise.
const PUBLISHED: [preset: string, parameters: number, source: string][] = [
  // torchvision model docs, weights meta "num_params" (torchvision 0.14: ResNet18_Weights.IMAGENET1K_V1 etc.)
  ["resnet18", 11_689_512, "torchvision ResNet18_Weights.IMAGENET1K_V1.meta.num_params"],
  ["resnet34", 21_797_672, "torchvision ResNet34_Weights.IMAGENET1K_V1.meta.num_params"],
  ["resnet50", 25_557_032, "torchvision ResNet50_Weights.IMAGENET1K_V1.meta.num_params"],
  ["resnet101", 44_549_160, "torchvision ResNet101_Weights.IMAGENET1K_V1.meta.num_params"],
  ["resnet152", 60_192_808, "torchvision ResNet152_Weights.IMAGENET1K_V1.meta.num_params"],
  ["vgg16", 138_357_544, "torchvision VGG16_Weights.IMAGENET1K_V1.meta.num_params"],
  ["vit-b16", 86_567_656, "torchvision ViT_B_16_Weights.IMAGENET1K_V1.meta.num_params"],
  // Hugging Face BertModel (with pooler).num_parameters(); Devlin et al. 2019 §3 round these to 110M / 340M.
  ["bert-base", 109_482_240, "HF bert-base-uncased, BertModel.num_parameters()"],
  ["bert-large", 335_141_888, "HF bert-large-uncased, BertModel.num_parameters() (issue 3)"],
  // Hugging Face GPT-2 model cards / GPT2LMHeadModel.num_parameters() (tied head); the paper's Table 2 rounds differently.
  ["gpt2", 124_439_808, "HF gpt2, num_parameters() (issue 3)"],
  ["gpt2-medium", 354_823_168, "HF gpt2-medium, num_parameters()"],
  ["gpt2-large", 774_030_080, "HF gpt2-large, num_parameters()"],
  ["gpt2-xl", 1_557_611_200, "HF gpt2-xl, num_parameters()"],
  // Hugging Face model cards / LlamaForCausalLM.num_parameters().
  ["llama-2-7b", 6_738_415_616, "HF meta-llama/Llama-2-7b-hf, num_parameters() (issue 3)"],
  ["llama-2-13b", 13_015_864_320, "HF meta-llama/Llama-2-13b-hf, num_parameters()"],
  ["llama-2-70b", 68_976_648_192, "HF meta-llama/Llama-2-70b-hf, num_parameters()"],
  ["llama-3-8b", 8_030_261_248, "HF meta-llama/Meta-Llama-3-8B, num_parameters() (model card: 8.03B)"],
  ["mistral-7b", 7_241_732_096, "HF mistralai/Mistral-7B-v0.1, num_parameters() (model card: 7.24B)"],
];

describe("preset parameter counts equal the published counts within 0.1%", () => {
  test.each(PUBLISHED)("%s: %d (%s)", (preset, published) => {
    expectWithin(count(preset), published, 0.001);
  });

  test("GPT-3 175B: Brown et al. 2020, Table 2.1 gives 175.0B (rounded; the tied-embedding count is 174.6B)", () => {
    // The paper does not publish an exact count; 0.5% covers its rounding and the unknown details
    // (tied or untied output layer, bias terms) that move the count by ~0.4%.
    expectWithin(count("gpt3-175b"), 175.0e9, 0.005);
  });
});

describe("listPresets", () => {
  test("lists every preset of issue 3 with its computed count", () => {
    const presets = listPresets();
    const names = presets.map((p) => p.name);
    for (const [preset] of PUBLISHED) expect(names).toContain(preset);
    expect(names).toContain("gpt3-175b");
    const resnet50 = presets.find((p) => p.name === "resnet50")!;
    expect(resnet50).toMatchObject({ kind: "cnn", parameterCount: 25_557_032 });
    expect(presets.find((p) => p.name === "llama-2-70b")).toMatchObject({ kind: "transformer", parameterCount: 68_976_648_192 });
  });
});

describe("Hugging Face configs give the same counts as the presets", () => {
  const fixture = (file: string) => readHfConfig(file, JSON.parse(readFileSync(new URL(`../fixtures/hf/${file}`, import.meta.url), "utf8")));
  test.each([
    ["bert-large-uncased.json", 335_141_888],
    ["gpt2.json", 124_439_808],
    ["llama-2-7b-hf.json", 6_738_415_616],
    ["llama-2-70b-hf.json", 68_976_648_192],
    ["llama-3-8b.json", 8_030_261_248],
    ["mistral-7b-v0.1.json", 7_241_732_096],
    ["vit-base-patch16-224.json", 86_567_656], // HF google/vit-base-patch16-224 (ViTForImageClassification)
  ])("%s → %d", (file, published) => {
    expectWithin(parameterCount(fixture(file)), published, 0.001);
  });
});

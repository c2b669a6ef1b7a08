// Workload inputs: presets, Hugging Face configs, --spec files and raw affine options, with their errors.
import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { VramfitError } from "../../src/errors.js";
import { buildPlan } from "../../src/plan/buildPlan.js";
import { readHfConfig } from "../../src/workload/hfConfig.js";
import { parameterCount } from "../../src/workload/parameterCount.js";
import { presetWorkload } from "../../src/workload/presets.js";
import { resolveWorkload } from "../../src/workload/resolveWorkload.js";
import { readSpec } from "../../src/workload/spec.js";

const load = (path: string): unknown => JSON.parse(readFileSync(new URL(`../fixtures/${path}`, import.meta.url), "utf8"));

/** The one-line message of the ERR_INVALID_ARGUMENT that `f` throws. */
function errorOf(f: () => unknown): string {
  try {
    f();
  } catch (error) {
    expect(error).toBeInstanceOf(VramfitError);
    expect((error as VramfitError).code).toBe("ERR_INVALID_ARGUMENT");
    const message = (error as Error).message;
    expect(message).not.toContain("\n");
    return message;
  }
  throw new Error("expected an error");
}

describe("Hugging Face config.json", () => {
  test("Llama-2-70B: grouped-query attention and the gated FFN are read", () => {
    const workload = readHfConfig("llama-2-70b-hf.json", load("hf/llama-2-70b-hf.json"));
    expect(workload.name).toBe("meta-llama/Llama-2-70b-hf");
    expect(workload.architecture).toMatchObject({ heads: 64, kvHeads: 8, headDim: 128, ffn: "gated", ffnSize: 28672, tieEmbeddings: false, maxPositions: 4096 });
  });

  test("GPT-2's own names (n_embd, n_layer, n_head, n_positions) and its default n_inner = 4·n_embd", () => {
    const workload = readHfConfig("gpt2.json", load("hf/gpt2.json"));
    expect(workload.architecture).toMatchObject({ hiddenSize: 768, layers: 12, heads: 12, ffnSize: 3072, maxPositions: 1024, tieEmbeddings: true, dropout: 0.1 });
  });

  test("the config's model gives the preset's plan (BERT-large)", () => {
    const fromConfig = readHfConfig("bert-large-uncased.json", load("hf/bert-large-uncased.json"));
    const setup = { mode: "train", precision: "amp", optimizer: "adamw", seq: 512 } as const;
    expect(buildPlan(fromConfig, setup).tensors).toEqual(buildPlan(presetWorkload("bert-large")!, setup).tensors);
  });

  test("ViT: image and patch size set the tokens; id2label sets the classifier", () => {
    const workload = readHfConfig("vit.json", load("hf/vit-base-patch16-224.json"));
    expect(workload.architecture.vision).toEqual({ imageSize: 224, patchSize: 16, channels: 3 });
    expect(workload.architecture).toMatchObject({ head: "classifier", classes: 1000 });
  });

  test("untied embeddings add an LM head; tied ones do not", () => {
    const json = load("hf/gpt2.json") as Record<string, unknown>;
    const untied = readHfConfig("config.json", { ...json, tie_word_embeddings: false });
    expect(parameterCount(untied) - 124_439_808).toBe(50257 * 768);
  });

  test.each([
    [{ model_type: "t5" }, 'config.json: model_type: expected one of bert, gpt2, llama, mistral, qwen2, qwen3, gemma2, gemma3_text, phi3, mixtral, vit, got "t5"'],
    [{ hidden_size: 4096 }, "config.json: model_type: expected one of bert, gpt2, llama, mistral, qwen2, qwen3, gemma2, gemma3_text, phi3, mixtral, vit, got undefined"],
    [
      { model_type: "llama", hidden_size: 4096, num_hidden_layers: 32, num_attention_heads: 32, num_key_value_heads: 5, intermediate_size: 11008, vocab_size: 32000, max_position_embeddings: 4096 },
      "config.json: num_key_value_heads: expected a divisor of num_attention_heads (32), got 5",
    ],
    [{ model_type: "gpt2", n_layer: 12, n_head: 12, vocab_size: 50257, n_positions: 1024 }, "config.json: hidden_size or n_embd: expected a whole number from 1 to 16,777,216 (vramfit's limit on a dimension), got undefined"],
    [{ model_type: "bert", hidden_size: 768.5, num_hidden_layers: 12, num_attention_heads: 12, vocab_size: 30522 }, "config.json: hidden_size: expected a whole number from 1 to 16,777,216 (vramfit's limit on a dimension), got 768.5"],
    [{ model_type: "bert", hidden_size: 768, num_hidden_layers: "12", num_attention_heads: 12, vocab_size: 30522 }, 'config.json: num_hidden_layers: expected a whole number from 1 to 16,777,216 (vramfit\'s limit on a dimension), got "12"'],
    [{ model_type: "bert", hidden_size: 768, num_hidden_layers: 12, num_attention_heads: 10, vocab_size: 30522 }, "config.json: num_attention_heads: expected a divisor of the hidden size 768 (or a head_dim field), got 10"],
    [[1, 2], 'config.json: expected a JSON object, got "[1,2]"'],
  ])("bad config %#: %s", (json, expected) => {
    expect(errorOf(() => readHfConfig("config.json", json))).toBe(expected);
  });
});

describe("--spec files", () => {
  test("a custom CNN with a residual block: parameters by hand", () => {
    const workload = readSpec("small-resnet.json", load("spec/small-resnet.json"));
    // stem 16·3·9 + bn 32; block: 32·16·9 + 64 + 32·32·9 + 64 + shortcut 32·16 + 64; fc 32·10 + 10.
    expect(parameterCount(workload)).toBe(432 + 32 + 4608 + 64 + 9216 + 64 + 512 + 64 + 330);
    const plan = buildPlan(workload, { mode: "train", precision: "fp32", optimizer: "sgd" });
    expect(plan.tensors.find((t) => t.name === "3.body.0.input")).toBeUndefined(); // the stem's relu saved it first
    expect(plan.tensors.find((t) => t.name === "6.mask")?.perSampleBytes).toBe(32);
  });

  test("a custom transformer: GQA and the gated FFN", () => {
    const workload = readSpec("tiny-llama.json", load("spec/tiny-llama.json"));
    const h = 512;
    const layer = 2 * h * h + 2 * h * 128 + 3 * h * 1408 + 2 * h;
    expect(parameterCount(workload)).toBe(32000 * h + 8 * layer + h);
  });

  test("an affine spec takes sizes as strings or numbers", () => {
    expect(readSpec("affine.json", load("spec/affine.json"))).toEqual({ kind: "affine", parameterCount: 7e9, perSampleBytes: 1.5 * 2 ** 30, fixedBytes: 2 ** 29 });
  });

  test.each([
    [{ kind: "rnn" }, 'spec.json: kind: expected one of transformer, cnn, affine, got "rnn"'],
    [{ kind: "cnn", layers: [{ type: "conv", out: 0, kernel: 3 }] }, "spec.json: layers[0].out: expected a whole number from 1 to 16,777,216 (vramfit's limit on a dimension), got 0"],
    [{ kind: "cnn", layers: [{ type: "conv", out: 8, kernal: 3 }] }, expect.stringMatching(/^spec\.json: layers\[0\]\.kernal: expected no such field \(known: type, name, out, kernel/)],
    [{ kind: "cnn", layers: [{ type: "residual", body: [{ type: "pool" }] }] }, expect.stringMatching(/^spec\.json: layers\[0\]\.body\[0\]\.type: expected one of conv, batchnorm/)],
    [{ kind: "cnn", layers: [{ type: "linear", out: 10 }] }, expect.stringMatching(/^spec\.json: layer 0: expected a layer that accepts the 224² input \(it needs a flat input/)],
    [{ kind: "cnn", layers: [] }, 'spec.json: layers: expected a non-empty array of objects, got "[]"'],
    [{ kind: "transformer", hiddenSize: 512, layers: 2, heads: 8, vocabSize: 100, maxPositions: 64, dropout: 1.5 }, "spec.json: dropout: expected a probability in [0, 1), got 1.5"],
    [{ kind: "transformer", hiddenSize: 512, layers: 2, heads: 8, vocabSize: 100 }, "spec.json: maxPositions: expected a whole number from 1 to 16,777,216 (vramfit's limit on a dimension), got undefined"],
    [{ kind: "affine", parameters: 7e9, perSampleBytes: "lots" }, expect.stringMatching(/^spec\.json: perSampleBytes: expected a size/)],
  ])("bad spec %#", (json, expected) => {
    expect(errorOf(() => readSpec("spec.json", json))).toEqual(expected);
  });
});

describe("resolveWorkload", () => {
  test("a preset by name", () => {
    expect(resolveWorkload({ model: "resnet50" })).toMatchObject({ kind: "cnn", name: "resnet50" });
  });

  test("an unknown preset suggests the nearest name", () => {
    expect(errorOf(() => resolveWorkload({ model: "resnet-50" }))).toBe('--model: expected a preset (vramfit models lists them), got "resnet-50"; did you mean resnet50?');
  });

  test("a raw affine workload from --params 7e9 --per-sample 1GiB", () => {
    expect(resolveWorkload({ params: "7e9", perSample: "1GiB" })).toEqual({ kind: "affine", parameterCount: 7e9, perSampleBytes: 2 ** 30, fixedBytes: 0 });
    expect(resolveWorkload({ params: 1000, perSample: 10, fixed: 5 })).toEqual({ kind: "affine", parameterCount: 1000, perSampleBytes: 10, fixedBytes: 5 });
  });

  test("files are read through their readers", () => {
    expect(resolveWorkload({ hfConfig: { path: "gpt2.json", json: load("hf/gpt2.json") } })).toMatchObject({ kind: "transformer" });
    expect(resolveWorkload({ spec: { path: "affine.json", json: load("spec/affine.json") } })).toMatchObject({ kind: "affine" });
  });

  test.each([
    [{}, /^workload: expected exactly one of --model NAME, --hf-config FILE, --spec FILE, or --params N/],
    [{ model: "gpt2", params: "1e9", perSample: "1GiB" }, /^--params: expected exactly one of/],
    [{ model: "gpt2", spec: { path: "s.json", json: {} } }, /^--spec: expected exactly one of/],
    [{ perSample: "1GiB" }, /^--per-sample: expected --params N with --per-sample SIZE/],
    [{ params: "7e9" }, /^--per-sample: expected a size above 0 with --params/],
    [{ params: "seven", perSample: "1GiB" }, /^--params: expected a whole number from 1 to 1e14 \(vramfit's limit on a model's parameters\), got "seven"/],
    [{ params: "7e9", perSample: "0" }, /^--per-sample: expected a size above 0/],
    [{ params: "7e9", perSample: "1GiB", fixed: "-1" }, /^--fixed: expected a size/],
  ])("bad input %#", (input, expected) => {
    expect(errorOf(() => resolveWorkload(input))).toMatch(expected);
  });
});

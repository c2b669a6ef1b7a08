// The input limits (src/workload/limits.ts, docs/reliability.md): each breach is one
// ERR_INVALID_ARGUMENT line naming the field and the limit, found before anything large is built,
// and no message echoes more than a short excerpt of the value.
import { describe, expect, it } from "vitest";
import { VramfitError, invalidArgument } from "../../src/errors.js";
import { buildPlan } from "../../src/plan/buildPlan.js";
import { checkBatchBytes, checkPlanBytes } from "../../src/plan/planLimits.js";
import { parseSetup } from "../../src/plan/setup.js";
import { readHfConfig } from "../../src/workload/hfConfig.js";
import { LIMITS, jsonTextDepth, jsonValueDepth } from "../../src/workload/limits.js";
import { resolveWorkload } from "../../src/workload/resolveWorkload.js";
import { readSpec } from "../../src/workload/spec.js";
import { ciResource } from "../ciResources.js";

// In CI, after the installs made beside the first tests (.ci/run): a bound is a time (a refusal within a second), measured where nothing is installing.
await ciResource("settled");

function messageOf(f: () => unknown): string {
  try {
    f();
  } catch (error) {
    expect(error).toBeInstanceOf(VramfitError);
    expect((error as VramfitError).code).toBe("ERR_INVALID_ARGUMENT");
    const message = (error as Error).message;
    expect(message).not.toContain("\n");
    expect(message.length).toBeLessThan(600);
    return message;
  }
  throw new Error("expected an error");
}

const TRANSFORMER = { kind: "transformer", hiddenSize: 64, layers: 2, heads: 4, vocabSize: 100, maxPositions: 64 };
const nested = (depth: number): unknown => {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = [value];
  return value;
};

describe("what is built: every dimension, the layers, the parameters", () => {
  it.each([
    ["hiddenSize", 1e15],
    ["heads", 2 ** 24 + 1],
    ["vocabSize", 2 ** 30],
    ["maxPositions", 1e9],
    ["ffnSize", 2 ** 25],
  ])("a spec's %s of %d names the field and the limit on a dimension", (field, value) => {
    expect(messageOf(() => readSpec("spec.json", { ...TRANSFORMER, [field]: value }))).toBe(
      `spec.json: ${field}: expected a whole number from 1 to 16,777,216 (vramfit's limit on a dimension), got ${value}`,
    );
  });

  it("a 10-million-layer transformer is refused before any layer is built (it ran V8 out of heap)", () => {
    const started = performance.now();
    expect(messageOf(() => readSpec("spec.json", { ...TRANSFORMER, layers: 10_000_000 }))).toBe(
      "spec.json: layers: expected a whole number from 1 to 256 (vramfit's limit on a transformer's layers), got 10000000",
    );
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it("a transformer of more than 1e14 parameters (hiddenSize 1e6 … printed 2.4e31 before)", () => {
    const big = { ...TRANSFORMER, hiddenSize: 2 ** 24, heads: 2 ** 10, vocabSize: 2 ** 24, layers: 256 };
    expect(messageOf(() => readSpec("spec.json", big))).toMatch(/^spec\.json: the model: expected a model of at most 1e14 parameters .*, got "8\.65e\+17 parameters"$/);
  });

  it("the same limits hold for a Hugging Face config, under its own field names", () => {
    const config = { model_type: "gpt2", n_embd: 768, n_layer: 5000, n_head: 12, vocab_size: 50257, n_positions: 1024 };
    expect(messageOf(() => readHfConfig("config.json", config))).toBe(
      "config.json: n_layer: expected a whole number from 1 to 256 (vramfit's limit on a transformer's layers), got 5000",
    );
    expect(messageOf(() => readHfConfig("config.json", { ...config, n_layer: 12, vocab_size: 1e12 }))).toMatch(/^config\.json: vocab_size: expected a whole number from 1 to 16,777,216/);
  });

  it("a CNN spec of more than 5,000 layers, nested ones included, is refused before they are read", () => {
    const residual = { type: "residual", body: Array.from({ length: 2_501 }, () => ({ type: "relu" })), shortcut: Array.from({ length: 2_500 }, () => ({ type: "relu" })) };
    expect(messageOf(() => readSpec("spec.json", { kind: "cnn", layers: [residual] }))).toBe(
      'spec.json: layers: expected a whole number from 1 to 5,000 (vramfit\'s limit on a CNN\'s layers, nested ones included), got "more than 5000 layers"',
    );
  });

  it("a CNN whose parameters pass the limit", () => {
    const layers = [{ type: "flatten" }, { type: "linear", out: 2 ** 24 }, { type: "linear", out: 2 ** 24 }];
    expect(messageOf(() => readSpec("spec.json", { kind: "cnn", imageSize: 1, channels: 1, layers }))).toMatch(/^spec\.json: the model: expected a model of at most 1e14 parameters/);
  });

  it("--params, --seq, --gpus, --tp have theirs", () => {
    expect(messageOf(() => resolveWorkload({ params: "1e15", perSample: "1GiB" }))).toBe('--params: expected a whole number from 1 to 1e14 (vramfit\'s limit on a model\'s parameters), got "1e15"');
    expect(messageOf(() => parseSetup({ seq: "1e9" }))).toBe('--seq: expected a whole number from 1 to 16,777,216 (vramfit\'s limit on a dimension), got "1e9"');
    expect(messageOf(() => parseSetup({ gpus: "1e7" }))).toBe('--gpus: expected a whole number from 1 to 1,048,576 (vramfit\'s limit on GPUs), got "1e7"');
    expect(messageOf(() => parseSetup({ tp: 2 ** 21 }))).toMatch(/^--tp: expected a whole number from 1 to 1,048,576/);
  });
});

describe("nesting depth", () => {
  it("is measured on the text without building it, and on parsed values without recursion", () => {
    const text = `${"[".repeat(1_000_000)}${"]".repeat(1_000_000)}`;
    expect(jsonTextDepth(text)).toBe(LIMITS.jsonDepth + 1); // stops as soon as it is over
    expect(jsonTextDepth('{"a": "[[[[[[", "b": [1, {"c": "\\"]"}]}')).toBe(3);
    expect(jsonValueDepth(nested(100_000))).toBe(LIMITS.jsonDepth + 1);
    expect(jsonValueDepth({ a: [{ b: 1 }] })).toBe(3);
  });

  it("deep nesting is bad input, not a stack overflow (exit 4 before)", () => {
    expect(messageOf(() => readSpec("spec.json", { kind: "cnn", layers: [nested(100_000)] }))).toBe(
      'spec.json: expected at most 64 levels of nested arrays and objects (vramfit\'s input limit), got "JSON nested more than 64 levels deep"',
    );
    expect(messageOf(() => readHfConfig("config.json", { model_type: "llama", extra: nested(65) }))).toMatch(/^config\.json: expected at most 64 levels/);
    // 64 levels are fine.
    expect(() => readHfConfig("config.json", { model_type: "gpt2", n_embd: 64, n_layer: 1, n_head: 4, vocab_size: 10, n_positions: 8, extra: nested(62) })).not.toThrow();
  });
});

describe("what is computed: every byte count stays exact (≤ 2^53)", () => {
  it("a plan whose bytes per sample pass 2^53 is refused, not printed as 5329070518242608 PiB", () => {
    const longContext = readSpec("spec.json", { ...TRANSFORMER, hiddenSize: 8192, heads: 64, positions: "rotary", maxPositions: 2 ** 24 });
    const plan = buildPlan(longContext, { mode: "train", precision: "fp32", optimizer: "adam", attention: "eager" });
    expect(messageOf(() => checkPlanBytes(plan))).toMatch(/^workload: expected a plan whose byte counts stay below 8 PiB \(2\^53, where they stop being exact\): lower --seq, --image or the model's size .*, got "7\.21e\+16 bytes per sample in layers\.0\.attention\.scores"$/);
    // The same model with flash attention stays in range.
    expect(() => checkPlanBytes(buildPlan(longContext, { mode: "train", precision: "fp32", optimizer: "adam" }))).not.toThrow();
  });

  it("a --batch beyond which the bytes pass 2^53 names the largest that does not", () => {
    const plan = buildPlan(resolveWorkload({ params: "1e9", perSample: "1GiB" }), { mode: "train", precision: "amp", optimizer: "adamw" });
    expect(() => checkBatchBytes("--batch", plan, 8_000_000)).not.toThrow();
    // 2^53 less the fixed bytes (16 B a parameter, and foreach AdamW's 4 B copy of the weights) over 1 GiB a sample.
    expect(messageOf(() => checkBatchBytes("--batch", plan, 9_000_000))).toBe(
      "--batch: expected at most 8,388,589 for this workload (beyond it its bytes pass 8 PiB, 2^53, where they stop being exact), got 9000000",
    );
  });
});

describe("an error echoes a short excerpt, never the whole value", () => {
  it("a 5 MB string in a field", () => {
    const message = messageOf(() => readSpec("spec.json", { ...TRANSFORMER, hiddenSize: "x".repeat(5_000_000) }));
    expect(message).toMatch(/^spec\.json: hiddenSize: expected .*, got "x{79}…" \(5000000 characters\)$/);
  });

  it("a long name, a long unknown key, a long option value", () => {
    expect(messageOf(() => readSpec("spec.json", { ...TRANSFORMER, name: "n".repeat(300) }))).toMatch(/^spec\.json: name: expected a string of at most 256 characters, got "n+…" \(300 characters\)$/);
    expect(messageOf(() => readSpec("spec.json", { ...TRANSFORMER, ["k".repeat(100_000)]: 1 }))).toMatch(/^spec\.json: k+…k+: expected no such field/);
    expect(messageOf(() => { throw invalidArgument("--model", "m".repeat(1_000_000), "a preset"); })).toMatch(/^--model: expected a preset, got "m+…" \(1000000 characters\)$/);
  });
});

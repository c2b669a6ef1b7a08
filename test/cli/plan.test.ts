// `vramfit plan`, `models` and workload inputs end to end: the memory model as users see it.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { root, runCli, runJson } from "./runCli.js";

const MiB = 2 ** 20;
const GRANULE = 2 * MiB;

interface PlanJson {
  batch: number;
  parameterCount: number;
  totalBytes: number;
  breakdown: Record<string, number>;
  tensorCount: number;
  assumed: string[];
  /** The phase of the step the breakdown is taken in (its peak). */
  peakPhase: string;
  timeline?: { phase: string; bytes: number; byCategory: Record<string, number> }[];
  /** The parts named beside the categories, live at the peak (src/plan/highlights.ts). */
  highlights?: { part: string; bytes: number }[];
  /** Every tensor of the step (and of a transformer's first layer) summed by category, whatever its lifetime. */
  tensorSums: Record<"step" | "firstLayer", Record<string, { fixedBytes: number; perSampleBytes: number }> | undefined>;
}

const torchFixture = JSON.parse(readFileSync(resolve(root, "test/fixtures/torch-saved-activations.json"), "utf8")) as {
  models: { model: string; perSampleBytes: number }[];
};

/** Rounding every tensor to 2 MiB adds less than one granule per tensor. */
function expectRoundedFrom(bytes: number, exact: number, tensors: number) {
  expect(bytes).toBeGreaterThanOrEqual(exact);
  expect(bytes - exact).toBeLessThan(tensors * GRANULE);
}

describe("vramfit plan", () => {
  it("resnet152, 224², fp32, SGD with momentum, batch 32: 4 + 4 + 4 bytes per parameter, activations as PyTorch saves them", async () => {
    const run = await runJson<PlanJson>(["plan", "--model", "resnet152", "--image", "224", "--precision", "fp32", "--optimizer", "momentum", "--batch", "32", "--timeline"]);
    expect(run.status).toBe(0);
    const { breakdown } = run.json;
    expect(run.json.parameterCount).toBe(60192808); // torchvision resnet152
    expectRoundedFrom(breakdown.parameters!, 4 * 60192808, run.json.tensorCount);
    expect(breakdown.optimizerStates).toBe(breakdown.parameters); // one fp32 momentum buffer
    // The breakdown is what is live at the step's peak: at batch 32 the start of backward, where
    // only the last blocks' gradients exist yet (all of them exist in optimizer.step).
    expect(run.json.peakPhase).toMatch(/^backward layer4\./);
    expect(breakdown.gradients).toBeGreaterThan(0);
    expect(breakdown.gradients).toBeLessThan(breakdown.parameters! / 2);
    expect(breakdown.kvCache).toBe(0);
    // PyTorch's saved_tensors_hooks measurement (test/fixtures/torch-saved-activations.json), within
    // 10%: what is saved is all live at the end of forward (the timeline's most activations).
    const torch = torchFixture.models.find((m) => m.model === "resnet152")!.perSampleBytes;
    const saved = Math.max(...run.json.timeline!.map((p) => p.byCategory.activations!));
    expect(Math.abs(saved / 32 - torch) / torch).toBeLessThan(0.1);
    const sum = Object.values(breakdown).reduce((a, b) => a + b, 0);
    expect(run.json.totalBytes).toBe(sum);
  });

  it("tensorSums: every tensor summed by category, whatever its lifetime (what saved-activation counts compare with)", async () => {
    // ResNet-152: what autograd saves per sample is PyTorch's own measurement to the byte (the fixture).
    const cnn = await runJson<PlanJson>(["plan", "--model", "resnet152", "--image", "224", "--precision", "fp32", "--optimizer", "sgd", "--batch", "1"]);
    expect(cnn.status).toBe(0);
    expect(cnn.json.tensorSums.step!.activations!.perSampleBytes).toBe(torchFixture.models.find((m) => m.model === "resnet152")!.perSampleBytes);
    expect(cnn.json.tensorSums.step!.parameters).toEqual({ fixedBytes: 4 * 60192808, perSampleBytes: 0 });
    expect(cnn.json.tensorSums.firstLayer).toBeUndefined();
    // GPT-3 175B, t = 8 (Korthikanti et al. 2022, Table 2): a layer saves sbh(10 + 24/t + 5as/(ht)), plus its two
    // LayerNorms' fp32 mean and rstd (2 × 2 × 4s), which the paper does not count.
    const [s, h, a, t] = [2048, 12288, 96, 8];
    const gpt = await runJson<PlanJson>(["plan", "--model", "gpt3-175b", "--precision", "fp16", "--optimizer", "adam", "--seq", String(s), "--attention", "eager", "--tp", String(t), "--batch", "1"]);
    expect(gpt.status).toBe(0);
    expect(gpt.json.tensorSums.firstLayer!.activations!.perSampleBytes).toBe(s * h * (10 + 24 / t + (5 * a * s) / (h * t)) + 2 * 2 * 4 * s);
    expect(gpt.json.tensorSums.step!.activations!.perSampleBytes).toBeGreaterThan(96 * gpt.json.tensorSums.firstLayer!.activations!.perSampleBytes);
  });

  it("bert-large, seq 512, amp, AdamW, batch 32: torch.cuda.amp's 4 + 4 + 8 bytes per parameter and the layers' 16-bit copies", async () => {
    const run = await runJson<PlanJson>(["plan", "--model", "bert-large", "--seq", "512", "--precision", "amp", "--optimizer", "adamw", "--batch", "32"]);
    const { breakdown } = run.json;
    expect(run.json.parameterCount).toBe(335141888); // Devlin et al. 2019 / HF BertModel with pooler
    // Without ZeRO, amp is torch.cuda.amp's layout (src/plan/autocast.ts): fp32 weights and Adam states, no master copy.
    expectRoundedFrom(breakdown.parameters!, 4 * 335141888, run.json.tensorCount);
    expectRoundedFrom(breakdown.optimizerStates!, 8 * 335141888, run.json.tensorCount);
    // At the peak (the last layer's backward) every layer's 16-bit matmul weights are still saved:
    // 24 layers × (4 h² + 2 h·4h) elements × 2 bytes, h = 1024.
    expect(run.json.peakPhase).toMatch(/^backward layers\.23 /);
    const copies = run.json.highlights!.find((x) => x.part === "autocast weight copies")!;
    expect(copies.bytes).toBe(2 * 24 * (4 * 1024 ** 2 + 2 * 1024 * 4096));
    expect(breakdown.activations).toBeGreaterThan(0);
    expect(breakdown.context).toBe(512 * MiB);
    expect(run.json.assumed).toEqual(["--mode train", "--optimizer-impl foreach", "--attention sdpa", "--checkpointing none"]);
  });

  it("--timeline: every phase of the step, the breakdown taken in the peak one; GPT-2 peaks at its loss", async () => {
    // transformers < 4.46's loss (--hf-loss legacy): a shifted copy of the logits beside them.
    const args = ["plan", "--model", "gpt2", "--precision", "fp32", "--optimizer", "adam", "--attention", "eager", "--batch", "8", "--hf-loss", "legacy"];
    const run = await runJson<PlanJson>([...args, "--timeline"]);
    expect(run.status).toBe(0);
    const timeline = run.json.timeline!;
    expect(timeline[0]!.phase).toBe("forward embeddings word_embeddings");
    expect(timeline.at(-2)!.phase).toBe("optimizer.step");
    expect(timeline.at(-1)!.phase).toBe("zero_grad");
    const peak = timeline.reduce((best, p) => (p.bytes > best.bytes ? p : best));
    expect(peak.phase).toBe(run.json.peakPhase);
    // Three fp32 logits-sized tensors at the loss (Hugging Face's shifted copy, log_softmax's output, …).
    expect(run.json.peakPhase).toMatch(/^forward loss /);
    // No gradient exists before backward; all of them in the optimizer step (foreach Adam's copy too).
    expect(timeline.find((p) => p.phase.startsWith("forward loss"))!.byCategory.gradients).toBe(0);
    expect(timeline.at(-2)!.byCategory.gradients).toBe(124439808 * 4);
    expect(timeline.at(-2)!.byCategory.workspace).toBeGreaterThanOrEqual(124439808 * 4);
    const text = await runCli([...args, "--timeline"]);
    expect(text.stdout).toMatch(/^forward loss\s+nll_loss\s+[\d.]+ GiB\s+█+\s+◀ peak$/m);
    expect(text.stdout).toMatch(/^peak {6}in forward loss nll_loss$/m);
    // Today's loss has no copy: the peak moves to log_softmax's backward (nll_loss's fp32 gradient and its own), 1.5 GiB lower.
    const current = await runJson<PlanJson>(args.slice(0, -2));
    expect(current.json.peakPhase).toBe("backward loss log_softmax");
    expect(run.json.totalBytes - current.json.totalBytes).toBeGreaterThan(2 ** 30);
  });

  it("eager attention adds the s² scores that flash attention never stores", async () => {
    const args = ["plan", "--model", "bert-large", "--seq", "512", "--batch", "8"];
    const flash = await runJson<PlanJson>([...args, "--attention", "flash"]);
    const eager = await runJson<PlanJson>([...args, "--attention", "eager"]);
    // Korthikanti et al. 2022: the 5as/h term is 5·a·s² bytes per layer and sample in 16-bit
    // (softmax 2, dropout mask 1, dropout output 2); 24 layers, 16 heads, s = 512, batch 8.
    const scores = 24 * 5 * 16 * 512 * 512 * 8;
    const difference = eager.json.breakdown.activations! - flash.json.breakdown.activations!;
    expect(Math.abs(difference - scores) / scores).toBeLessThan(0.02);
  });

  it("reads a Hugging Face config: Llama-2-7B inference holds 512 KiB of KV cache per token", async () => {
    const config = resolve(root, "test/fixtures/hf/llama-2-7b-hf.json");
    const run = await runJson<PlanJson>(["plan", "--hf-config", config, "--mode", "infer", "--precision", "fp16", "--seq", "4096", "--batch", "2"]);
    expect(run.json.parameterCount).toBe(6738415616); // Touvron et al. 2023
    expect(run.json.breakdown.kvCache).toBe(2 * 4096 * 512 * 1024);
    expect(run.json.breakdown.gradients).toBe(0);
    expect(run.json.breakdown.optimizerStates).toBe(0);
  });

  it("prints a table with a bar per category", async () => {
    const run = await runCli(["plan", "--model", "gpt2", "--batch", "4"]);
    expect(run.stdout).toMatch(/^workload  gpt2: 124439808 parameters/);
    expect(run.stdout).toMatch(/^activations\s+[\d.]+ \w+\s+█+·*\s+[\d.]+%$/m);
    expect(run.stdout).toMatch(/^total\s+[\d.]+ GiB\s+at batch 4$/m);
  });

  it("a bad spec file names the file and the field", async () => {
    const spec = join(mkdtempSync(join(tmpdir(), "vramfit-plan-")), "bad-spec.json");
    writeFileSync(spec, JSON.stringify({ kind: "affine", parameters: "lots", perSampleBytes: "1GiB" }));
    const run = await runCli(["plan", "--spec", spec]);
    expect(run.status).toBe(2);
    expect(run.stderr.trim().split("\n")).toHaveLength(1);
    expect(run.stderr).toMatch(/bad-spec\.json: parameters: expected a whole number .*, got "lots"/);
    // An HF config given to --spec is named as one (issue 25, item 8), not blamed for lacking a spec's field.
    const config = await runCli(["plan", "--spec", resolve(root, "test/fixtures/hf/gpt2.json")]);
    expect(config.stderr).toMatch(/^vramfit: --spec: expected a vramfit spec, not a Hugging Face config\.json \(model_type gpt2\): give this file to --hf-config/);
    const missing = await runCli(["plan", "--hf-config", "/nonexistent/config.json"]);
    expect(missing.stderr.trim()).toBe('vramfit: --hf-config: expected a readable JSON file (ENOENT), got "/nonexistent/config.json"');
  });
});

describe("vramfit models", () => {
  it("lists every preset the issue names, with computed parameter counts", async () => {
    const run = await runJson<{ name: string; parameterCount: number }[]>(["models"]);
    const names = run.json.map((m) => m.name);
    for (const name of ["resnet18", "resnet34", "resnet50", "resnet101", "resnet152", "vgg16", "vit-b16", "bert-base", "bert-large", "gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl", "llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3-8b", "mistral-7b", "gpt3-175b"]) {
      expect(names).toContain(name);
    }
    expect(run.json.find((m) => m.name === "resnet50")?.parameterCount).toBe(25557032); // torchvision
  });

  it("an unknown preset suggests the nearest name", async () => {
    const run = await runCli(["batch", "--model", "resnet-50", "--memory", "24GiB"]);
    expect(run.status).toBe(2);
    expect(run.stderr.trim()).toMatch(/^vramfit: --model: .*"resnet-50".*did you mean resnet50\?/);
  });
});

describe("batch with the memory model", () => {
  it("Llama-2-7B inference at seq 4096 on an H100-80GB: analytic, and consistent with plan", async () => {
    const run = await runJson<{ batchSize: number; source: string; reason: string; budgetBytes: number; bytesAtBatch: number }>([
      "batch", "--model", "llama-2-7b", "--mode", "infer", "--seq", "4096", "--gpu", "H100-80GB",
    ]);
    expect(run.json.source).toBe("analytic");
    expect(run.json.reason).toMatch(/--gpu/);
    const b = run.json.batchSize;
    expect(b).toBeGreaterThan(20); // 2 GiB of KV cache per sequence into ~66 GiB left after the weights
    const at = async (batch: number) =>
      (await runJson<PlanJson>(["plan", "--model", "llama-2-7b", "--mode", "infer", "--seq", "4096", "--batch", String(batch)])).json.totalBytes;
    expect(await at(b)).toBe(run.json.bytesAtBatch);
    expect(await at(b)).toBeLessThanOrEqual(run.json.budgetBytes);
    expect(await at(b + 1)).toBeGreaterThan(run.json.budgetBytes);
  });
});

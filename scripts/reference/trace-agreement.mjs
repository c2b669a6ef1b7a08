#!/usr/bin/env node
// Makes test/fixtures/trace-agreement.json: each case's step traced by the fake-CUDA tracer (python/vramfit_trace,
// torch 2.13 CPU venv, models built from config.json with random init), reduced to its peak at two batches.
// Usage: VRAMFIT_TORCH_CPU_PYTHON=/root/.cache/vramfit/venvs/torch-2.13.0-cpu/bin/python node scripts/reference/trace-agreement.mjs [CASE ...]
// Each case takes tens of seconds on two cores; the comparison with the analytic model is test/unit/traceAgreement.test.ts.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const python = process.env.VRAMFIT_TORCH_CPU_PYTHON;
if (!python) throw new Error("set VRAMFIT_TORCH_CPU_PYTHON to the torch 2.13 CPU venv's python");
const BATCHES = [4, 8];
const out = "test/fixtures/trace-agreement.json";

/** Each case: the preset vramfit plans, and the tracer's arguments for the same step. */
const CASES = [
  ["gpt2 fp32 adamw seq512", "gpt2", ["--hf-config", "test/fixtures/hf/gpt2.json", "--seq", "512", "--precision", "fp32"]],
  ["gpt2 bf16 adamw seq512", "gpt2", ["--hf-config", "test/fixtures/hf/gpt2.json", "--seq", "512", "--precision", "bf16"]],
  ["gpt2 fp32 sgd seq1024", "gpt2", ["--hf-config", "test/fixtures/hf/gpt2.json", "--seq", "1024", "--precision", "fp32", "--optimizer", "sgd"]],
  ["gpt2 fp32 adamw seq512 checkpointing", "gpt2", ["--hf-config", "test/fixtures/hf/gpt2.json", "--seq", "512", "--precision", "fp32", "--checkpointing"]],
  ["llama-3.2-1b bf16 adamw seq512", "llama-3.2-1b", ["--hf-config", "test/fixtures/hf/llama-3.2-1b.json", "--seq", "512", "--precision", "bf16"]],
  ["llama-3.2-1b fp32 adamw seq256", "llama-3.2-1b", ["--hf-config", "test/fixtures/hf/llama-3.2-1b.json", "--seq", "256", "--precision", "fp32"]],
  ["llama-3.2-1b bf16 lora8 seq512", "llama-3.2-1b", ["--hf-config", "test/fixtures/hf/llama-3.2-1b.json", "--seq", "512", "--precision", "bf16", "--lora-rank", "8"]],
  ["resnet50 fp32 sgd", "resnet50", ["--torchvision", "resnet50", "--image", "224", "--precision", "fp32", "--optimizer", "sgd"]],
  ["gpt2 amp adamw seq512", "gpt2", ["--hf-config", "test/fixtures/hf/gpt2.json", "--seq", "512", "--precision", "amp"]],
  ["gpt2 fp32 momentum seq256", "gpt2", ["--hf-config", "test/fixtures/hf/gpt2.json", "--seq", "256", "--precision", "fp32", "--optimizer", "momentum"]],
  ["llama-3.2-1b amp adamw seq512", "llama-3.2-1b", ["--hf-config", "test/fixtures/hf/llama-3.2-1b.json", "--seq", "512", "--precision", "amp"]],
  ["llama-3.2-1b bf16 adamw seq512 checkpointing", "llama-3.2-1b", ["--hf-config", "test/fixtures/hf/llama-3.2-1b.json", "--seq", "512", "--precision", "bf16", "--checkpointing"]],
  ["llama-3.2-3b bf16 sgd seq256", "llama-3.2-3b", ["--hf-config", "test/fixtures/hf/llama-3.2-3b.json", "--seq", "256", "--precision", "bf16", "--optimizer", "sgd"]],
  ["gemma-3-1b bf16 adamw seq256", "gemma-3-1b", ["--hf-config", "test/fixtures/hf/gemma-3-1b-pt.json", "--seq", "256", "--precision", "bf16"]],
  ["qwen2.5-7b bf16 sgd seq128", "qwen2.5-7b", ["--hf-config", "test/fixtures/hf/qwen2.5-7b.json", "--seq", "128", "--precision", "bf16", "--optimizer", "sgd"]],
  ["mistral-7b bf16 sgd seq128", "mistral-7b", ["--hf-config", "test/fixtures/hf/mistral-7b-v0.1.json", "--seq", "128", "--precision", "bf16", "--optimizer", "sgd"]],
  ["qwen3-8b bf16 sgd seq128", "qwen3-8b", ["--hf-config", "test/fixtures/hf/qwen3-8b.json", "--seq", "128", "--precision", "bf16", "--optimizer", "sgd"]],
  ["llama-3.2-1b fp16 adamw seq512", "llama-3.2-1b", ["--hf-config", "test/fixtures/hf/llama-3.2-1b.json", "--seq", "512", "--precision", "fp16"]],
  ["llama-3.2-3b bf16 adamw seq512 checkpointing", "llama-3.2-3b", ["--hf-config", "test/fixtures/hf/llama-3.2-3b.json", "--seq", "512", "--precision", "bf16", "--checkpointing"]],
  ["llama-2-7b bf16 sgd seq128", "llama-2-7b", ["--hf-config", "test/fixtures/hf/llama-2-7b-hf.json", "--seq", "128", "--precision", "bf16", "--optimizer", "sgd"]],
  ["llama-3-8b bf16 sgd seq128", "llama-3-8b", ["--hf-config", "test/fixtures/hf/llama-3-8b.json", "--seq", "128", "--precision", "bf16", "--optimizer", "sgd"]],
  ["llama-3.1-8b bf16 sgd seq128", "llama-3.1-8b", ["--hf-config", "test/fixtures/hf/llama-3.1-8b.json", "--seq", "128", "--precision", "bf16", "--optimizer", "sgd"]],
  ["phi-3-mini bf16 sgd seq128", "phi-3-mini", ["--hf-config", "test/fixtures/hf/phi-3-mini-4k-instruct.json", "--seq", "128", "--precision", "bf16", "--optimizer", "sgd"]],
  ["mistral-7b bf16 sgd seq128 checkpointing", "mistral-7b", ["--hf-config", "test/fixtures/hf/mistral-7b-v0.1.json", "--seq", "128", "--precision", "bf16", "--optimizer", "sgd", "--checkpointing"]],
  ["llama-3.2-1b bf16 momentum seq512", "llama-3.2-1b", ["--hf-config", "test/fixtures/hf/llama-3.2-1b.json", "--seq", "512", "--precision", "bf16", "--optimizer", "momentum"]],
  ["llama-3.2-1b bf16 sgd seq1024", "llama-3.2-1b", ["--hf-config", "test/fixtures/hf/llama-3.2-1b.json", "--seq", "1024", "--precision", "bf16", "--optimizer", "sgd"]],
  ["llama-3.2-1b fp32 momentum seq256", "llama-3.2-1b", ["--hf-config", "test/fixtures/hf/llama-3.2-1b.json", "--seq", "256", "--precision", "fp32", "--optimizer", "momentum"]],
  ["llama-3.2-3b bf16 adamw seq512", "llama-3.2-3b", ["--hf-config", "test/fixtures/hf/llama-3.2-3b.json", "--seq", "512", "--precision", "bf16"]],
  ["llama-3.2-3b fp32 sgd seq256", "llama-3.2-3b", ["--hf-config", "test/fixtures/hf/llama-3.2-3b.json", "--seq", "256", "--precision", "fp32", "--optimizer", "sgd"]],
  ["gpt2 bf16 momentum seq1024", "gpt2", ["--hf-config", "test/fixtures/hf/gpt2.json", "--seq", "1024", "--precision", "bf16", "--optimizer", "momentum"]],
  ["gpt2 fp16 adamw seq512", "gpt2", ["--hf-config", "test/fixtures/hf/gpt2.json", "--seq", "512", "--precision", "fp16"]],
  ["gpt2 bf16 adamw seq1024 checkpointing", "gpt2", ["--hf-config", "test/fixtures/hf/gpt2.json", "--seq", "1024", "--precision", "bf16", "--checkpointing"]],
  ["gpt2 fp32 adamw seq128", "gpt2", ["--hf-config", "test/fixtures/hf/gpt2.json", "--seq", "128", "--precision", "fp32"]],
  ["qwen3-8b bf16 sgd seq128 checkpointing", "qwen3-8b", ["--hf-config", "test/fixtures/hf/qwen3-8b.json", "--seq", "128", "--precision", "bf16", "--optimizer", "sgd", "--checkpointing"]],
  ["llama-3.2-1b bf16 adamw seq2048", "llama-3.2-1b", ["--hf-config", "test/fixtures/hf/llama-3.2-1b.json", "--seq", "2048", "--precision", "bf16"]],
  ["llama-3.2-3b bf16 momentum seq256", "llama-3.2-3b", ["--hf-config", "test/fixtures/hf/llama-3.2-3b.json", "--seq", "256", "--precision", "bf16", "--optimizer", "momentum"]],
  ["gpt2 fp32 momentum seq1024 checkpointing", "gpt2", ["--hf-config", "test/fixtures/hf/gpt2.json", "--seq", "1024", "--precision", "fp32", "--optimizer", "momentum", "--checkpointing"]],
  ["qwen2.5-7b bf16 sgd seq256", "qwen2.5-7b", ["--hf-config", "test/fixtures/hf/qwen2.5-7b.json", "--seq", "256", "--precision", "bf16", "--optimizer", "sgd"]],
  ["llama-3.2-1b fp32 adamw seq512 checkpointing", "llama-3.2-1b", ["--hf-config", "test/fixtures/hf/llama-3.2-1b.json", "--seq", "512", "--precision", "fp32", "--checkpointing"]],
  ["gpt2 bf16 sgd seq256", "gpt2", ["--hf-config", "test/fixtures/hf/gpt2.json", "--seq", "256", "--precision", "bf16", "--optimizer", "sgd"]],
  ["llama-3.2-1b bf16 sgd seq256 checkpointing", "llama-3.2-1b", ["--hf-config", "test/fixtures/hf/llama-3.2-1b.json", "--seq", "256", "--precision", "bf16", "--optimizer", "sgd", "--checkpointing"]],
  ["llama-3.2-1b fp32 sgd seq512 checkpointing", "llama-3.2-1b", ["--hf-config", "test/fixtures/hf/llama-3.2-1b.json", "--seq", "512", "--precision", "fp32", "--optimizer", "sgd", "--checkpointing"]],
  // Issue 21's presets × setups at seq 128 and 224² images (GPT-2 medium's amp step is not affine under the tracer:
  // a Python-side free moves between batches, so it has no case).
  ["gpt2 amp adamw seq128", "gpt2", ["--hf-config", "test/fixtures/hf/gpt2.json", "--seq", "128", "--precision", "amp"]],
  ["gpt2 bf16 adamw seq128", "gpt2", ["--hf-config", "test/fixtures/hf/gpt2.json", "--seq", "128", "--precision", "bf16"]],
  ["gpt2 bf16 adamw seq128 checkpointing", "gpt2", ["--hf-config", "test/fixtures/hf/gpt2.json", "--seq", "128", "--precision", "bf16", "--checkpointing"]],
  ["gpt2-medium fp32 adamw seq128", "gpt2-medium", ["--hf-config", "test/fixtures/hf/gpt2-medium.json", "--seq", "128", "--precision", "fp32"]],
  ["gpt2-medium bf16 adamw seq128", "gpt2-medium", ["--hf-config", "test/fixtures/hf/gpt2-medium.json", "--seq", "128", "--precision", "bf16"]],
  ["gpt2-medium bf16 adamw seq128 checkpointing", "gpt2-medium", ["--hf-config", "test/fixtures/hf/gpt2-medium.json", "--seq", "128", "--precision", "bf16", "--checkpointing"]],
  ["resnet18 fp32 adamw", "resnet18", ["--torchvision", "resnet18", "--image", "224", "--precision", "fp32"]],
  ["resnet18 amp adamw", "resnet18", ["--torchvision", "resnet18", "--image", "224", "--precision", "amp"]],
  ["resnet18 bf16 adamw", "resnet18", ["--torchvision", "resnet18", "--image", "224", "--precision", "bf16"]],
  ["resnet50 fp32 adamw", "resnet50", ["--torchvision", "resnet50", "--image", "224", "--precision", "fp32"]],
  ["resnet50 amp adamw", "resnet50", ["--torchvision", "resnet50", "--image", "224", "--precision", "amp"]],
  ["resnet50 bf16 adamw", "resnet50", ["--torchvision", "resnet50", "--image", "224", "--precision", "bf16"]],
  ["resnet152 fp32 adamw", "resnet152", ["--torchvision", "resnet152", "--image", "224", "--precision", "fp32"]],
  ["resnet152 amp adamw", "resnet152", ["--torchvision", "resnet152", "--image", "224", "--precision", "amp"]],
  ["resnet152 bf16 adamw", "resnet152", ["--torchvision", "resnet152", "--image", "224", "--precision", "bf16"]],
  ["vgg16 fp32 adamw", "vgg16", ["--torchvision", "vgg16", "--image", "224", "--precision", "fp32"]],
  ["vgg16 amp adamw", "vgg16", ["--torchvision", "vgg16", "--image", "224", "--precision", "amp"]],
  ["vgg16 bf16 adamw", "vgg16", ["--torchvision", "vgg16", "--image", "224", "--precision", "bf16"]],
  ["vit-b16 fp32 adamw", "vit-b16", ["--torchvision", "vit_b_16", "--image", "224", "--precision", "fp32"]],
  ["vit-b16 amp adamw", "vit-b16", ["--torchvision", "vit_b_16", "--image", "224", "--precision", "amp"]],
  ["vit-b16 bf16 adamw", "vit-b16", ["--torchvision", "vit_b_16", "--image", "224", "--precision", "bf16"]],
  // The rest of the GPT-2 and ResNet families, with their neighbours' setups.
  ["gpt2-large fp32 adamw seq128", "gpt2-large", ["--hf-config", "test/fixtures/hf/gpt2-large.json", "--seq", "128", "--precision", "fp32"]],
  ["gpt2-large amp adamw seq128", "gpt2-large", ["--hf-config", "test/fixtures/hf/gpt2-large.json", "--seq", "128", "--precision", "amp"]],
  ["gpt2-large bf16 adamw seq128", "gpt2-large", ["--hf-config", "test/fixtures/hf/gpt2-large.json", "--seq", "128", "--precision", "bf16"]],
  ["gpt2-large bf16 adamw seq128 checkpointing", "gpt2-large", ["--hf-config", "test/fixtures/hf/gpt2-large.json", "--seq", "128", "--precision", "bf16", "--checkpointing"]],
  ["gpt2-xl fp32 adamw seq128", "gpt2-xl", ["--hf-config", "test/fixtures/hf/gpt2-xl.json", "--seq", "128", "--precision", "fp32"]],
  ["gpt2-xl amp adamw seq128", "gpt2-xl", ["--hf-config", "test/fixtures/hf/gpt2-xl.json", "--seq", "128", "--precision", "amp"]],
  ["gpt2-xl bf16 adamw seq128", "gpt2-xl", ["--hf-config", "test/fixtures/hf/gpt2-xl.json", "--seq", "128", "--precision", "bf16"]],
  ["gpt2-xl bf16 adamw seq128 checkpointing", "gpt2-xl", ["--hf-config", "test/fixtures/hf/gpt2-xl.json", "--seq", "128", "--precision", "bf16", "--checkpointing"]],
  ["gpt2-large fp32 sgd seq1024", "gpt2-large", ["--hf-config", "test/fixtures/hf/gpt2-large.json", "--seq", "1024", "--precision", "fp32", "--optimizer", "sgd"]],
  ["gpt2-xl bf16 momentum seq1024", "gpt2-xl", ["--hf-config", "test/fixtures/hf/gpt2-xl.json", "--seq", "1024", "--precision", "bf16", "--optimizer", "momentum"]],
  ["resnet34 fp32 adamw", "resnet34", ["--torchvision", "resnet34", "--image", "224", "--precision", "fp32"]],
  ["resnet34 amp adamw", "resnet34", ["--torchvision", "resnet34", "--image", "224", "--precision", "amp"]],
  ["resnet34 bf16 adamw", "resnet34", ["--torchvision", "resnet34", "--image", "224", "--precision", "bf16"]],
  ["resnet101 fp32 adamw", "resnet101", ["--torchvision", "resnet101", "--image", "224", "--precision", "fp32"]],
  ["resnet101 amp adamw", "resnet101", ["--torchvision", "resnet101", "--image", "224", "--precision", "amp"]],
  ["resnet101 bf16 adamw", "resnet101", ["--torchvision", "resnet101", "--image", "224", "--precision", "bf16"]],
  // The larger Llama 2 and Gemma 2 presets, full size (fake tensors hold no memory).
  ["llama-2-13b fp32 sgd seq128", "llama-2-13b", ["--hf-config", "test/fixtures/hf/llama-2-13b-hf.json", "--seq", "128", "--precision", "fp32", "--optimizer", "sgd"]],
  ["llama-2-13b amp sgd seq128", "llama-2-13b", ["--hf-config", "test/fixtures/hf/llama-2-13b-hf.json", "--seq", "128", "--precision", "amp", "--optimizer", "sgd"]],
  ["llama-2-13b bf16 sgd seq128", "llama-2-13b", ["--hf-config", "test/fixtures/hf/llama-2-13b-hf.json", "--seq", "128", "--precision", "bf16", "--optimizer", "sgd"]],
  ["llama-2-13b bf16 sgd seq128 checkpointing", "llama-2-13b", ["--hf-config", "test/fixtures/hf/llama-2-13b-hf.json", "--seq", "128", "--precision", "bf16", "--optimizer", "sgd", "--checkpointing"]],
  ["llama-2-70b fp32 sgd seq128", "llama-2-70b", ["--hf-config", "test/fixtures/hf/llama-2-70b-hf.json", "--seq", "128", "--precision", "fp32", "--optimizer", "sgd"]],
  ["llama-2-70b amp sgd seq128", "llama-2-70b", ["--hf-config", "test/fixtures/hf/llama-2-70b-hf.json", "--seq", "128", "--precision", "amp", "--optimizer", "sgd"]],
  ["llama-2-70b bf16 sgd seq128", "llama-2-70b", ["--hf-config", "test/fixtures/hf/llama-2-70b-hf.json", "--seq", "128", "--precision", "bf16", "--optimizer", "sgd"]],
  ["llama-2-70b bf16 sgd seq128 checkpointing", "llama-2-70b", ["--hf-config", "test/fixtures/hf/llama-2-70b-hf.json", "--seq", "128", "--precision", "bf16", "--optimizer", "sgd", "--checkpointing"]],
  ["llama-2-13b bf16 sgd seq2048", "llama-2-13b", ["--hf-config", "test/fixtures/hf/llama-2-13b-hf.json", "--seq", "2048", "--precision", "bf16", "--optimizer", "sgd"]],
  ["gemma-2-9b bf16 sgd seq2048", "gemma-2-9b", ["--hf-config", "test/fixtures/hf/gemma-2-9b.json", "--seq", "2048", "--precision", "bf16", "--optimizer", "sgd"]],
  ["gemma-2-9b fp32 adamw seq256", "gemma-2-9b", ["--hf-config", "test/fixtures/hf/gemma-2-9b.json", "--seq", "256", "--precision", "fp32"]],
  ["gemma-2-9b amp adamw seq256", "gemma-2-9b", ["--hf-config", "test/fixtures/hf/gemma-2-9b.json", "--seq", "256", "--precision", "amp"]],
  ["gemma-2-9b bf16 adamw seq256", "gemma-2-9b", ["--hf-config", "test/fixtures/hf/gemma-2-9b.json", "--seq", "256", "--precision", "bf16"]],
  ["gemma-2-9b bf16 adamw seq256 checkpointing", "gemma-2-9b", ["--hf-config", "test/fixtures/hf/gemma-2-9b.json", "--seq", "256", "--precision", "bf16", "--checkpointing"]],
  // BERT as the preset names it, BertModel with its pooler (a config saved from BertModel: architectures ["BertModel"]),
  // the loss read from the pooled output as a classifier fine-tuned on it reads it (docs/accuracy.md, "BERT").
  ["bert-base fp32 adamw seq128", "bert-base", ["--hf-config", "test/fixtures/hf/bert-base-uncased-bertmodel.json", "--seq", "128", "--precision", "fp32"]],
  ["bert-base amp adamw seq128", "bert-base", ["--hf-config", "test/fixtures/hf/bert-base-uncased-bertmodel.json", "--seq", "128", "--precision", "amp"]],
  ["bert-base bf16 adamw seq128", "bert-base", ["--hf-config", "test/fixtures/hf/bert-base-uncased-bertmodel.json", "--seq", "128", "--precision", "bf16"]],
  ["bert-base bf16 adamw seq128 checkpointing", "bert-base", ["--hf-config", "test/fixtures/hf/bert-base-uncased-bertmodel.json", "--seq", "128", "--precision", "bf16", "--checkpointing"]],
  ["bert-base amp adamw seq512", "bert-base", ["--hf-config", "test/fixtures/hf/bert-base-uncased-bertmodel.json", "--seq", "512", "--precision", "amp"]],
  ["bert-base fp32 sgd seq512", "bert-base", ["--hf-config", "test/fixtures/hf/bert-base-uncased-bertmodel.json", "--seq", "512", "--precision", "fp32", "--optimizer", "sgd"]],
  ["bert-large fp32 adamw seq128", "bert-large", ["--hf-config", "test/fixtures/hf/bert-large-uncased-bertmodel.json", "--seq", "128", "--precision", "fp32"]],
  ["bert-large amp adamw seq128", "bert-large", ["--hf-config", "test/fixtures/hf/bert-large-uncased-bertmodel.json", "--seq", "128", "--precision", "amp"]],
  ["bert-large bf16 adamw seq128", "bert-large", ["--hf-config", "test/fixtures/hf/bert-large-uncased-bertmodel.json", "--seq", "128", "--precision", "bf16"]],
  ["bert-large bf16 adamw seq128 checkpointing", "bert-large", ["--hf-config", "test/fixtures/hf/bert-large-uncased-bertmodel.json", "--seq", "128", "--precision", "bf16", "--checkpointing"]],
  ["bert-large amp adamw seq512", "bert-large", ["--hf-config", "test/fixtures/hf/bert-large-uncased-bertmodel.json", "--seq", "512", "--precision", "amp"]],
  ["bert-large bf16 sgd seq512", "bert-large", ["--hf-config", "test/fixtures/hf/bert-large-uncased-bertmodel.json", "--seq", "512", "--precision", "bf16", "--optimizer", "sgd"]],
  // Mixtral: transformers 5.18 runs its experts as `grouped_mm` (modeling_utils.py line 1890, the default), where every
  // tensor's size follows the k·b·s routed pairs and none follows which experts they went to, so the trace holds at
  // every routing (docs/accuracy.md, "Mixtral").
  ["mixtral-8x7b bf16 sgd seq1024", "mixtral-8x7b", ["--hf-config", "test/fixtures/hf/mixtral-8x7b-v0.1.json", "--seq", "1024", "--precision", "bf16", "--optimizer", "sgd"]],
  ["mixtral-8x7b bf16 sgd seq1024 checkpointing", "mixtral-8x7b", ["--hf-config", "test/fixtures/hf/mixtral-8x7b-v0.1.json", "--seq", "1024", "--precision", "bf16", "--optimizer", "sgd", "--checkpointing"]],
  // GPT-3 175B as the preset plans it, dense attention in every layer: transformers' GPT-2 class at Brown et al. 2020
  // Table 2.1's dimensions (test/fixtures/hf/gpt3-175b.json; not OpenAI's alternating banded sparse layers).
  ["gpt3-175b bf16 sgd seq2048", "gpt3-175b", ["--hf-config", "test/fixtures/hf/gpt3-175b.json", "--seq", "2048", "--precision", "bf16", "--optimizer", "sgd"]],
  ["gpt3-175b amp sgd seq2048", "gpt3-175b", ["--hf-config", "test/fixtures/hf/gpt3-175b.json", "--seq", "2048", "--precision", "amp", "--optimizer", "sgd"]],
  ["gpt3-175b bf16 sgd seq2048 checkpointing", "gpt3-175b", ["--hf-config", "test/fixtures/hf/gpt3-175b.json", "--seq", "2048", "--precision", "bf16", "--optimizer", "sgd", "--checkpointing"]],
];

function replayPeak(trace, batch) {
  const live = new Map();
  let current = 0;
  let peak = 0;
  let phase = "";
  for (const e of trace.events) {
    if (e[0] === "a") {
      const bytes = e[2] + e[3] * batch;
      live.set(e[1], bytes);
      current += bytes;
      if (current > peak) [peak, phase] = [current, `${trace.phases[e[4]]} ${e[6] ?? ""}`.trim()];
    } else {
      current -= live.get(e[1]) ?? 0;
      live.delete(e[1]);
    }
  }
  return { peak, phase };
}

const wanted = process.argv.slice(2);
const cases = [];
const dir = mkdtempSync(join(tmpdir(), "trace-agreement-"));
for (const [name, preset, args] of CASES) {
  if (wanted.length > 0 && !wanted.includes(name)) continue;
  const file = join(dir, "trace.json");
  const run = spawnSync(python, ["-m", "vramfit_trace", ...args.map((a) => (a.startsWith("test/") ? `../${a}` : a)), "--compute-capability", "9.0", "--no-cache", "--out", file], { cwd: "python", encoding: "utf8" });
  if (run.status !== 0) {
    process.stderr.write(`${name}: tracer failed: ${run.stderr.trim().split("\n").at(-1)}\n`);
    continue;
  }
  const trace = JSON.parse(readFileSync(file, "utf8"));
  const peaks = Object.fromEntries(BATCHES.map((b) => [b, replayPeak(trace, b)]));
  cases.push({
    case: name,
    preset,
    tracerArgs: args,
    affine: trace.affine,
    kernels: [...new Set((trace.attention ?? []).map((a) => a.kernel))],
    charged: trace.charged ?? {},
    parameterCount: trace.workload.parameterCount,
    trainableParameterCount: trace.workload.trainableParameterCount,
    peaks,
  });
  process.stderr.write(`${name}: ${BATCHES.map((b) => `${b}: ${peaks[b].peak} (${peaks[b].phase})`).join(", ")}\n`);
}
const environment = JSON.parse(spawnSync(python, ["-c", "import json, torch, transformers; print(json.dumps({'torch': torch.__version__, 'transformers': transformers.__version__}))"], { encoding: "utf8" }).stdout);
// The cases not traced now are kept as the fixture has them now (read at the end: another run may have written it), in
// CASES's order.
const kept = existsSync(out) && wanted.length > 0 ? JSON.parse(readFileSync(out, "utf8")).cases.filter((c) => !cases.some((d) => d.case === c.case)) : [];
const order = (c) => CASES.findIndex(([name]) => name === c.case);
const all = [...kept, ...cases].sort((a, b) => order(a) - order(b));
writeFileSync(out, `${JSON.stringify({ command: `node scripts/reference/trace-agreement.mjs (VRAMFIT_TORCH_CPU_PYTHON: torch ${environment.torch}, transformers ${environment.transformers})`, batches: BATCHES, cases: all }, null, 1)}\n`);

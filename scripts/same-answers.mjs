#!/usr/bin/env node
// Checks that a change moved no answer: runs CLI cases under this build and another checkout's, and diffs their output (text and --json, exit status) with timings masked.
// Usage: node scripts/same-answers.mjs --against DIR [--cases FILE] [--only N,M] (scripts/same-answers-advice.txt: advice cases)
//   DIR: another checkout, built (a worktree of main, say). FILE: one case a line (the CLI's
//   arguments, split on spaces; a line may start with `SIM=<gpu>:<bytes>;... ` for simulated devices).
// Exit status 0 when every case matches, 1 when one differs (each difference is printed), 2 on usage.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const H100 = "NVIDIA H100 80GB HBM3:85029158912:0";

/**
 * The bench's commands (scripts/bench.mjs) and more: every command's text and --json, presets of
 * each family, setups (checkpointing, tensor parallel, inference, fp16, LoRA, offload), allocators,
 * non-monotone bert-base, advice with and without GPUs, and usage errors.
 */
const CASES = `batch --model resnet152
batch --model resnet152 --json
batch --params 1e9 --per-sample 1GiB --memory 80GiB --json
batch --params 1e9 --per-sample 1GiB --memory 80GiB
batch --analytic --model resnet152 --image 224 --precision fp32 --optimizer momentum --gpu H100-80GB --json
batch --model resnet152 --gpu H100-80GB
batch --model resnet50 --gpu A100-40GB --image 224 --precision fp32 --optimizer momentum
batch --model resnet18 --json
batch --model vgg16
batch --model vit-b16 --json
batch --model gpt2 --gpu H100-80GB
batch --model bert-base
batch --model bert-base --json --precision fp32
batch --model bert-base --tp 2 --gpu A100-80GB --json
batch --model bert-large --seq 384 --json
batch --model gpt2-xl --checkpointing full
batch --model llama-3.1-8b --seq 4096
batch --model llama-3.1-8b --seq 4096 --no-advice --json
batch --model llama-3.2-1b --seq 2048 --json
batch --model mixtral-8x7b --gpu H200 --json
batch --model resnet152 --checkpointing full --gpu H100-80GB
check --model gpt3-175b --gpu H100-80GB --batch 1
check --model resnet18 --gpu H100-80GB --batch 10 --no-touch
check --model resnet18 --batch 8
check --model bert-base --gpu A100-80GB --batch 515 --json
plan --model resnet152 --batch 8 --json
plan --model resnet18 --batch 4
plan --model resnet50 --mode infer --batch 4 --json
plan --model resnet152 --batch 8 --checkpointing full --json
plan --model vit-b16 --batch 8 --json
gpus --fit --model resnet152 --min-batch 4096
gpus --fit --model resnet18 --min-batch 100 --json
gpus --fit --model bert-base
gpus --fit --model gpt2 --json
batch --model resnet152 --allocator expandable --json
batch --model resnet152 --allocator raw
batch --model resnet50 --alloc-conf max_split_size_mb:128 --json
batch --model sd2.1-unet --gpu H100-80GB
batch --model vgg16 --mode infer --json
batch --model resnet18 --image 96 --precision fp16 --optimizer sgd --gpu T4 --json
batch --model=resnet18 --image 128 --precision fp32
batch --model llama-2-7b --lora-rank 16 --seq 1024 --json
batch --model llama-2-13b --offload optimizer --host-memory 256GiB --seq 1024 --json
batch --model llama-2-13b --offload optimizer --host-memory 64GiB --seq 1024
batch --model resnet18 --memory 40GiB --gpu H100-80GB
batch --model resnet18 --gpu H100-80GB --device all
batch --model resnet152 --mdoel x
batch --help
plan --help
batch --model
batch --model resnet18 --model resnet50
batch --model resnet18 --reserve -5
batch --model resnet18 --fit
batch --model resnet18 -- --json
batch --params 1e9 --per-sample 1GiB --memory=80GiB --json
SIM=${H100} batch --model llama-3.1-8b --seq 4096 --device all
SIM=${H100} batch --model resnet152 --json
SIM=Tesla T4:16106127360:0 batch --model bert-base --json`;

let args;
try {
  ({ values: args } = parseArgs({ options: { against: { type: "string" }, cases: { type: "string" }, only: { type: "string" } } }));
  if (args.against === undefined) throw new Error("--against DIR is required");
} catch (error) {
  process.stderr.write(`same-answers: ${error.message}\nusage: node scripts/same-answers.mjs --against DIR [--cases FILE] [--only N,M]\n`);
  process.exit(2);
}
const other = resolve(args.against);
if (!existsSync(join(other, "bin", "vramfit.js"))) {
  process.stderr.write(`same-answers: --against: expected a built checkout with bin/vramfit.js, got ${other}\n`);
  process.exit(2);
}
const lines = (args.cases === undefined ? CASES : readFileSync(args.cases, "utf8")).split("\n").filter((line) => line.trim() !== "" && !line.startsWith("#")); // FILE: "#" lines are comments
const only = args.only?.split(",").map(Number);
const simulator = (dir) => join(dir, "build", "Release", "libcudasim.so");

/** Timings differ from run to run: the JSON's elapsedMs and the tables' "12.3 ms" / "1.2 s". */
const masked = (text) => text.replace(/"elapsedMs": [0-9.e+-]+/g, '"elapsedMs": T').replace(/[0-9]+(\.[0-9]+)? (ms|s)( |$)/gm, "T$3").replace(/ {2,}/g, " ");

// Each build writes its own code caches, in a folder of its own: no run reads another's.
const caches = mkdtempSync(join(tmpdir(), "vramfit-same-"));
mkdirSync(join(caches, "locks"));
function run(dir, line, which) {
  const sim = /^SIM=([^ ].*?) (batch|check|plan|gpus) /.exec(line);
  const argv = (sim === null ? line : line.slice(4 + sim[1].length + 1)).split(" ");
  // Device locks of this run's own: another session probing the same simulated device would make
  // one build's run wait and say so.
  const env = { PATH: process.env.PATH, HOME: process.env.HOME, XDG_CACHE_HOME: join(caches, which), VRAMFIT_LOCK_DIR: join(caches, "locks"), ...(sim !== null && { VRAMFIT_CUDA_LIBRARY: simulator(dir), CUDASIM_DEVICES: sim[1] }) };
  const r = spawnSync(process.execPath, [join(dir, "bin", "vramfit.js"), ...argv], { env, encoding: "utf8", maxBuffer: 64 * 2 ** 20 });
  return { out: masked(r.stdout), err: masked(r.stderr.replaceAll(dir, "DIR")), status: r.status };
}

let differ = 0;
try {
  for (const [i, line] of lines.entries()) {
    if (only !== undefined && !only.includes(i + 1)) continue;
    const a = run(root, line, "this");
    const b = run(other, line, "other");
    const diffs = ["out", "err", "status"].filter((k) => a[k] !== b[k]);
    if (diffs.length === 0) continue;
    differ += 1;
    process.stdout.write(`DIFFERS ${i + 1}: ${line} (${diffs.join(", ")})\n`);
    for (const k of diffs.filter((d) => d !== "status")) {
      const x = a[k].split("\n");
      const y = b[k].split("\n");
      const at = x.findIndex((l, j) => l !== y[j]);
      process.stdout.write(`  ${k} line ${at + 1}\n    this:  ${x[at]}\n    other: ${y[at]}\n`);
    }
  }
} finally {
  rmSync(caches, { recursive: true, force: true });
}
const asked = only === undefined ? lines.length : only.length;
process.stdout.write(`${asked} cases, ${differ} differ (this: ${root}, other: ${other})\n`);
process.exit(differ === 0 ? 0 : 1);

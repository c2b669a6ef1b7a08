#!/usr/bin/env node
// vramfit batch --exec over a real PyTorch training job against that job's own search, on one GPU.
//   node scripts/gpu-exec-compare.mjs [--out DIR] [--device N] [--models resnet152,bert-large] [--dry-run]
// Per model (scripts/torch-reference.py's: resnet152 224² fp32 momentum, bert-large seq 512 amp
// adamw): first torch-reference.py's own search (Lightning's binsearch, real steps in one
// process), then `vramfit batch --exec` over `torch-reference.py --one-step` (the same steps at one
// batch per process, which prints VRAMFIT_PEAK_BYTES=torch.cuda.max_memory_reserved()). Writes
// DIR/<model>.json and DIR/summary.json: both answers, both run counts, both wall times, and per
// run vramfit's NVML peak (measuredPeakBytes) against max_memory_reserved() (peakBytes).
// Needs node with the build outputs (dist/, build/Release/) and python3 (or $PYTHON) with torch
// and torchvision. --dry-run: PyTorch on the CPU at tiny shapes with a simulated out-of-memory above
// batch 3 and vramfit on whatever driver is configured (the simulator in a test): plumbing only. Above 3,
// not torch-reference.py's default 5: each of --exec's runs is a fresh python that imports torch (and
// torch._dynamo, on the optimizer's first call) in seconds, and 3 still needs both searches to bisect
// (torch: 2, 4 out of memory, 3; vramfit: 1, 2, 3, 4 out of memory) — 4 runs per model, not 6.
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const { values: args } = parseArgs({
  options: {
    out: { type: "string", default: `gpu-exec-compare-${new Date().toISOString().replace(/[:.]/g, "")}` },
    device: { type: "string", default: "0" },
    models: { type: "string", default: "resnet152,bert-large" },
    "dry-run": { type: "boolean", default: false },
  },
});
const python = process.env.PYTHON ?? "python3";
const reference = join(root, "scripts", "torch-reference.py");
const dry = args["dry-run"] ? ["--dry-run", "--simulate-oom-above", "3"] : [];
mkdirSync(args.out, { recursive: true });

function timed(command, argv, env = process.env) {
  const started = performance.now();
  const run = spawnSync(command, argv, { encoding: "utf8", env, maxBuffer: 256 * 2 ** 20 });
  return { ...run, seconds: (performance.now() - started) / 1000 };
}

const summary = [];
for (const model of args.models.split(",").map((m) => m.trim()).filter(Boolean)) {
  process.stderr.write(`gpu-exec-compare: ${model}: torch-reference search\n`);
  const torch = timed(python, [reference, "--models", model, "--device", args.device, ...dry]);
  if (torch.status !== 0) throw new Error(`torch-reference.py failed (${torch.status}): ${torch.stderr}`);
  const torchResult = JSON.parse(torch.stdout).models[0];

  process.stderr.write(`gpu-exec-compare: ${model}: vramfit batch --exec\n`);
  const job = [python, reference, "--one-step", "--models", model, ...dry, "--batch", "{batch}"].map((w) => JSON.stringify(w)).join(" ").replace('"{batch}"', "{batch}");
  const exec = timed(process.execPath, [join(root, "bin", "vramfit.js"), "batch", "--exec", job, "--device", args.device, "--log-dir", join(args.out, `${model}-runs`), ...(args["dry-run"] ? ["--max-batch", "64"] : []), "--json"]);
  if (exec.status !== 0) throw new Error(`vramfit batch --exec failed (${exec.status}): ${exec.stderr}`);
  const vramfit = JSON.parse(exec.stdout);

  const result = {
    model,
    torch: { batchSize: torchResult.batchSize, trials: torchResult.trialCount, seconds: torch.seconds, searchSeconds: torchResult.searchSeconds, atBatch: torchResult.atBatch },
    vramfit: {
      batchSize: vramfit.batchSize,
      runs: vramfit.runs,
      seconds: exec.seconds,
      method: vramfit.method,
      calibration: vramfit.calibration ?? null,
      // Per run: the job's max_memory_reserved() and what NVML saw for its processes (context included).
      trace: vramfit.trace.map((t) => ({ batch: t.batch, fits: t.fits, seconds: t.seconds, maxMemoryReservedBytes: t.peakSource === "job" ? t.peakBytes : null, nvmlPeakBytes: t.measuredPeakBytes ?? null, nvmlSource: t.measuredPeakSource ?? null })),
    },
    sameAnswer: torchResult.batchSize === vramfit.batchSize,
    runRatio: vramfit.runs / torchResult.trialCount,
    timeRatio: exec.seconds / torch.seconds,
  };
  writeFileSync(join(args.out, `${model}.json`), `${JSON.stringify(result, null, 2)}\n`);
  summary.push(result);
  process.stderr.write(`gpu-exec-compare: ${model}: torch ${result.torch.batchSize} in ${result.torch.trials} trials, ${result.torch.seconds.toFixed(1)} s; vramfit ${result.vramfit.batchSize} in ${result.vramfit.runs} runs, ${result.vramfit.seconds.toFixed(1)} s\n`);
}
writeFileSync(join(args.out, "summary.json"), `${JSON.stringify(summary, null, 2)}\n`);
process.stdout.write(`${JSON.stringify(summary.map(({ model, torch, vramfit, sameAnswer }) => ({ model, torch: torch.batchSize, torchTrials: torch.trials, vramfit: vramfit.batchSize, vramfitRuns: vramfit.runs, sameAnswer })), null, 2)}\n`);

#!/usr/bin/env node
// vramfit batch --exec against the batch-size finders people use, on the same simulated GPU (issue 20):
// PyTorch Lightning's BatchSizeFinder (binsearch and power) and accelerate's find_executable_batch_size,
// each over the same model and step (examples/pytorch/), and vramfit over the same scripts. Prints a
// Markdown table (docs/benchmarks.md, "Batch-size finders on a simulated GPU").
//   node scripts/bench-simulated-gpu.mjs [--python PATH] [--gpu T4] [--seq 16384]
// Needs the built CLI and stubs (npm run build) and a Python with torch (CUDA build), pytorch-lightning
// and accelerate (VRAMFIT_TORCH_CUDA_PYTHON, made by .ci/python-envs.sh).
import { spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { prepareSimulatedGpu, simulatedRunEnv } from "../dist/job/simulatedGpu.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const { values } = parseArgs({ options: { python: { type: "string" }, gpu: { type: "string", default: "T4" }, seq: { type: "string", default: "16384" } } });
const python = values.python ?? process.env.VRAMFIT_TORCH_CUDA_PYTHON;
if (!python) {
  console.error("bench-simulated-gpu: give --python or set VRAMFIT_TORCH_CUDA_PYTHON (source .ci/python-envs.sh)");
  process.exit(2);
}
const examples = join(root, "examples", "pytorch");
const seq = values.seq;
const sim = prepareSimulatedGpu({ gpu: values.gpu, python }, 512 * 2 ** 20);
const env = { ...process.env, ...simulatedRunEnv(sim, join(mkdtempSync(join(tmpdir(), "vramfit-bench-sim-")), "finder"), process.env), CUDA_VISIBLE_DEVICES: "0" };

/** A finder in one process: its answer and the seconds it took, start to exit (torch's import included). */
function finder(label, script, args) {
  const started = performance.now();
  const run = spawnSync(python, [join(examples, script), ...args], { env, encoding: "utf8", cwd: tmpdir() });
  const seconds = (performance.now() - started) / 1000;
  const found = /batch (\d+) seconds/.exec(run.stdout ?? "");
  return { label, batch: found ? Number(found[1]) : `failed (exit ${run.status})`, runs: "1 process", seconds };
}

/** vramfit batch --exec over `command` on the same simulated GPU. */
function vramfit(label, command) {
  const started = performance.now();
  const run = spawnSync(process.execPath, [join(root, "bin", "vramfit.js"), "batch", "--exec", command, "--gpu", values.gpu, "--python", python, "--json"], { encoding: "utf8" });
  const seconds = (performance.now() - started) / 1000;
  if (run.status !== 0) return { label, batch: `failed (exit ${run.status}): ${run.stderr.trim().split("\n").pop()}`, runs: "", seconds };
  const result = JSON.parse(run.stdout);
  return { label, batch: result.batchSize, runs: `${result.runs} runs`, seconds };
}

const plain = `${python} ${join(examples, "train_mlp.py")} --batch-size {batch} --seq ${seq} --steps 1`;
const lightning = `${python} ${join(examples, "find_batch_lightning.py")} --batch-size {batch} --seq ${seq}`;
const rows = [
  vramfit("vramfit batch --exec, train_mlp.py (1 step)", plain),
  finder("accelerate find_executable_batch_size (from 64), train_mlp.py", "find_batch_accelerate.py", ["--start", "64", "--seq", seq]),
  vramfit("vramfit batch --exec, the Lightning script (Trainer.fit, 1 step)", lightning),
  finder("Lightning BatchSizeFinder, binsearch (init 1, 3 steps a trial)", "find_batch_lightning.py", ["--mode", "binsearch", "--seq", seq]),
  finder("Lightning BatchSizeFinder, power (init 1, 3 steps a trial)", "find_batch_lightning.py", ["--mode", "power", "--seq", seq]),
];
console.log(`Simulated ${sim.gpu.name} (${sim.gpu.id}), torch ${sim.torchVersion}, MLP 1024→4096→1024 over ${seq}-token sequences, AdamW, fp32\n`);
console.log("| finder | answer | runs | seconds |\n|---|---|---|---|");
for (const r of rows) console.log(`| ${r.label} | ${r.batch} | ${r.runs} | ${r.seconds.toFixed(1)} |`);

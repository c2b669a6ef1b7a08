#!/usr/bin/env node
// How many runs of the real job each batch-size search needs, and whether it finds the right batch:
// vramfit --exec (calibrated; seeded by vramfit's model; seeded by an exact model), a bisection over
// [1, 1024], Lightning's binsearch, accelerate's find_executable_batch_size and Ultralytics'
// AutoBatch, all on the same simulated jobs.
//   node scripts/bench-jobs.mjs [--quick]      JSON on stdout (scripts/bench.mjs runs it as its jobRuns section)
// The jobs are test/job/sim-job.c: a process that allocates a preset's fixed + perSample × batch
// bytes (its plan's totals, the per-sample bytes in four tensors, three 1.5 MiB workspaces) through
// the simulated driver, prints VRAMFIT_PEAK_BYTES (the device bytes they took: what NVML reports
// for the process on a machine whose context costs nothing, as in bench.mjs's other sections),
// holds them 15 ms, exits 0, or prints PyTorch's out-of-memory message and exits 1. The peak
// comes from the job's line, not from sampling, so that the counts do not depend on timing. Every strategy runs that same process;
// vramfit runs it through findMaxBatchByRunning (process group, NVML sampling, logs), the others
// through spawnSync. The truth is the simulator's own arithmetic (test/job/simJob.mjs).
import { spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const MiB = 2 ** 20;
const GiB = 2 ** 30;
/** The job's CUDA context on the simulated GPU: none, as in bench.mjs's other sections. */
const CONTEXT_BYTES = 0;
const { values: args } = parseArgs({ options: { quick: { type: "boolean", default: false } } });

// The simulated machine, set before the driver is loaded: catalog GPUs as bench.mjs has them (512 MiB
// held by another context; the H100 another 3 GiB), one ledger shared with the jobs.
const { GPU_CATALOG } = await import("../dist/devices/catalog.js");
const GPUS = [
  ["T4", 512 * MiB],
  ["A100-40GB", 512 * MiB],
  ["A100-80GB", 512 * MiB],
  ["H100-80GB", 512 * MiB + 3 * GiB],
  ["H200", 512 * MiB],
]
  .filter(([id]) => !args.quick || ["T4", "H100-80GB"].includes(id))
  .map(([id, usedBytes]) => ({ id, ...GPU_CATALOG.find((g) => g.id === id), usedBytes }));
const scratch = mkdtempSync(join(tmpdir(), "vramfit-bench-jobs-"));
for (const name of Object.keys(process.env)) if (name.startsWith("CUDASIM_") || name.startsWith("SIMJOB_")) delete process.env[name];
Object.assign(process.env, {
  VRAMFIT_CUDA_LIBRARY: resolve(root, "build", "Release", "libcudasim.so"),
  VRAMFIT_NVML_LIBRARY: resolve(root, "build", "Release", "libnvmlsim.so"),
  VRAMFIT_LOCK_DIR: scratch,
  CUDASIM_DEVICES: GPUS.map((g) => `${g.name}:${g.totalBytes}:${g.usedBytes}`).join(";"),
  CUDASIM_CONTEXT_BYTES: String(CONTEXT_BYTES),
  CUDASIM_STATE: join(scratch, "ledger"),
});

const { findMaxBatchByRunning, planMemory, devices } = await import("../dist/index.js");
const { presetWorkload } = await import("../dist/workload/presets.js");
const { planTotals } = await import("../dist/plan/memoryPlan.js");
const { buildSimJob, deviceBytes, jobEnv, trueMaxBatch } = await import("../test/job/simJob.mjs");
const { accelerateFindExecutable, bisect1024, lightningBinsearch, ultralyticsAutobatch } = await import("./batch-searches.mjs");

/** Training jobs (what --exec is for): model, run setup. */
const WORKLOADS = [
  ["resnet50", { mode: "train", precision: "fp32", optimizer: "momentum", image: 224 }],
  ["resnet152", { mode: "train", precision: "fp32", optimizer: "momentum", image: 224 }],
  ["resnet50", { mode: "train", precision: "fp16", optimizer: "sgd", image: 128 }],
  ["vit-b16", { mode: "train", precision: "amp", optimizer: "adamw" }],
  ["bert-base", { mode: "train", precision: "amp", optimizer: "adamw", seq: 512 }],
  ["bert-large", { mode: "train", precision: "amp", optimizer: "adamw", seq: 512 }],
  ["gpt2-medium", { mode: "train", precision: "amp", optimizer: "adamw", seq: 1024 }],
  ["gpt2-xl", { mode: "train", precision: "amp", optimizer: "adamw", seq: 1024 }],
].filter(([model, setup]) => !args.quick || (model === "resnet152" || (model === "bert-large" && setup.seq === 512) || model === "gpt2-medium"));

const simJob = buildSimJob();
const uuids = (await devices()).map((d) => d.uuid);
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** One run of the job outside vramfit: exit 0 → its VRAMFIT_PEAK_BYTES; out of memory → null. */
function runOnce(env, batch) {
  const run = spawnSync(simJob, [String(batch)], { env, encoding: "utf8" });
  if (run.status === 0) return Number(/VRAMFIT_PEAK_BYTES=(\d+)/.exec(run.stdout)?.[1] ?? NaN);
  if (run.status === 1 && run.stderr.includes("CUDA out of memory")) return null;
  throw new Error(`sim-job ${batch} exited ${run.status}: ${run.stderr}`);
}

/**
 * The affine model whose answer for this budget is the true one: what a memory model that
 * describes the job exactly would predict (its bytes at the answer are the job's device bytes).
 */
function exactModel(job, budget, truth) {
  const perSampleBytes = job.perSampleBytes;
  const fixedBytes = deviceBytes(job, truth, { contextBytes: CONTEXT_BYTES }) - perSampleBytes * truth;
  return { fixedBytes, perSampleBytes, predicted: Math.floor((budget - fixedBytes) / perSampleBytes) };
}

const rows = [];
for (const [g, gpu] of GPUS.entries()) {
  for (const [model, setup] of WORKLOADS) {
    const plan = planMemory(presetWorkload(model), setup);
    const { fixedBytes, perSampleBytes } = planTotals(plan);
    const job = { fixedBytes, perSampleBytes, parts: 4, smallCount: 3, smallBytes: 1536 * 1024, printPeak: "device", holdMs: 15 };
    const freeBytes = gpu.totalBytes - gpu.usedBytes;
    const truth = trueMaxBatch(job, freeBytes, { contextBytes: CONTEXT_BYTES });
    const env = { ...process.env, ...jobEnv(job), CUDA_VISIBLE_DEVICES: uuids[g] };
    const fits = (batch) => runOnce(env, batch) !== null;
    const exec = (options) => findMaxBatchByRunning(`${simJob} {batch}`, { device: g, env: { ...process.env, ...jobEnv(job) }, lock: false, ...options });
    const score = (r, runs) => ({ batchSize: r.batchSize, runs, correct: r.batchSize === truth });
    const exact = exactModel(job, freeBytes, truth);
    const strategies = {
      vramfit: score(...[await exec({})].map((r) => [r, r.runs]).flat()),
      vramfitModelSeed: score(...[await exec({ model: plan })].map((r) => [r, r.runs]).flat()),
      vramfitExactSeed: score(...[await exec({ model: { fixedBytes: exact.fixedBytes, perSampleBytes: exact.perSampleBytes } })].map((r) => [r, r.runs]).flat()),
      bisect1024: score(...[await bisect1024(fits)].map((r) => [r, r.trials]).flat()),
      lightning: score(...[await lightningBinsearch(fits)].map((r) => [r, r.trials]).flat()),
      accelerate: score(...[await accelerateFindExecutable(fits)].map((r) => [r, r.trials]).flat()),
      ultralytics: score(...[await ultralyticsAutobatch((b) => runOnce(env, b), gpu.totalBytes)].map((r) => [r, r.trials]).flat()),
    };
    rows.push({
      gpu: gpu.id,
      workload: `${model} ${setup.mode} ${setup.precision} ${setup.optimizer}${setup.seq ? ` s${setup.seq}` : ""}${setup.image ? ` ${setup.image}²` : ""}`,
      fixedBytes,
      perSampleBytes,
      freeBytes,
      truth,
      exactSeed: exact.predicted,
      bytesAtTruth: truth > 0 ? deviceBytes(job, truth, { contextBytes: CONTEXT_BYTES }) : null,
      ...strategies,
    });
  }
}

const names = Object.keys(rows[0]).filter((k) => typeof rows[0][k] === "object" && rows[0][k] !== null && "runs" in rows[0][k]);
const summary = Object.fromEntries(
  names.map((name) => {
    const results = rows.map((r) => r[name]);
    return [name, { right: results.filter((r) => r.correct).length, cases: results.length, medianRuns: median(results.map((r) => r.runs)), maxRuns: Math.max(...results.map((r) => r.runs)), totalRuns: results.reduce((a, r) => a + r.runs, 0) }];
  }),
);
process.stdout.write(JSON.stringify({ contextBytes: CONTEXT_BYTES, gpus: GPUS.map(({ id, totalBytes, usedBytes }) => ({ id, totalBytes, usedBytes })), rows, summary }));

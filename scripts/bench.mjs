#!/usr/bin/env node
// Benchmarks vramfit on the build outputs (dist/, build/Release/): how fast what users call is, and how many probes.
// Usage and sections: `node scripts/bench.mjs --help` (docs/benchmarks.md shows a run).
// Needs only Node and the build outputs; the simulator is build/Release/libcudasim.so.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const SECTIONS = ["commands", "api", "native", "search", "modelMiss", "jobRuns"];
/** Sections run only when --sections names them: they need more than the build outputs. */
const OPTIONAL_SECTIONS = ["trace"];
const USAGE = `usage: node scripts/bench.mjs [--sections LIST] [--runs N] [--commands IDS] [--against DIR] [--quick] [--json] [--out FILE]

Times what users call, on the build outputs (run \`npm run build\` first), and counts probes.
Sections (all by default; --sections takes a comma-separated list):
  commands   each CLI command people wait on, timed as a process against \`node -e 0\`: runs
             alternate (node, then the command), each command's ratio is the median of the
             paired ratios; its goal (issue 22) and whether this run met it
  api        the library's answer for every preset on an H100-80GB: findMaxBatch on a plan just
             made by planMemory (never answered before), the same call again on that plan
             (already checked and answered), and planMemory itself
  native     memGetInfo and probes through the addon, against the simulated driver
  search     probes of the seeded device search over workloads x budgets on the simulator,
             against a bisection over [1, 1024] and Lightning's doubling-then-bisecting search
  modelMiss  the same on a simulator that rounds to 4 MiB, which the model (2 MiB) does not know
  jobRuns    runs of a real (simulated) job per answer: vramfit --exec against other searches
             (scripts/bench-jobs.mjs)
Only when named (--sections trace):
  trace      the step tracer (vramfit trace, scripts/bench-trace.mjs): Llama-2-7B and 70B at seq
             2048 uncached, the 7B again from the trace cache, the one-time compile; wall and CPU
             time, host memory, against issue 19's goals (needs VRAMFIT_TORCH_CPU_PYTHON; minutes)
Options:
  --sections LIST  which sections to run (${[...SECTIONS, ...OPTIONAL_SECTIONS].join(",")})
  --runs N         runs of each command (default 9; 3 with --quick)
  --commands IDS   commands: only these rows, comma-separated (raw, preset, presetJson, advice,
                   noAdvice, advice1Gpu, advice8Gpus, gpusFit, checkGpt3)
  --against DIR    commands: another checkout, built (a worktree of main, say): after each run of
                   node -e 0 both builds run the command, in turns first, so the two are timed
                   side by side under the same load; DIR's median and ratio in the last columns
  --quick          fewer runs, calls and cases (what test/cli/bench.test.ts runs)
  --json           print the JSON report instead of the tables
  --out FILE       also write the JSON report to FILE
  --help           this text
`;

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const simulator = resolve(root, "build", "Release", "libcudasim.so");
const cli = resolve(root, "bin", "vramfit.js");
const MiB = 2 ** 20;
const GiB = 2 ** 30;

let args;
try {
  ({ values: args } = parseArgs({
    options: {
      out: { type: "string" },
      json: { type: "boolean", default: false },
      quick: { type: "boolean", default: false },
      runs: { type: "string" },
      sections: { type: "string" },
      commands: { type: "string" },
      against: { type: "string" },
      help: { type: "boolean", default: false },
      // Internal: run only the search sweep against a simulator with this granularity, JSON on stdout.
      "sweep-worker": { type: "string" },
    },
  }));
} catch (error) {
  process.stderr.write(`bench: ${error.message}\n${USAGE}`);
  process.exit(2);
}
if (args.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
const quick = args.quick;
const sections = args.sections === undefined ? SECTIONS : args.sections.split(",").map((x) => x.trim());
for (const section of sections) {
  if (!SECTIONS.includes(section) && !OPTIONAL_SECTIONS.includes(section)) {
    process.stderr.write(`bench: --sections: no section "${section}" (known: ${[...SECTIONS, ...OPTIONAL_SECTIONS].join(", ")})\n`);
    process.exit(2);
  }
}
const runs = Number(args.runs ?? (quick ? 3 : 9));
if (!Number.isInteger(runs) || runs < 1) {
  process.stderr.write(`bench: --runs: expected a whole number ≥ 1, got ${args.runs}\n`);
  process.exit(2);
}
if (!existsSync(resolve(dirname(fileURLToPath(import.meta.url)), "..", "dist", "index.js"))) {
  process.stderr.write("bench: no dist/index.js: run `npm run build` first\n");
  process.exit(2);
}

// The simulator reads its configuration at cuInit, so it is set before the driver is loaded.
// Catalog GPUs as a process sees them; each has 512 MiB taken by a context (other than ours), and
// the H100 another 3 GiB used by a second process: five budgets in one simulated machine.
const { GPU_CATALOG } = await import("../dist/devices/catalog.js");
const SIM_GPUS = [
  ["T4", 512 * MiB],
  ["A100-40GB", 512 * MiB],
  ["A100-80GB", 512 * MiB],
  ["H100-80GB", 512 * MiB + 3 * GiB],
  ["H200", 512 * MiB],
].map(([id, usedBytes]) => {
  const gpu = GPU_CATALOG.find((g) => g.id === id);
  if (!gpu) throw new Error(`catalog has no ${id}`);
  return { id, name: gpu.name, totalBytes: gpu.totalBytes, usedBytes };
});
const QUICK_GPUS = ["T4", "H200"];
const simulatedGpus = quick ? SIM_GPUS.filter((g) => QUICK_GPUS.includes(g.id)) : SIM_GPUS;
process.env.VRAMFIT_CUDA_LIBRARY = simulator;
process.env.CUDASIM_DEVICES = simulatedGpus.map((g) => `${g.name}:${g.totalBytes}:${g.usedBytes}`).join(";");
if (args["sweep-worker"] !== undefined) process.env.CUDASIM_GRANULARITY = args["sweep-worker"];
else delete process.env.CUDASIM_GRANULARITY;
delete process.env.CUDASIM_FAIL;
// The simulator as it was when these figures were taken: no context cost, and every allocation in
// whole pages (the 2 MiB-per-tensor model's own assumption). Its defaults now disagree with the
// model (docs/simulator.md); the seeded search answers them once it probes upward (issue 11).
process.env.CUDASIM_CONTEXT_BYTES = "0";
process.env.CUDASIM_SMALL_ALLOC_MAX = "0";
delete process.env.CUDASIM_SYNC_DELAY_MS;

const { planMemory, findMaxBatch, resolveWorkload, searchMaxBatch, backend: openBackend } = await import("../dist/index.js");
const { bisect1024, lightningBinsearch } = await import("./batch-searches.mjs");
const { listPresets, presetWorkload } = await import("../dist/workload/presets.js");
const { deviceBatch } = await import("../dist/fit/findMaxBatch.js");
const { deviceFits } = await import("../dist/fit/device.js");
const { deviceAllocations } = await import("../dist/fit/allocator.js");

// --- statistics -------------------------------------------------------------------------------

const sorted = (xs) => [...xs].sort((a, b) => a - b);
const quantile = (xs, q) => {
  const s = sorted(xs);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};
const median = (xs) => {
  const s = sorted(xs);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const mean = (xs) => xs.reduce((sum, x) => sum + x, 0) / xs.length;
const round = (x, digits = 3) => (x === null || x === undefined ? x : Number(x.toFixed(digits)));

// --- workloads --------------------------------------------------------------------------------

/** The sweep: training and inference, CNNs and transformers, answers from 0 to well over 1024. */
const SWEEP_WORKLOADS = [
  { label: "resnet50 train fp32 momentum 224²", model: "resnet50", setup: { mode: "train", precision: "fp32", optimizer: "momentum", image: 224 } },
  { label: "resnet152 train fp32 momentum 224²", model: "resnet152", setup: { mode: "train", precision: "fp32", optimizer: "momentum", image: 224 } },
  { label: "vit-b16 train amp adamw", model: "vit-b16", setup: { mode: "train", precision: "amp", optimizer: "adamw" } },
  { label: "bert-large train amp adamw s512", model: "bert-large", setup: { mode: "train", precision: "amp", optimizer: "adamw", seq: 512 } },
  { label: "gpt2-medium train amp adamw s1024", model: "gpt2-medium", setup: { mode: "train", precision: "amp", optimizer: "adamw", seq: 1024 } },
  { label: "gpt2-xl train amp adamw s1024", model: "gpt2-xl", setup: { mode: "train", precision: "amp", optimizer: "adamw", seq: 1024 } },
  { label: "llama-2-7b train amp adamw s4096", model: "llama-2-7b", setup: { mode: "train", precision: "amp", optimizer: "adamw", seq: 4096 } },
  { label: "llama-2-7b infer fp16 s4096", model: "llama-2-7b", setup: { mode: "infer", precision: "fp16", optimizer: "adamw", seq: 4096 } },
  { label: "resnet50 train fp16 sgd 128²", model: "resnet50", setup: { mode: "train", precision: "fp16", optimizer: "sgd", image: 128 } },
  { label: "resnet18 infer fp16 224²", model: "resnet18", setup: { mode: "infer", precision: "fp16", optimizer: "adamw", image: 224 } },
];
const QUICK_WORKLOADS = ["resnet152 train fp32 momentum 224²", "llama-2-7b train amp adamw s4096", "resnet18 infer fp16 224²"];
const sweepWorkloads = quick ? SWEEP_WORKLOADS.filter((w) => QUICK_WORKLOADS.includes(w.label)) : SWEEP_WORKLOADS;

function planFor(model, setup) {
  const workload = presetWorkload(model);
  if (!workload) throw new Error(`no preset ${model}`);
  return planMemory(workload, setup);
}

// --- 1. The CLI, per command ------------------------------------------------------------------

const H100 = GPU_CATALOG.find((g) => g.id === "H100-80GB");
/** `--device all` on simulated H100s: CUDASIM_DEVICES with `count` identical entries. */
const simulatedH100s = (count) => ({
  VRAMFIT_CUDA_LIBRARY: simulator,
  CUDASIM_DEVICES: Array.from({ length: count }, () => `${H100.name}:${H100.totalBytes}:0`).join(";"),
});
const ADVICE_ARGS = ["batch", "--model", "llama-3.1-8b", "--seq", "4096"];

/**
 * The commands people wait on (issue 22), each with its goal: at most `ratio` × `node -e 0`, at
 * most `ms` wall, or at most `of` × another row's median. No GPU unless `env` names the simulator.
 */
const COMMANDS = [
  { id: "raw", args: ["batch", "--params", "1e9", "--per-sample", "1GiB", "--memory", "80GiB", "--json"], goal: { ratio: 1.5 } },
  { id: "preset", args: ["batch", "--model", "resnet152"], goal: { ratio: 2.5 }, note: "no GPU: four catalog GPUs" },
  { id: "presetJson", args: ["batch", "--analytic", "--model", "resnet152", "--image", "224", "--precision", "fp32", "--optimizer", "momentum", "--gpu", "H100-80GB", "--json"] },
  { id: "advice", args: ADVICE_ARGS, goal: { ms: 500 }, note: "does not fit: advice for four catalog GPUs" },
  { id: "noAdvice", args: [...ADVICE_ARGS, "--no-advice"], note: "the verdict only" },
  { id: "advice1Gpu", args: [...ADVICE_ARGS, "--device", "all"], env: simulatedH100s(1), note: "1 simulated H100" },
  { id: "advice8Gpus", args: [...ADVICE_ARGS, "--device", "all"], env: simulatedH100s(8), goal: { of: "advice1Gpu", ratio: 1.3 }, note: "8 simulated H100s" },
  { id: "gpusFit", args: ["gpus", "--fit", "--model", "resnet152", "--min-batch", "4096"], goal: { ms: 500 } },
  { id: "checkGpt3", args: ["check", "--model", "gpt3-175b", "--gpu", "H100-80GB", "--batch", "1"], goal: { ms: 500 }, note: "does not fit: advice" },
];
const QUICK_COMMANDS = ["raw", "preset", "presetJson", "noAdvice"];

/** Linux's clock ticks per second (`getconf CLK_TCK`), for /proc's CPU times; undefined elsewhere. */
const CLOCK_TICKS = (() => {
  if (process.platform !== "linux") return undefined;
  const ticks = Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout);
  return Number.isFinite(ticks) && ticks > 0 ? ticks : undefined;
})();

/**
 * CPU time (user + system, ms) of this process's children that have been waited for: /proc's
 * cutime + cstime, in clock ticks (10 ms at 100 Hz). Read around a spawnSync, it is that
 * command's CPU time — what a loaded machine does not inflate the way it inflates wall time.
 */
function childrenCpuMs() {
  if (CLOCK_TICKS === undefined) return undefined;
  try {
    const stat = readFileSync("/proc/self/stat", "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" "); // the name may hold spaces
    return ((Number(fields[13]) + Number(fields[14])) * 1000) / CLOCK_TICKS; // fields 16 and 17 of proc(5)
  } catch {
    return undefined;
  }
}

/** The other checkout's CLI for --against (its bin/vramfit.js), or undefined. */
const againstCli = args.against === undefined ? undefined : resolve(args.against, "bin", "vramfit.js");
if (againstCli !== undefined && !existsSync(againstCli)) {
  process.stderr.write(`bench: --against: expected a checkout with bin/vramfit.js, got ${args.against}\n`);
  process.exit(2);
}
const onlyCommands = args.commands?.split(",").map((id) => id.trim());
for (const id of onlyCommands ?? []) {
  if (!COMMANDS.some((c) => c.id === id)) {
    process.stderr.write(`bench: --commands: no command "${id}" (known: ${COMMANDS.map((c) => c.id).join(", ")})\n`);
    process.exit(2);
  }
}

function commandTimes(runs) {
  const commands = COMMANDS.filter((c) => (onlyCommands === undefined ? !quick || QUICK_COMMANDS.includes(c.id) : onlyCommands.includes(c.id)));
  // A bare environment, the same for all: no driver variables, nothing the CLI could pick up
  // (the simulated GPUs' rows add theirs). The CLI's code cache (bin/vramfit.js) in a folder of
  // this run's own: in a shared ~/.cache/vramfit, other checkouts' builds evict it (16 kept), and
  // a command that found none compiled its code again in a timed run.
  const bare = { PATH: process.env.PATH ?? "", XDG_CACHE_HOME: mkdtempSync(join(tmpdir(), "vramfit-bench-cache-")) };
  const time = (argv, env, { allowUsageError = false } = {}) => {
    const cpuBefore = childrenCpuMs();
    const started = performance.now();
    const run = spawnSync(process.execPath, argv, { env, encoding: "utf8", maxBuffer: 64 * MiB });
    const ms = performance.now() - started;
    const cpuAfter = childrenCpuMs();
    // 1 is an answer (does not fit), not a failure.
    if (run.status !== 0 && run.status !== 1 && !(allowUsageError && run.status === 2)) throw new Error(`${argv.join(" ")} exited ${run.status}: ${run.stderr}`);
    return { ms, cpuMs: cpuBefore === undefined || cpuAfter === undefined ? undefined : cpuAfter - cpuBefore, stdout: run.stdout, stderr: run.stderr, status: run.status };
  };
  const rows = commands.map((c) => ({ ...c, argv: [cli, ...c.args], envAll: { ...bare, ...c.env }, ms: [], cpuMs: [], nodeMs: [], nodeCpuMs: [], ratios: [], load: [], againstMs: [], againstRatios: [], againstCpuMs: [] }));
  // One unmeasured run of each fills the page cache and the CLI's code cache; then each run of a
  // command follows a run of `node -e 0`, and the commands take turns.
  time(["-e", "0"], bare);
  for (const row of rows) {
    const first = time(row.argv, row.envAll, { allowUsageError: true });
    row.status = first.status;
    // A build without the command's option (an older commit, benchmarked for comparison) exits 2: not timed.
    if (first.status === 2) row.unsupported = first.stderr.trim();
    else row.answer = row.args.includes("--json") ? summarize(JSON.parse(first.stdout)) : undefined;
    if (againstCli !== undefined && row.unsupported === undefined) {
      const other = time([againstCli, ...row.args], row.envAll, { allowUsageError: true });
      if (other.status === 2) row.againstUnsupported = other.stderr.trim();
    }
  }
  for (let i = 0; i < runs; i += 1) {
    for (const row of rows) {
      if (row.unsupported !== undefined) continue;
      const node = time(["-e", "0"], bare);
      // With --against, the other build runs right after this node -e 0 too (both ratios from one
      // minute's host), first in every other round so that neither always follows the other.
      const compared = againstCli !== undefined && row.againstUnsupported === undefined;
      const otherFirst = compared && i % 2 === 1 ? time([againstCli, ...row.args], row.envAll) : undefined;
      const command = time(row.argv, row.envAll);
      const other = compared ? (otherFirst ?? time([againstCli, ...row.args], row.envAll)) : undefined;
      if (other !== undefined) {
        row.againstMs.push(other.ms);
        row.againstRatios.push(other.ms / node.ms);
        if (other.cpuMs !== undefined) row.againstCpuMs.push(other.cpuMs);
      }
      row.nodeMs.push(node.ms);
      row.ms.push(command.ms);
      if (node.cpuMs !== undefined) row.nodeCpuMs.push(node.cpuMs);
      if (command.cpuMs !== undefined) row.cpuMs.push(command.cpuMs);
      row.ratios.push(command.ms / node.ms);
      row.load.push(loadavg()[0]);
    }
  }
  rmSync(bare.XDG_CACHE_HOME, { recursive: true, force: true });
  const out = rows.map((row) => row.unsupported !== undefined ? { id: row.id, command: `vramfit ${row.args.join(" ")}`, exitStatus: row.status, unsupported: row.unsupported } : ({
    id: row.id,
    command: `vramfit ${row.args.join(" ")}`,
    ...(row.env && { env: Object.entries(row.env).map(([k, v]) => `${k}=${k === "VRAMFIT_CUDA_LIBRARY" ? "build/Release/libcudasim.so" : v}`).join(" ") }),
    ...(row.note && { note: row.note }),
    exitStatus: row.status,
    ...(row.answer && { answer: row.answer }),
    medianMs: round(median(row.ms), 2),
    nodeMedianMs: round(median(row.nodeMs), 2),
    // Means as well: /proc counts CPU in clock ticks (10 ms), so medians move in 10 ms steps; the
    // mean of many runs resolves a difference of a millisecond or two, and load inflates CPU time
    // far less than wall time.
    ...(row.cpuMs.length > 0 && { medianCpuMs: round(median(row.cpuMs), 1), nodeMedianCpuMs: round(median(row.nodeCpuMs), 1), meanCpuMs: round(mean(row.cpuMs), 1), nodeMeanCpuMs: round(mean(row.nodeCpuMs), 1) }),
    ratio: round(median(row.ratios), 2),
    loadAverage: round(median(row.load), 2),
    ms: row.ms.map((x) => round(x, 2)),
    nodeMs: row.nodeMs.map((x) => round(x, 2)),
    ...(row.againstMs.length > 0 && { against: { cli: againstCli, medianMs: round(median(row.againstMs), 2), ratio: round(median(row.againstRatios), 2), ...(row.againstCpuMs.length > 0 && { meanCpuMs: round(mean(row.againstCpuMs), 1) }), ms: row.againstMs.map((x) => round(x, 2)) } }),
    ...(row.againstUnsupported !== undefined && { against: { cli: againstCli, unsupported: row.againstUnsupported } }),
    ...(row.goal && { goal: row.goal }),
  }));
  for (const row of out) {
    if (row.goal === undefined || row.unsupported !== undefined) continue;
    const base = row.goal.of === undefined ? undefined : out.find((r) => r.id === row.goal.of && r.unsupported === undefined);
    if (row.goal.of !== undefined && base === undefined) continue; // not run (--quick)
    row.goalText = row.goal.ms !== undefined ? `≤ ${row.goal.ms} ms` : base ? `≤ ${row.goal.ratio}× ${base.id}` : `≤ ${row.goal.ratio}× node -e 0`;
    row.measured = row.goal.ms !== undefined ? row.medianMs : base ? round(row.medianMs / base.medianMs, 2) : row.ratio;
    row.met = row.measured <= (row.goal.ms ?? row.goal.ratio);
  }
  return { runs, baseline: "node -e 0", rows: out };
}

/** What a --json answer says, in short: each target's batch and where it came from. */
function summarize(json) {
  const one = (r) => ({ batchSize: r.batchSize, source: r.source });
  return Array.isArray(json) ? json.map(one) : one(json);
}

// --- 2. The library's answer, in process ------------------------------------------------------

/** This process's CPU time so far (user + system, all its threads: GC helpers too), in ms. */
const cpuNowMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

/**
 * The median of `fn`'s time in ms over `rounds` calls, after `warm` unmeasured ones, wall and CPU
 * (under load the wall time holds the waits for a core; the CPU time does not); `prepare` runs
 * untimed before each.
 */
async function timed(fn, { rounds, warm = 1, prepare = () => undefined }) {
  const ms = [];
  const cpuMs = [];
  for (let r = 0; r < warm + rounds; r += 1) {
    const input = prepare();
    const cpuStarted = cpuNowMs();
    const started = performance.now();
    await fn(input);
    if (r >= warm) {
      ms.push(performance.now() - started);
      cpuMs.push(cpuNowMs() - cpuStarted);
    }
  }
  return { ms: median(ms), cpuMs: median(cpuMs) };
}

/** µs per call of `fn` on an unchanging input, wall and CPU, the medians of `rounds` rounds, each long enough to time (≥ minRoundMs). */
async function microseconds(fn, { rounds, minRoundMs }) {
  let perRound = 1;
  for (;;) {
    const started = performance.now();
    for (let i = 0; i < perRound; i += 1) await fn();
    if (performance.now() - started >= minRoundMs) break;
    perRound *= 2;
  }
  const samples = [];
  const cpuSamples = [];
  for (let r = 0; r < rounds; r += 1) {
    const cpuStarted = cpuNowMs();
    const started = performance.now();
    for (let i = 0; i < perRound; i += 1) await fn();
    samples.push(((performance.now() - started) * 1000) / perRound);
    cpuSamples.push(((cpuNowMs() - cpuStarted) * 1000) / perRound);
  }
  return { us: median(samples), cpuUs: median(cpuSamples) };
}

const API_TARGET_ID = "H100-80GB";

/**
 * What a script calls: `planMemory(workload, setup)` and `findMaxBatch(plan, { gpu })` from
 * dist/index.js. "New plan": every round answers a plan planMemory has just made (built untimed),
 * so nothing about it is known yet: it is checked and its step replayed. "Checked": the same call
 * again on a plan already answered. Warm: each preset's rounds follow unmeasured ones.
 */
async function apiAnswers() {
  const rounds = quick ? 3 : 9;
  const options = { gpu: API_TARGET_ID };
  const rows = [];
  for (const preset of listPresets()) {
    const setup = preset.kind === "cnn" ? { mode: "train", precision: "fp32", optimizer: "momentum" } : { mode: "train", precision: "amp", optimizer: "adamw" };
    const workload = resolveWorkload({ model: preset.name });
    const plan = planMemory(workload, setup);
    const answer = await findMaxBatch(plan, options);
    const planned = await timed(() => planMemory(workload, setup), { rounds });
    const newPlan = await timed((fresh) => findMaxBatch(fresh, options), { rounds, warm: 2, prepare: () => planMemory(workload, setup) });
    const checked = await microseconds(() => findMaxBatch(plan, options), quick ? { rounds: 3, minRoundMs: 5 } : { rounds: 7, minRoundMs: 40 });
    rows.push({
      model: preset.name,
      setup: `${setup.mode} ${setup.precision} ${setup.optimizer}`,
      tensors: plan.tensors.length,
      batchSize: answer.batchSize,
      planMs: round(planned.ms, 2),
      planCpuMs: round(planned.cpuMs, 2),
      newPlanMs: round(newPlan.ms, 3),
      newPlanCpuMs: round(newPlan.cpuMs, 3),
      checkedUs: round(checked.us, 2),
      checkedCpuUs: round(checked.cpuUs, 2),
    });
  }
  const worst = (key) => Math.max(...rows.map((r) => r[key]));
  return {
    target: API_TARGET_ID,
    rows,
    goals: [
      { what: "findMaxBatch on a new plan, worst preset", goalMs: 5, measuredMs: worst("newPlanMs"), met: worst("newPlanMs") <= 5, measuredCpuMs: worst("newPlanCpuMs") },
      { what: "findMaxBatch on a checked plan, worst preset", goalMs: 0.2, measuredMs: round(worst("checkedUs") / 1000, 4), met: worst("checkedUs") <= 200, measuredCpuMs: round(worst("checkedCpuUs") / 1000, 4) },
    ],
  };
}

// --- 3. Native call overhead (simulated driver) -----------------------------------------------

async function nativeOverhead(addon) {
  const calls = quick ? 200 : 5000;
  const measure = async (fn) => {
    for (let i = 0; i < 50; i += 1) await fn(); // warm: context retained, worker threads up
    const us = [];
    for (let i = 0; i < calls; i += 1) {
      const started = performance.now();
      await fn();
      us.push((performance.now() - started) * 1000);
    }
    return { calls, medianUs: round(median(us), 2), p90Us: round(quantile(us, 0.9), 2) };
  };
  const plan = planFor("resnet152", { mode: "train", precision: "fp32", optimizer: "momentum", image: 224 });
  // What a probe allocates: the segments PyTorch's caching allocator would hold at batch 64.
  const sizes = deviceAllocations(plan, 64, "pytorch");
  return {
    driver: "build/Release/libcudasim.so (simulated)",
    memGetInfo: await measure(() => addon.memGetInfo(0)),
    emptyProbe: await measure(() => addon.probe(0, [], { touch: false })),
    resnet152Batch64Probe: { allocations: sizes.length, touch: true, ...(await measure(() => addon.probe(0, sizes, { touch: true }))) },
    // The cost of touching (cuMemsetD8 + synchronize) against allocating only: on the simulator
    // a memset writes nothing, so this is the call overhead alone; scripts/gpu-validate.mjs
    // measures it on a GPU (touchCost).
    resnet152Batch64ProbeUntouched: { allocations: sizes.length, touch: false, ...(await measure(() => addon.probe(0, sizes, { touch: false }))) },
  };
}

// --- 4. Probe counts: seeded search against the common searches -----------------------------

async function searchSweep(addon, devices) {
  const rows = [];
  for (const device of devices) {
    const { freeBytes } = await addon.memGetInfo(device.ordinal);
    for (const workload of sweepWorkloads) {
      const plan = planFor(workload.model, workload.setup);
      // A user's routine meets the device directly: every trial is a real allocation of the
      // segments the job would hold. No reserve and no job context here, for any of the searches:
      // the sweep compares how they search, on the same question.
      // The job's own allocator meets a device of this size: the step replayed at the free memory, its
      // out-of-memory path's frees included, and where the driver grants less than that replay counted on
      // (a granularity the model misses), replayed again at the room the driver gave (the device's retry):
      // the same fits the seeded search probes, through a fresh evaluator for each question.
      const rawFits = async (batch) => deviceFits(addon, device.ordinal, plan, { allocator: "pytorch", floorBytes: 0, touch: true, capacityBytes: freeBytes }).fits(batch);
      const seeded = await deviceBatch({ kind: "device", addon, device }, plan, { reserveBytes: 0, jobContextBytes: 0, lock: false });
      // The truth, checked independently of the search: b fits and b + 1 does not.
      const truth = seeded.batchSize;
      // fits(b) need not be monotone, so an answer is right when it is a boundary: b fits (or is 0) and b + 1 does not.
      const isBoundary = async (b) => (b === 0 || (await rawFits(b))) && !(await rawFits(b + 1));
      const verified = await isBoundary(truth);
      const bisect = await bisect1024(rawFits);
      const lightning = await lightningBinsearch(rawFits);
      // What a miss costs: the same search seeded off by a factor (as a wrong model would).
      const seedErrors = {};
      if (truth > 0) {
        for (const factor of [0.5, 0.9, 1.1, 2]) {
          const evaluator = deviceFits(addon, device.ordinal, plan, { allocator: "pytorch", floorBytes: 0, touch: true, capacityBytes: freeBytes });
          const result = await searchMaxBatch(evaluator.fits, { seed: Math.max(1, Math.round(truth * factor)) });
          // fits(b) is not monotone in b (the allocator's segments), so a seed off the model's may end at
          // another boundary: what the search claims must still hold, b fits and b + 1 does not.
          const found = result.batchSize;
          if ((found > 0 && !(await rawFits(found))) || (await rawFits(found + 1))) throw new Error(`seed ×${factor} found ${found}, which is not a boundary (b fits, b + 1 does not)`);
          seedErrors[`x${factor}`] = evaluator.probes();
        }
      }
      rows.push({
        gpu: device.name,
        freeBytes,
        workload: workload.label,
        truth,
        verified,
        seeded: { batchSize: seeded.batchSize, probes: seeded.probes, predicted: seeded.predictedBatchSize, elapsedMs: round(seeded.elapsedMs, 3) },
        bisect1024: { batchSize: bisect.batchSize, trials: bisect.trials, correct: await isBoundary(bisect.batchSize), capped: truth > 1024 },
        lightning: { batchSize: lightning.batchSize, trials: lightning.trials, correct: await isBoundary(lightning.batchSize), trace: lightning.trace.map((t) => [t.batch, t.fits]) },
        seedErrorProbes: seedErrors,
      });
    }
  }
  const sum = (f) => rows.reduce((total, row) => total + f(row), 0);
  const summary = {
    cases: rows.length,
    allVerified: rows.every((r) => r.verified),
    seeded: { probes: sum((r) => r.seeded.probes), maxProbes: Math.max(...rows.map((r) => r.seeded.probes)), wrong: sum((r) => (r.seeded.batchSize === r.truth ? 0 : 1)) },
    bisect1024: { trials: sum((r) => r.bisect1024.trials), wrong: sum((r) => (r.bisect1024.correct ? 0 : 1)), capped: sum((r) => (r.bisect1024.capped ? 1 : 0)), nothingFits: sum((r) => (r.truth === 0 ? 1 : 0)) },
    lightning: { trials: sum((r) => r.lightning.trials), maxTrials: Math.max(...rows.map((r) => r.lightning.trials)), wrong: sum((r) => (r.lightning.correct ? 0 : 1)) },
  };
  return { summary, rows };
}

async function simulatorBackend() {
  if (!existsSync(simulator)) throw new Error(`missing ${simulator}: run \`npm run build\``);
  const backend = await openBackend();
  if (backend.kind !== "cuda") throw new Error(`the simulated driver did not load: ${backend.reason}`);
  return backend.addon;
}

// --- the internal worker: the sweep on a simulator with another granularity -------------------

if (args["sweep-worker"] !== undefined) {
  const addon = await simulatorBackend();
  process.stdout.write(JSON.stringify(await searchSweep(addon, await addon.devices())));
  process.exit(0);
}

// --- run --------------------------------------------------------------------------------------

const started = performance.now();
const cpuModel = cpus()[0]?.model ?? "unknown";
const report = {
  startedAt: new Date().toISOString(),
  quick,
  sections,
  machine: { node: process.version, platform: `${process.platform}-${process.arch}`, cpus: cpus().length, cpuModel, loadAverageAtStart: round(loadavg()[0], 2) },
};
const log = (message) => process.stderr.write(`bench: ${message}\n`);

if (sections.includes("commands")) {
  log("the CLI per command, against node -e 0");
  report.commands = commandTimes(runs);
}
if (sections.includes("api")) {
  log("the library's answer per preset");
  report.api = await apiAnswers();
}
const needsSimulator = ["native", "search", "modelMiss"].some((x) => sections.includes(x));
const addon = needsSimulator ? await simulatorBackend() : undefined;
const devices = addon ? await addon.devices() : [];
if (sections.includes("native")) {
  log("native call overhead (simulator)");
  report.native = await nativeOverhead(addon);
}
if (sections.includes("search")) {
  log("probe counts (simulator, 2 MiB granularity)");
  report.search = {
    simulator: simulatedGpus.map((g) => ({ gpu: g.name, totalBytes: g.totalBytes, usedBytes: g.usedBytes })),
    granularityBytes: 2 * MiB,
    ...(await searchSweep(addon, devices)),
  };
}
if (sections.includes("modelMiss")) {
  log("probe counts (simulator, 4 MiB granularity: a model miss)");
  const worker = spawnSync(process.execPath, [fileURLToPath(import.meta.url), "--sweep-worker", String(4 * MiB), ...(quick ? ["--quick"] : [])], {
    encoding: "utf8",
    env: process.env,
    maxBuffer: 64 * MiB,
  });
  if (worker.status !== 0) throw new Error(`sweep worker failed (${worker.status}): ${worker.stderr}`);
  report.modelMiss = { granularityBytes: 4 * MiB, modelGranularityBytes: 2 * MiB, ...JSON.parse(worker.stdout) };
}
if (sections.includes("jobRuns")) {
  log("runs of a real job per answer: vramfit --exec against today's searches (scripts/bench-jobs.mjs)");
  const jobs = spawnSync(process.execPath, [resolve(root, "scripts", "bench-jobs.mjs"), ...(quick ? ["--quick"] : [])], { encoding: "utf8", maxBuffer: 64 * MiB });
  if (jobs.status !== 0) throw new Error(`bench-jobs failed (${jobs.status}): ${jobs.stderr}`);
  report.jobRuns = JSON.parse(jobs.stdout);
}
if (sections.includes("trace")) {
  log("the step tracer (scripts/bench-trace.mjs)");
  const traced = spawnSync(process.execPath, [resolve(root, "scripts", "bench-trace.mjs"), "--json"], { encoding: "utf8", maxBuffer: 64 * MiB });
  report.trace = traced.status === 0 ? JSON.parse(traced.stdout) : { notRun: traced.stderr.trim().split("\n").at(-1) };
}
report.machine.loadAverageAtEnd = round(loadavg()[0], 2);
report.elapsedSeconds = round((performance.now() - started) / 1000, 1);

if (args.out) writeFileSync(args.out, `${JSON.stringify(report, null, 2)}\n`);
if (args.json) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
else process.stdout.write(renderTables(report));

// --- the tables -------------------------------------------------------------------------------

function table(headers, rows) {
  const cells = [headers, ...rows.map((r) => r.map((c) => (c === null || c === undefined ? "-" : String(c))))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => r[i].length)));
  return cells.map((r) => r.map((c, i) => c.padEnd(widths[i])).join("  ").trimEnd()).join("\n") + "\n";
}

function renderTables(r) {
  const out = [];
  out.push(`machine: ${r.machine.cpus} × ${r.machine.cpuModel}, node ${r.machine.node}, load average ${r.machine.loadAverageAtStart} → ${r.machine.loadAverageAtEnd}${r.quick ? " (quick mode)" : ""}\n`);
  if (r.commands) {
    const c = r.commands;
    out.push(`\nthe CLI per command: ${c.runs} runs each, every one right after a run of node -e 0; ratio = median of the paired ratios; CPU = user + system (medians, and means where two builds are compared); load = the 1-minute load average (median over its runs)\n`);
    const against = c.rows.some((x) => x.against !== undefined);
    if (against) out.push(`after each node -e 0 the command ran on this build and on ${c.rows.find((x) => x.against)?.against.cli} (in turns first): "against" columns\n`);
    const againstCells = (x) => (!against ? [] : x.against === undefined ? ["-", "-", "-"] : x.against.unsupported !== undefined ? ["not run: exit 2", "-", "-"] : [x.against.medianMs, `${x.against.ratio}×`, `${x.meanCpuMs ?? "-"} / ${x.against.meanCpuMs ?? "-"}`]);
    out.push(table(["command", "median ms", "CPU ms", "node -e 0 ms", "its CPU ms", "load", "× node -e 0", "goal", "measured", "met", ...(against ? ["against ms", "against × node -e 0", "CPU mean this / against"] : [])], c.rows.map((x) => x.unsupported !== undefined ? [x.command, `not run: exit ${x.exitStatus}`, "-", "-", "-", "-", "-", "-", "-", "-", ...againstCells(x)] : [
      `${x.command}${x.env ? ` (${x.note})` : ""}`,
      x.medianMs,
      x.medianCpuMs,
      x.nodeMedianMs,
      x.nodeMedianCpuMs,
      x.loadAverage,
      `${x.ratio}×`,
      x.goalText,
      x.measured === undefined ? undefined : x.goal.ms !== undefined ? `${x.measured} ms` : `${x.measured}×`,
      x.met === undefined ? undefined : x.met ? "yes" : "NO",
      ...againstCells(x),
    ])));
  }
  if (r.api) {
    out.push(`\nthe library's answer in process: findMaxBatch(plan, { gpu: "${r.api.target}" }) (medians)\n`);
    out.push(table(["preset", "setup", "tensors", "batch", "planMemory ms", "CPU ms", "answer on a new plan ms", "CPU ms", "answer on a checked plan µs", "CPU µs"], r.api.rows.map((x) => [x.model, x.setup, x.tensors, x.batchSize, x.planMs, x.planCpuMs, x.newPlanMs, x.newPlanCpuMs, x.checkedUs, x.checkedCpuUs])));
    for (const g of r.api.goals) out.push(`${g.what}: ${g.measuredMs} ms (goal ≤ ${g.goalMs} ms: ${g.met ? "met" : "NOT met"}); CPU ${g.measuredCpuMs} ms\n`);
  }
  const n = r.native;
  if (n) {
    out.push(`\nnative calls against the simulated driver\n`);
    out.push(table(["call", "calls", "median µs", "p90 µs"], [
      ["memGetInfo", n.memGetInfo.calls, n.memGetInfo.medianUs, n.memGetInfo.p90Us],
      ["probe([])", n.emptyProbe.calls, n.emptyProbe.medianUs, n.emptyProbe.p90Us],
      [`probe(resnet152 b64: ${n.resnet152Batch64Probe.allocations} allocations, touched)`, n.resnet152Batch64Probe.calls, n.resnet152Batch64Probe.medianUs, n.resnet152Batch64Probe.p90Us],
    ]));
  }
  for (const [title, s] of [["probes per answer, simulator at 2 MiB granularity (the model's)", r.search], ["probes per answer, simulator at 4 MiB granularity (a model miss)", r.modelMiss]]) {
    if (!s) continue;
    out.push(`\n${title}\n`);
    out.push(table(["gpu", "workload", "answer", "seeded", "bisect[1,1024]", "lightning", "seed ×0.5/×0.9/×1.1/×2"], s.rows.map((x) => [
      x.gpu,
      x.workload,
      x.truth,
      `${x.seeded.probes}${x.seeded.batchSize === x.truth ? "" : ` → ${x.seeded.batchSize} WRONG`}`,
      `${x.bisect1024.trials}${x.bisect1024.correct ? "" : ` → ${x.bisect1024.batchSize} WRONG`}`,
      `${x.lightning.trials}${x.lightning.correct ? "" : ` → ${x.lightning.batchSize} WRONG`}`,
      x.truth > 0 ? Object.values(x.seedErrorProbes).join("/") : "-",
    ])));
    const m = s.summary;
    out.push(`total over ${m.cases} cases: seeded ${m.seeded.probes} probes (max ${m.seeded.maxProbes}, ${m.seeded.wrong} wrong); ` +
      `bisect[1,1024] ${m.bisect1024.trials} trials (${m.bisect1024.wrong} wrong: ${m.bisect1024.capped} capped at 1024, ${m.bisect1024.nothingFits} where nothing fits); ` +
      `lightning ${m.lightning.trials} trials (max ${m.lightning.maxTrials}, ${m.lightning.wrong} wrong)\n`);
  }
  const j = r.jobRuns;
  if (j) {
    const strategies = Object.keys(j.summary);
    out.push(`\nruns of the real job per answer (simulated jobs, scripts/bench-jobs.mjs): runs, and → answer when it is not the largest batch that fits\n`);
    out.push(table(["gpu", "workload", "answer", ...strategies], j.rows.map((x) => [x.gpu, x.workload, x.truth, ...strategies.map((s) => `${x[s].runs}${x[s].correct ? "" : ` → ${x[s].batchSize}`}`)])));
    out.push(table(["strategy", "right", "median runs", "max runs", "total runs"], strategies.map((s) => [s, `${j.summary[s].right}/${j.summary[s].cases}`, j.summary[s].medianRuns, j.summary[s].maxRuns, j.summary[s].totalRuns])));
  }
  const t = r.trace;
  if (t) {
    out.push(`\nthe step tracer (scripts/bench-trace.mjs, ${t.python ?? "no Python"}): wall and CPU time, peak host memory; issue 19's goals judged on each\n`);
    if (t.notRun !== undefined) out.push(`not run: ${t.notRun}\n`);
    else out.push(table(["run", "wall s", "cpu s", "host MiB (PSS)", "goal", "wall met", "cpu met", "host < 1 GiB"], t.runs.map((x) => [x.status === 0 ? x.label : `${x.label} (FAILED: exit ${x.status})`, x.wallS, x.cpuS, x.hostPeakMiB, x.goalS === undefined ? "-" : `≤ ${x.goalS} s`, x.goalS === undefined ? "-" : x.wallMet ? "yes" : "NO", x.goalS === undefined ? "-" : x.cpuMet ? "yes" : "NO", x.hostMet ? "yes" : "NO"])));
  }
  out.push(`\n${r.elapsedSeconds} s in all\n`);
  return out.join("");
}

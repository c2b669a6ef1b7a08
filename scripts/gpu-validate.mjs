#!/usr/bin/env node
// Validates vramfit on a real NVIDIA GPU (or the simulator) and writes a JSON report.
// Needs only Node and the build outputs (dist/, build/Release/, node_modules/commander).
//   node scripts/gpu-validate.mjs [--device N] [--out report.json]
// Checks: info against nvidia-smi; the probe boundary; free memory back at baseline after 100
// probes; a batch search for an affine workload against the analytic prediction; timings; and
// through NVML and the CLI: NVML against nvidia-smi, no context created by `vramfit info`,
// SIGINT during a probe, and concurrent vramfit processes on one GPU.
import { execFileSync, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { openBackend, openNvml } from "../dist/native/binding.js";
import { inventory } from "../dist/devices/inventory.js";
import { deviceBatch } from "../dist/fit/findMaxBatch.js";
import { buildPlan } from "../dist/plan/buildPlan.js";
import { createProgress, showProbes } from "../dist/cli/progress.js";

const MiB = 2 ** 20;
const GiB = 2 ** 30;
const GRANULE = 2 * MiB;
const { values } = parseArgs({ options: { device: { type: "string", default: "0" }, out: { type: "string" } } });
const ordinal = Number(values.device);

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
async function timed(fn) {
  const start = performance.now();
  const value = await fn();
  return { value, ms: performance.now() - start };
}

function nvidiaSmi() {
  try {
    const text = execFileSync("nvidia-smi", ["--query-gpu=index,uuid,memory.total,memory.free,memory.used", "--format=csv,noheader,nounits"], { encoding: "utf8" });
    return text.trim().split("\n").map((line) => {
      const [index, uuid, total, free, used] = line.split(",").map((s) => s.trim());
      return { index: Number(index), uuid, totalMiB: Number(total), freeMiB: Number(free), usedMiB: Number(used) };
    });
  } catch (error) {
    return { unavailable: String(error.message).split("\n")[0] };
  }
}

const report = { startedAt: new Date().toISOString(), node: process.version, checks: {}, timingsMs: {} };
const check = (name, pass, details) => {
  report.checks[name] = { pass, ...details };
};

// A progress line on stderr while it runs, on a terminal only; the report goes to stdout.
const progress = createProgress();
let step = "loading the driver";
const load = await timed(() => openBackend());
const backend = load.value;
report.timingsMs.driverLoad = load.ms;
if (backend.kind === "none") {
  report.backend = { kind: "none", reason: backend.reason };
  finish(1);
}
const { addon } = backend;
const onProbe = showProbes(progress, () => `validate: ${step}`);
/** addon.probe, shown on the progress line like the library's own probes. */
const probe = async (sizes, options) => {
  const event = { ordinal, batch: 0 };
  onProbe?.({ ...event, phase: "start", bytes: sizes.reduce((a, b) => a + b, 0), allocations: sizes.length });
  let result;
  try {
    return (result = await addon.probe(ordinal, sizes, options));
  } finally {
    onProbe?.({ ...event, phase: "end", fits: result?.fits ?? false, limit: result?.limit ?? null });
  }
};
report.backend = { kind: "cuda", driverVersion: backend.driver.version, library: backend.driver.libraryPath };
const device = (await addon.devices()).find((d) => d.ordinal === ordinal);
if (!device) {
  report.error = `device ${ordinal} not found`;
  finish(1);
}
report.device = device;

// 1. Context creation (the first memGetInfo retains the primary context), then steady-state calls.
step = "1/13 context creation";
progress.update(`validate: ${step}`);
const first = await timed(() => addon.memGetInfo(ordinal));
report.timingsMs.contextCreationAndFirstMemGetInfo = first.ms;
const calls = [];
for (let i = 0; i < 50; i += 1) calls.push((await timed(() => addon.memGetInfo(ordinal))).ms);
report.timingsMs.memGetInfoMedian = median(calls);

// 2. info against nvidia-smi (which counts memory in MiB; our context is part of its "used").
step = "2/13 info against nvidia-smi";
progress.update(`validate: ${step}`);
const smi = nvidiaSmi();
const mem = await addon.memGetInfo(ordinal);
if (Array.isArray(smi)) {
  const row = smi.find((r) => r.uuid === device.uuid) ?? smi[ordinal];
  const totalDiffMiB = mem.totalBytes / MiB - row.totalMiB;
  const freeDiffMiB = mem.freeBytes / MiB - row.freeMiB;
  check("infoMatchesNvidiaSmi", Math.abs(totalDiffMiB) <= 1 && Math.abs(freeDiffMiB) <= 64, {
    vramfit: { totalBytes: mem.totalBytes, freeBytes: mem.freeBytes },
    nvidiaSmi: row,
    totalDiffMiB,
    freeDiffMiB,
    uuidMatches: row.uuid === device.uuid,
  });
} else {
  check("infoMatchesNvidiaSmi", null, { skipped: `nvidia-smi: ${smi.unavailable}` });
}

// 3. The probe boundary: the largest single allocation that fits, found by bisection in granules.
step = "3/13 probe boundary";
progress.update(`validate: ${step}`);
const baseline = (await addon.memGetInfo(ordinal)).freeBytes;
let low = 0; // granules known to fit
let high = Math.floor(baseline / GRANULE) + 1; // granules known not to fit
let boundaryProbes = 0;
while (high - low > 1) {
  const middle = Math.floor((low + high) / 2);
  boundaryProbes += 1;
  if ((await probe([middle * GRANULE], { touch: false })).fits) low = middle;
  else high = middle;
}
const oneMore = await probe([high * GRANULE], { touch: false });
check("probeBoundary", !oneMore.fits && low > 0, {
  freeBytes: baseline,
  largestAllocationBytes: low * GRANULE,
  gapBytes: baseline - low * GRANULE,
  probes: boundaryProbes + 1,
});

// 4. No leak: 100 probes, fitting and not, touched and not; free memory back at its baseline.
step = "4/13 100 probes, no leak";
progress.update(`validate: ${step}`);
const before = (await addon.memGetInfo(ordinal)).freeBytes;
let fitted = 0;
for (let i = 0; i < 100; i += 1) {
  const sizes = i % 2 === 0 ? [256 * MiB, 64 * MiB + 1, 1] : [Math.floor(before / 2), Math.floor(before / 2), GiB];
  const result = await probe(sizes, { touch: i % 4 === 0 });
  if (result.fits) fitted += 1;
}
const after = (await addon.memGetInfo(ordinal)).freeBytes;
check("noLeakAfter100Probes", after === before, { freeBefore: before, freeAfter: after, probesThatFit: fitted });

// 5. One probe's time: 1 GiB in 4 tensors, touched.
step = "5/13 probe timing";
progress.update(`validate: ${step}`);
const probeTimes = [];
for (let i = 0; i < 5; i += 1) probeTimes.push((await timed(() => probe([GiB / 4, GiB / 4, GiB / 4, GiB / 4], { touch: true }))).ms);
report.timingsMs.probe1GiBTouchedMedian = median(probeTimes);

// 6. A batch search: 1e9 parameters in fp32 with SGD, 512 MiB per sample.
step = "6/13 batch search";
progress.update(`validate: ${step}`);
const plan = buildPlan(
  { kind: "affine", parameterCount: 1e9, perSampleBytes: 512 * MiB, fixedBytes: 0 },
  { mode: "train", precision: "fp32", optimizer: "sgd" },
);
const search = await deviceBatch({ kind: "device", addon, device, nvml: await openNvml() }, plan, { touch: true, ...(onProbe && { onProbe }) });
check("batchSearch", search.batchSize > 0 && search.probes <= 3, {
  batchSize: search.batchSize,
  predictedBatchSize: search.predictedBatchSize,
  probes: search.probes,
  elapsedMs: search.elapsedMs,
  freeBytes: search.device.freeBytes,
});

// 7-10: NVML and the CLI. NVML readings need no context; the CLI runs as a job would run it.
const nvml = await openNvml();
report.nvml = nvml.kind === "nvml" ? nvml.info : { unavailable: nvml.reason };
const cli = (args, env = {}) => {
  const child = spawn(process.execPath, [new URL("../bin/vramfit.js", import.meta.url).pathname, ...args], { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  const out = { stdout: "", stderr: "" };
  child.stdout.on("data", (chunk) => (out.stdout += chunk));
  child.stderr.on("data", (chunk) => (out.stderr += chunk));
  const finished = new Promise((resolve) => child.on("close", (status, signal) => resolve({ ...out, status, signal })));
  return { child, finished };
};
const nvmlUsed = async () => {
  const entry = (await nvml.addon.nvmlDevices()).find((d) => d.uuid?.slice(4) === device.uuid.slice(4));
  return entry?.memory ? entry.memory.usedBytes : undefined;
};
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const workload = ["--params", "1e9", "--per-sample", "512MiB", "--precision", "fp32", "--optimizer", "sgd", "--device", String(ordinal)];

step = "7/13 NVML against nvidia-smi";
progress.update(`validate: ${step}`);
if (nvml.kind !== "nvml") {
  check("nvmlMatchesNvidiaSmi", null, { skipped: `NVML: ${nvml.reason}` });
} else {
  const reported = (await inventory(backend.addon, nvml)).find((d) => d.ordinal === ordinal);
  const row = Array.isArray(smi) ? nvidiaSmi().find((r) => r.uuid === reported.uuid) : undefined;
  check("nvmlMatchesNvidiaSmi", row === undefined ? null : reported.memorySource === "nvml" && Math.abs(reported.freeBytes / MiB - row.freeMiB) <= 64, {
    memorySource: reported.memorySource,
    memorySourceReason: reported.memorySourceReason,
    vramfit: { totalBytes: reported.totalBytes, freeBytes: reported.freeBytes, reservedBytes: reported.reservedBytes, processes: reported.processes },
    nvidiaSmi: row ?? null,
  });
}

step = "8/13 vramfit info creates no context";
progress.update(`validate: ${step}`);
if (nvml.kind !== "nvml") {
  check("infoCreatesNoContext", null, { skipped: `NVML: ${nvml.reason}` });
} else {
  // Device memory used, sampled every 5 ms while `vramfit info` runs: a context would add hundreds of MiB.
  const usedBefore = await nvmlUsed();
  const info = cli(["info", "--json", "--require-gpu"]);
  let peak = usedBefore;
  let running = true;
  info.finished.then(() => (running = false));
  while (running) {
    peak = Math.max(peak, await nvmlUsed());
    await sleep(5);
  }
  const result = await info.finished;
  const reported = JSON.parse(result.stdout).devices.find((d) => d.ordinal === ordinal);
  check("infoCreatesNoContext", result.status === 0 && reported.memorySource === "nvml" && peak - usedBefore < 64 * MiB, {
    memorySource: reported.memorySource,
    usedBeforeBytes: usedBefore,
    peakUsedDuringBytes: peak,
  });
}

step = "9/13 SIGINT during a probe";
progress.update(`validate: ${step}`);
if (nvml.kind !== "nvml") {
  check("sigintDuringProbe", null, { skipped: `NVML: ${nvml.reason}` });
} else {
  const usedBefore = await nvmlUsed();
  const job = cli(["batch", ...workload]);
  let finishedEarly = false;
  job.finished.then(() => (finishedEarly = true));
  let usedAtSignal;
  const deadline = performance.now() + 60_000;
  while (!finishedEarly && performance.now() < deadline) {
    const used = await nvmlUsed();
    if (used - usedBefore > GiB) {
      usedAtSignal = used; // a probe holds memory now
      job.child.kill("SIGINT");
      break;
    }
    await sleep(1);
  }
  if (usedAtSignal === undefined && !finishedEarly) job.child.kill("SIGINT");
  const result = await job.finished;
  await sleep(200); // the driver's own accounting settles after exit
  const usedAfter = await nvmlUsed();
  // A search that ended before any probe was seen in flight proves nothing either way: skipped.
  const pass = usedAtSignal === undefined && result.status === 0 ? null : result.status === 130 && usedAfter - usedBefore < 16 * MiB;
  check("sigintDuringProbe", pass, {
    status: result.status,
    signalLandedMidProbe: usedAtSignal !== undefined,
    usedBeforeBytes: usedBefore,
    usedAtSignalBytes: usedAtSignal ?? null,
    usedAfterBytes: usedAfter,
    stderr: result.stderr.trim(),
  });
}

step = "10/13 concurrent vramfit processes";
progress.update(`validate: ${step}`);
const alone = await cli(["batch", ...workload, "--json"]).finished;
const aloneAnswer = alone.status === 0 ? JSON.parse(alone.stdout).batchSize : undefined;
const together = await Promise.all(Array.from({ length: 4 }, () => cli(["batch", ...workload, "--json"]).finished));
const answers = together.map((r) => (r.status === 0 ? JSON.parse(r.stdout).batchSize : `exit ${r.status}: ${r.stderr.trim()}`));
check("concurrentProcesses", aloneAnswer !== undefined && answers.every((a) => a === aloneAnswer), {
  alone: aloneAnswer ?? alone.stderr.trim(),
  together: answers,
  waited: together.filter((r) => /is probing this device; waiting/.test(r.stderr)).length,
});

// 11-13: the context model, what touching costs, and what keeping the context warm saves (issue 11).
const library = await import("../dist/index.js");
const heldByThisProcess = async () => {
  const entry = (await nvml.addon.nvmlDevices()).find((d) => d.uuid?.slice(4) === device.uuid.slice(4));
  return entry?.processes?.find((p) => p.pid === process.pid)?.usedBytes ?? 0;
};

step = "11/13 vramfit's own context, released";
progress.update(`validate: ${step}`);
if (nvml.kind !== "nvml") {
  check("contextReleased", null, { skipped: `NVML: ${nvml.reason}` });
} else {
  // The addon has held this device's context since step 1: NVML's figure for this process is its
  // cost (what the device search credits against the job's context), then nothing once released.
  await addon.memGetInfo(ordinal);
  const ownContextBytes = await heldByThisProcess();
  await addon.releaseDevice(ordinal);
  await sleep(100);
  const afterRelease = await heldByThisProcess();
  const result = await library.findMaxBatch(plan, { device: ordinal });
  await sleep(100);
  const afterLibraryCall = await heldByThisProcess();
  check("contextReleased", afterRelease === 0 && afterLibraryCall === 0, {
    ownContextBytes,
    jobContextBytes: result.jobContextBytes,
    ownContextBytesSeenBySearch: result.ownContextBytes,
    heldAfterReleaseBytes: afterRelease,
    heldAfterFindMaxBatchBytes: afterLibraryCall,
  });
}

step = "12/13 the cost of touching";
progress.update(`validate: ${step}`);
{
  // A quarter of the free memory in 1 GiB allocations, written (cuMemsetD8 + synchronize) or not:
  // touching stays the default only while this difference is small next to a search.
  const free = (await addon.memGetInfo(ordinal)).freeBytes;
  const sizes = Array.from({ length: Math.max(1, Math.floor(free / 4 / GiB)) }, () => GiB);
  const touched = [];
  const untouched = [];
  for (let i = 0; i < 3; i += 1) {
    touched.push((await timed(() => probe(sizes, { touch: true }))).ms);
    untouched.push((await timed(() => probe(sizes, { touch: false }))).ms);
  }
  const bytes = sizes.reduce((a, b) => a + b, 0);
  const touchMs = median(touched) - median(untouched);
  check("touchCost", null, {
    bytes,
    touchedMedianMs: median(touched),
    untouchedMedianMs: median(untouched),
    touchMsPerGiB: touchMs / (bytes / GiB),
  });
}

step = "13/13 keeping the context warm";
progress.update(`validate: ${step}`);
{
  // Each call without keepWarm creates the context and gives it back; with it, the second call
  // finds the context there.
  await addon.releaseDevices();
  const cold = [];
  for (let i = 0; i < 3; i += 1) cold.push((await timed(() => library.findMaxBatch(plan, { device: ordinal }))).ms);
  await library.findMaxBatch(plan, { device: ordinal, keepWarm: true });
  const warm = [];
  for (let i = 0; i < 3; i += 1) warm.push((await timed(() => library.findMaxBatch(plan, { device: ordinal, keepWarm: true }))).ms);
  await library.releaseDevices();
  check("keepWarm", null, { coldMedianMs: median(cold), warmMedianMs: median(warm), savedMs: median(cold) - median(warm) });
}

finish(Object.values(report.checks).every((c) => c.pass !== false) ? 0 : 1);

function finish(status) {
  progress.done();
  report.pass = status === 0;
  const text = JSON.stringify(report, null, 2);
  if (values.out) writeFileSync(values.out, `${text}\n`);
  process.stdout.write(`${text}\n`);
  process.exit(status);
}

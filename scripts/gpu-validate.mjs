#!/usr/bin/env node
// Validates vramfit on a real NVIDIA GPU (or the simulator) and writes a JSON report.
// Needs only Node and the build outputs (dist/, build/Release/, node_modules/commander).
//   node scripts/gpu-validate.mjs [--device N] [--out report.json]
// Checks: info against nvidia-smi; the probe boundary; free memory back at baseline after 100
// probes; a batch search for an affine workload against the analytic prediction; timings.
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { openBackend } from "../dist/native/binding.js";
import { deviceBatch } from "../dist/fit/findMaxBatch.js";
import { buildPlan } from "../dist/plan/buildPlan.js";

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

const load = await timed(() => openBackend());
const backend = load.value;
report.timingsMs.driverLoad = load.ms;
if (backend.kind === "none") {
  report.backend = { kind: "none", reason: backend.reason };
  finish(1);
}
const { addon } = backend;
report.backend = { kind: "cuda", driverVersion: backend.driver.version, library: backend.driver.libraryPath };
const device = (await addon.devices()).find((d) => d.ordinal === ordinal);
if (!device) {
  report.error = `device ${ordinal} not found`;
  finish(1);
}
report.device = device;

// 1. Context creation (the first memGetInfo retains the primary context), then steady-state calls.
const first = await timed(() => addon.memGetInfo(ordinal));
report.timingsMs.contextCreationAndFirstMemGetInfo = first.ms;
const calls = [];
for (let i = 0; i < 50; i += 1) calls.push((await timed(() => addon.memGetInfo(ordinal))).ms);
report.timingsMs.memGetInfoMedian = median(calls);

// 2. info against nvidia-smi (which counts memory in MiB; our context is part of its "used").
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
const baseline = (await addon.memGetInfo(ordinal)).freeBytes;
let low = 0; // granules known to fit
let high = Math.floor(baseline / GRANULE) + 1; // granules known not to fit
let boundaryProbes = 0;
while (high - low > 1) {
  const middle = Math.floor((low + high) / 2);
  boundaryProbes += 1;
  if ((await addon.probe(ordinal, [middle * GRANULE], { touch: false })).fits) low = middle;
  else high = middle;
}
const oneMore = await addon.probe(ordinal, [high * GRANULE], { touch: false });
check("probeBoundary", !oneMore.fits && low > 0, {
  freeBytes: baseline,
  largestAllocationBytes: low * GRANULE,
  gapBytes: baseline - low * GRANULE,
  probes: boundaryProbes + 1,
});

// 4. No leak: 100 probes, fitting and not, touched and not; free memory back at its baseline.
const before = (await addon.memGetInfo(ordinal)).freeBytes;
let fitted = 0;
for (let i = 0; i < 100; i += 1) {
  const sizes = i % 2 === 0 ? [256 * MiB, 64 * MiB + 1, 1] : [Math.floor(before / 2), Math.floor(before / 2), GiB];
  const result = await addon.probe(ordinal, sizes, { touch: i % 4 === 0 });
  if (result.fits) fitted += 1;
}
const after = (await addon.memGetInfo(ordinal)).freeBytes;
check("noLeakAfter100Probes", after === before, { freeBefore: before, freeAfter: after, probesThatFit: fitted });

// 5. One probe's time: 1 GiB in 4 tensors, touched.
const probeTimes = [];
for (let i = 0; i < 5; i += 1) probeTimes.push((await timed(() => addon.probe(ordinal, [GiB / 4, GiB / 4, GiB / 4, GiB / 4], { touch: true }))).ms);
report.timingsMs.probe1GiBTouchedMedian = median(probeTimes);

// 6. A batch search: 1e9 parameters in fp32 with SGD, 512 MiB per sample.
const plan = buildPlan(
  { kind: "affine", parameterCount: 1e9, perSampleBytes: 512 * MiB, fixedBytes: 0 },
  { mode: "train", precision: "fp32", optimizer: "sgd" },
);
const search = await deviceBatch(addon, device, plan, { touch: true });
check("batchSearch", search.batchSize > 0 && search.probes <= 3, {
  batchSize: search.batchSize,
  predictedBatchSize: search.predictedBatchSize,
  probes: search.probes,
  elapsedMs: search.elapsedMs,
  freeBytes: search.device.freeBytes,
});

finish(Object.values(report.checks).every((c) => c.pass !== false) ? 0 : 1);

function finish(status) {
  report.pass = status === 0;
  const text = JSON.stringify(report, null, 2);
  if (values.out) writeFileSync(values.out, `${text}\n`);
  process.stdout.write(`${text}\n`);
  process.exit(status);
}

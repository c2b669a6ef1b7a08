#!/usr/bin/env node
// Measures, on a real GPU, what the simulated driver assumes (docs/simulator.md), and prints a JSON
// report: the memory a bare primary context takes (NVML's per-process figure before and after
// vramfit creates it), and how many bytes groups of small allocations really take (do they share
// 2 MiB pages, rounded to 512 B, as the simulator says?). Each case says whether the GPU agreed.
// Needs only Node and the build outputs (dist/, build/Release/).
//   node scripts/sim-vs-gpu.mjs [--device N]
// On the simulator (VRAMFIT_CUDA_LIBRARY=build/Release/libcudasim.so, VRAMFIT_NVML_LIBRARY=
// build/Release/libnvmlsim.so) every case agrees by construction: test/native/simVsGpu.test.ts.
import { parseArgs } from "node:util";
import { openBackend, openNvml } from "../dist/native/binding.js";

const KiB = 1024;
const MiB = 1024 * KiB;
// The simulator's defaults: CUDASIM_GRANULARITY, CUDASIM_SMALL_ALLOC_MAX, CUDASIM_ALLOC_ALIGNMENT,
// CUDASIM_CONTEXT_BYTES.
const PAGE = 2 * MiB;
const SMALL_MAX = MiB;
const ALIGNMENT = 512;
const CONTEXT_BYTES = 256 * MiB;

const { values } = parseArgs({ options: { device: { type: "string", default: "0" } } });
const ordinal = Number(values.device);

/** Bytes the simulator's rule says `sizes` take: small ones packed into pages, large ones in whole pages. */
function simulatedBytes(sizes) {
  const pages = [];
  let large = 0;
  for (const size of sizes) {
    if (size > SMALL_MAX || size >= PAGE) {
      large += Math.ceil(size / PAGE) * PAGE;
      continue;
    }
    const share = Math.ceil(size / ALIGNMENT) * ALIGNMENT;
    const page = pages.findIndex((used) => used + share <= PAGE);
    if (page >= 0) pages[page] += share;
    else pages.push(share);
  }
  return large + pages.length * PAGE;
}

const repeat = (count, size) => Array.from({ length: count }, () => size);
const CASES = {
  "1000 x 1 KiB": repeat(1000, KiB),
  "2 x 1 MiB": repeat(2, MiB),
  "1 MiB + 1 B": [MiB + 1],
  "4096 x 512 B": repeat(4096, 512),
  "4088 x 513 B": repeat(4088, 513),
  "3 x 600 KiB": repeat(3, 600 * KiB),
  "64 x 256 B": repeat(64, 256),
};

const report = { device: ordinal, simulatorDefaults: { pageBytes: PAGE, smallAllocMaxBytes: SMALL_MAX, alignmentBytes: ALIGNMENT, contextBytes: CONTEXT_BYTES } };
const backend = await openBackend();
if (backend.kind === "none") {
  report.error = `no CUDA backend: ${backend.reason}`;
  finish(1);
}
const { addon } = backend;
const nvml = await openNvml();
const device = (await addon.devices()).find((d) => d.ordinal === ordinal);
if (!device) {
  report.error = `device ${ordinal} not found`;
  finish(1);
}
report.gpu = { name: device.name, uuid: device.uuid, computeMode: device.computeMode };

/** NVML's figure for this process on the device, or null without NVML (or a match for the device). */
async function heldByThisProcess() {
  if (nvml.kind !== "nvml") return null;
  const entry = (await nvml.addon.nvmlDevices()).find((d) => d.uuid === device.uuid);
  if (!entry?.processes) return null;
  return entry.processes.find((p) => p.pid === process.pid)?.usedBytes ?? 0;
}

// The context: this process holds nothing on the GPU until the first device call retains it.
await addon.releaseDevices();
const before = await heldByThisProcess();
await addon.memGetInfo(ordinal);
const after = await heldByThisProcess();
report.context = {
  source: nvml.kind === "nvml" ? "NVML per-process used memory, before and after cuDevicePrimaryCtxRetain" : `unavailable: ${nvml.reason}`,
  beforeBytes: before,
  afterBytes: after,
  measuredBytes: before === null || after === null ? null : after - before,
  simulatedBytes: CONTEXT_BYTES,
};

report.allocations = {};
for (const [name, sizes] of Object.entries(CASES)) {
  const result = await addon.probe(ordinal, sizes, { touch: true });
  const measured = result.fits ? result.freeBytesAtStart - result.freeBytesAtPeak : null;
  const simulated = simulatedBytes(sizes);
  report.allocations[name] = { count: sizes.length, requestedBytes: sizes.reduce((a, b) => a + b, 0), measuredBytes: measured, simulatedBytes: simulated, agrees: measured === simulated };
}

await addon.releaseDevices();
report.context.afterReleaseBytes = await heldByThisProcess();
report.agrees = Object.values(report.allocations).every((c) => c.agrees);
finish(0);

function finish(status) {
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  process.exit(status);
}

// How long the device answer with expandable_segments:True takes on the simulated driver (issue 23 item 2), per preset and budget.
//   node scripts/expandable-probe-speed.mjs [--models a,b,...] [--batches 1,8,32] [--root DIR]
// Loads the build (dist/ and build/Release/libcudasim.so under --root, default this checkout; run
// `npm run build` first), and for each model and batch sets the budget as
// test/native/deviceEqualsAnalytic.test.ts does (the emulation's unconstrained reserve at that
// batch, to the 2 MiB below) and times findMaxBatch on one simulated GPU far larger than any budget:
// wall and CPU time (process.cpuUsage, this thread and the addon's worker together), probes, the
// answer, and the analytic answer beside it. Prints one line a case and the load average.
import { loadavg } from "node:os";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { fileURLToPath, pathToFileURL } from "node:url";

const { values } = parseArgs({ options: { models: { type: "string", default: "llama-2-70b,llama-3.1-8b,gpt3-175b" }, batches: { type: "string", default: "1,8,32" }, root: { type: "string" } } });
const root = resolve(values.root ?? fileURLToPath(new URL("..", import.meta.url)));
const load = (path) => import(pathToFileURL(resolve(root, path)).href);
process.env.VRAMFIT_CUDA_LIBRARY = resolve(root, "build/Release/libcudasim.so");
process.env.VRAMFIT_NVML_LIBRARY = "/nonexistent/libnvidia-ml.so.1";
process.env.CUDASIM_DEVICES = `vramfit speed GPU:${64 * 2 ** 40}:0`;
process.env.CUDASIM_CONTEXT_BYTES = "0";
const lib = await load("dist/index.js");
const { cachingAllocatorSegments } = await load("dist/fit/cachingAllocator.js");
const { allocationTrace } = await load("dist/step/allocationTrace.js");
const conf = "expandable_segments:True";
const MiB = 2 ** 20;
console.log(`load ${loadavg()[0].toFixed(1)}`);
for (const model of values.models.split(",")) {
  const plan = lib.planMemory(lib.resolveWorkload({ model }), lib.parseSetup({}));
  for (const batch of values.batches.split(",").map(Number)) {
    const reserved = cachingAllocatorSegments(allocationTrace(plan, batch)).reduce((sum, bytes) => sum + bytes, 0);
    const capacity = Math.floor(reserved / (2 * MiB)) * 2 * MiB;
    const cpu = process.cpuUsage();
    const start = performance.now();
    const device = await lib.findMaxBatch(plan, { device: 0, maxMemBytes: capacity, reserveBytes: 0, jobContextBytes: 0, lock: false, keepWarm: true, allocConf: conf });
    const wall = performance.now() - start;
    const used = process.cpuUsage(cpu);
    console.log(`${model} budget ${(capacity / 2 ** 30).toFixed(0)} GiB (batch ${batch}'s reserve): batch ${device.batchSize}, ${device.probes} probes, ${wall.toFixed(0)} ms wall, ${((used.user + used.system) / 1000).toFixed(0)} ms CPU`);
  }
}
await lib.releaseDevices();
console.log(`load ${loadavg()[0].toFixed(1)}`);

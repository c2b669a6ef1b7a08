#!/usr/bin/env node
// How long one replay of a step through the caching-allocator emulation takes in a fresh process (issue 23, item 5).
//   node scripts/replay-speed.mjs [--runs N] [--root DIR] [--json]
// Each measurement is a new `node` process that loads the build (dist/ under --root, default this
// checkout), makes the trace (not timed) and times one replay: the main thread's CPU time
// (so a busy machine's waits for a core do not count) and the wall time. That is
// the cost the CLI pays, cold code included. Cases: a 10,000-event random step (seeded: sizes log-uniform from
// 512 B to 64 MiB, each free a random live tensor) with no memory limit and at a capacity that
// forces the out-of-memory path, and ResNet-152's training step (5,926 events) at batch 64.
// --root another checkout (e.g. an older main) times its replay the same way: where that build
// has no replayAtCapacity, its cachingAllocatorSegments (no capacity) is timed.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const here = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const { values: args } = parseArgs({
  options: { runs: { type: "string", default: "15" }, root: { type: "string", default: here }, json: { type: "boolean", default: false }, worker: { type: "string" } },
});
const root = resolve(args.root);
const CASES = ["random10k", "random10k-pressure", "resnet152", "resnet152-pressure"];

/** A deterministic 10,000-event step: 6,000 allocations and 4,000 frees of random live tensors. */
function randomTrace() {
  let state = 0x2545f491;
  const random = () => ((state = (Math.imul(state, 1664525) + 1013904223) >>> 0) / 2 ** 32);
  const order = new Int32Array(10_000);
  const bytes = new Float64Array(6_000);
  const live = [];
  let allocated = 0;
  for (let k = 0; k < order.length; k++) {
    const free = live.length > 0 && (allocated === bytes.length || random() < 0.4);
    if (free) {
      const [tensor] = live.splice(Math.floor(random() * live.length), 1);
      order[k] = ~tensor;
    } else {
      bytes[allocated] = Math.round(2 ** (9 + random() * 17));
      live.push(allocated);
      order[k] = allocated++;
    }
  }
  return { order, bytes };
}

/**
 * Nanoseconds this thread has run on a CPU (Linux's /proc/thread-self/schedstat): the replay's own
 * time, without the waits for a core on a busy machine and without V8's background threads
 * (compiler, GC helpers), which process.cpuUsage would add. Undefined elsewhere.
 */
function threadCpuNs() {
  try {
    return Number(readFileSync("/proc/thread-self/schedstat", "utf8").split(" ")[0]);
  } catch {
    return undefined;
  }
}

async function worker(name) {
  const allocator = await import(pathToFileURL(resolve(root, "dist/fit/cachingAllocator.js")).href);
  let trace;
  if (name.startsWith("random10k")) trace = randomTrace();
  else {
    const { buildPlan } = await import(pathToFileURL(resolve(root, "dist/plan/buildPlan.js")).href);
    const { allocationTrace } = await import(pathToFileURL(resolve(root, "dist/plan/memoryPlan.js")).href);
    const { presetWorkload } = await import(pathToFileURL(resolve(root, "dist/workload/presets.js")).href);
    trace = allocationTrace(buildPlan(presetWorkload("resnet152"), { mode: "train", precision: "amp", optimizer: "adamw" }), 64);
  }
  const pressure = name.endsWith("-pressure");
  if (pressure && allocator.replayAtCapacity === undefined) return { name, skipped: "no capacity in this build" };
  // The capacity between the blocks' peak and the unconstrained segments' peak: the cache must be freed to go on.
  let capacity = Number.POSITIVE_INFINITY;
  if (pressure) {
    // Measured in a throwaway replay of a copy: the timed replay below is still the process's first of this trace.
    const probe = allocator.replayAtCapacity({ order: trace.order.slice(), bytes: trace.bytes.slice() });
    capacity = Math.round((probe.allocatedPeakBytes + probe.reservedPeakBytes) / 2);
  }
  const replay = allocator.replayAtCapacity ?? ((t) => allocator.cachingAllocatorSegments(t));
  threadCpuNs(); // the file opened once before timing
  const started = process.hrtime.bigint();
  const cpu = process.cpuUsage();
  const thread = threadCpuNs();
  const result = pressure ? replay(trace, capacity) : replay(trace);
  const threadAfter = threadCpuNs();
  const spent = process.cpuUsage(cpu);
  const wallMicros = Number(process.hrtime.bigint() - started) / 1e3;
  const processMicros = spent.user + spent.system;
  // The main thread's CPU time where Linux tells it, else the process's: not wall time, which on a
  // busy machine counts the waits for a core between time slices.
  const micros = thread !== undefined && threadAfter !== undefined ? (threadAfter - thread) / 1e3 : processMicros;
  const events = trace.order.length;
  return { name, events, micros, processMicros, wallMicros, ...(result.fits !== undefined && { fits: result.fits, cudaFrees: result.cudaFrees, allocRetries: result.allocRetries }) };
}

if (args.worker !== undefined) {
  process.stdout.write(`${JSON.stringify(await worker(args.worker))}\n`);
} else {
  const runs = Number(args.runs);
  const rows = [];
  for (const name of CASES) {
    const samples = [];
    const walls = [];
    let last;
    for (let run = 0; run < runs; run++) {
      const child = spawnSync(process.execPath, [fileURLToPath(import.meta.url), "--worker", name, "--root", root], { encoding: "utf8" });
      if (child.status !== 0) throw new Error(`${name}: ${child.stderr}`);
      last = JSON.parse(child.stdout);
      if (last.skipped !== undefined) break;
      samples.push(last.micros);
      walls.push(last.wallMicros);
    }
    if (samples.length === 0) {
      rows.push({ name, skipped: last.skipped });
      continue;
    }
    samples.sort((a, b) => a - b);
    walls.sort((a, b) => a - b);
    const { micros: _, wallMicros: __, processMicros: ___, ...shown } = last;
    rows.push({ ...shown, runs: samples.length, medianMs: samples[samples.length >> 1] / 1e3, maxMs: samples[samples.length - 1] / 1e3, medianWallMs: walls[walls.length >> 1] / 1e3 });
  }
  if (args.json) process.stdout.write(`${JSON.stringify({ root, node: process.version, rows }, null, 2)}\n`);
  else {
    console.log(`one replay in a fresh process (${root}, node ${process.version}, ${runs} processes per case)`);
    for (const r of rows) {
      if (r.skipped !== undefined) console.log(`${r.name.padEnd(20)} skipped: ${r.skipped}`);
      else console.log(`${r.name.padEnd(20)} ${String(r.events).padStart(6)} events  CPU median ${r.medianMs.toFixed(3)} ms, max ${r.maxMs.toFixed(3)} ms (wall median ${r.medianWallMs.toFixed(3)} ms)${r.fits !== undefined ? `  fits ${r.fits}, cudaFree ${r.cudaFrees}, retries ${r.allocRetries}` : ""}`);
    }
  }
}

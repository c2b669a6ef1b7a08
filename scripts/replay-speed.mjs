#!/usr/bin/env node
// How long one replay of a step through the caching-allocator emulation takes in a fresh process (issue 23, item 5).
//   node scripts/replay-speed.mjs [--runs N] [--root DIR] [--against DIR] [--json] [--expandable]
// Each measurement is a new `node` process that loads the build (dist/ under --root, default this
// checkout), makes the trace (not timed), reads the clocks once (not timed) and times one replay, the
// call replayAtCapacity(trace[, capacity]) and nothing else (its first-call compilation included): the process's CPU time
// (getrusage, so a busy machine's waits for a core do not count) and the wall time (median, and
// the least, which on a busy machine is the closest to an idle one's), and the minor page faults
// around it (its memory and code touched for the first time). That is
// the cost the CLI pays, cold code included. Each process then replays the same step 21 times
// more and reports the median CPU time of those ("warm": the replay's own work, without the cold
// start; on a loaded machine, the figure least inflated by it). Cases: a 10,000-event random step (seeded: sizes log-uniform from
// 512 B to 64 MiB, each free a random live tensor) with no memory limit and at a capacity that
// forces the out-of-memory path, and ResNet-152's training step (5,926 events) at batch 64.
// --against DIR times another checkout's build (e.g. main's) in the same invocation, its processes
// alternating with this one's (on a shared machine, the pair sees the same load; compare the two
// rows, not runs made minutes apart).
// --root another checkout (e.g. an older main) times its replay the same way: where that build
// has no replayAtCapacity, its cachingAllocatorSegments (no capacity) is timed. Where the addon
// has the native replay it answers (its load is timed apart, before the replay);
// VRAMFIT_NATIVE_REPLAY=0 times the TypeScript replay instead. --expandable times the replay
// through expandable segments (replayExpandable, src/fit/expandableSegments.ts) instead, the same way.
//   node scripts/replay-speed.mjs --edges [--runs N] [--root DIR]
// times the parts of a fresh process's first replay apart (wall, medians over N processes): the
// addon's first call on a 2-event step (its Node-API functions bound, its code touched), then
// replayAtCapacity's first call on that step (the JavaScript compiled and run once, the result
// object made), then the minor page faults of a direct call of the addon on the random
// 10,000-event step (the replay's own memory and code) and of replayAtCapacity's first call on it
// in another process (JavaScript included).
//   node scripts/replay-speed.mjs --loop [--runs N] [--against DIR] [--cachegrind]
// times the native loop alone: compiles a small C++ driver (c++ -O3, as the addon) over this
// checkout's native/addon/step_replay.h (and DIR's), replays the random 10,000-event step and
// ResNet-152's step (batch 64, from this checkout's build) N times (default 200) in one process,
// 9 rounds alternating the checkouts, and prints the best and the median of the rounds' medians;
// with --cachegrind, runs each under valgrind's cachegrind (10 replays against none) and prints
// the instructions and simulated branch mispredictions of one replay.
//   node scripts/replay-speed.mjs --cli [--against DIR] [--runs N] [--allocator KIND]
// times the whole `vramfit batch --model resnet152 [--allocator KIND]` (no GPU: four catalog GPUs answered
// analytically) of this checkout (and of the checkout DIR, interleaved): the process's CPU time
// (user + system, read at exit), medians; and, by timers around each call of the addon's
// replayInto (wrapped where the addon loads), how many native replays the command made and
// the wall time spent inside them, median over the runs (a CPU profile charges a native call's
// time to the JavaScript that made it, and inflates it: timers say what the replays cost; only the
// wall clock is read around each call: in a trial that also read the CPU clock there, getrusage,
// the time inside the replays came out several times larger).
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { dirname, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const here = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const { values: args } = parseArgs({
  options: {
    runs: { type: "string", default: "15" },
    root: { type: "string", default: here },
    json: { type: "boolean", default: false },
    worker: { type: "string" },
    capacity: { type: "string" },
    cli: { type: "boolean", default: false },
    against: { type: "string" },
    expandable: { type: "boolean", default: false },
    allocator: { type: "string" },
    edges: { type: "boolean", default: false },
    edgeWorker: { type: "string" },
    loop: { type: "boolean", default: false },
    cachegrind: { type: "boolean", default: false },
  },
});
const root = resolve(args.root);
/** Replays timed again in each process after the first (warm). */
const WARM_REPLAYS = 21;
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

async function worker(name) {
  const allocator = await import(pathToFileURL(resolve(root, "dist/fit/cachingAllocator.js")).href);
  let trace;
  if (name.startsWith("random10k")) trace = randomTrace();
  else {
    const { buildPlan } = await import(pathToFileURL(resolve(root, "dist/plan/buildPlan.js")).href);
    // The trace moved from plan/memoryPlan.js to step/allocationTrace.js: an older build has it in the first.
    const { allocationTrace } = await import(pathToFileURL(resolve(root, "dist/step/allocationTrace.js")).href).catch(() => import(pathToFileURL(resolve(root, "dist/plan/memoryPlan.js")).href));
    const { presetWorkload } = await import(pathToFileURL(resolve(root, "dist/workload/presets.js")).href);
    trace = allocationTrace(buildPlan(presetWorkload("resnet152"), { mode: "train", precision: "amp", optimizer: "adamw" }), 64);
  }
  const pressure = name.endsWith("-pressure");
  let replayAtCapacity = allocator.replayAtCapacity;
  if (args.expandable) {
    const expandable = await import(pathToFileURL(resolve(root, "dist/fit/expandableSegments.js")).href).catch(() => ({}));
    if (expandable.replayExpandable === undefined) return { name, skipped: "no replayExpandable in this build" };
    replayAtCapacity = expandable.replayExpandable;
  }
  if ((pressure || args.capacity === "measure") && replayAtCapacity === undefined) return { name, skipped: "no capacity in this build" };
  if (args.capacity === "measure") {
    // For the parent: the capacity between the blocks' peak and the unconstrained segments' peak,
    // where the cache must be freed to go on (measured here, so the timed process replays once).
    const probe = replayAtCapacity(trace);
    return { name, capacity: Math.round((probe.allocatedPeakBytes + probe.reservedPeakBytes) / 2) };
  }
  const capacity = pressure ? Number(args.capacity) : Number.POSITIVE_INFINITY;
  const replay = replayAtCapacity ?? ((t) => allocator.cachingAllocatorSegments(t));
  // The addon, where the build replays natively: loaded (and its load timed) before the replay is.
  const binding = await import(pathToFileURL(resolve(root, "dist/native/binding.js")).href);
  let addonLoadMicros;
  const findNative = args.expandable ? binding.nativeExpandableReplay : binding.nativeReplay;
  if (typeof findNative === "function") {
    const before = process.hrtime.bigint();
    const loaded = findNative() !== undefined;
    addonLoadMicros = loaded ? Number(process.hrtime.bigint() - before) / 1e3 : undefined;
  }
  // The clocks read once before the timed region: a fresh process's first process.cpuUsage(previous)
  // costs about 45 µs of CPU itself (node's own code compiled on first use), which is not the replay's.
  process.cpuUsage(process.cpuUsage());
  process.hrtime.bigint();
  // Minor page faults around the timed replay (read outside it): its memory and code touched first.
  const faultsBefore = process.resourceUsage().minorPageFault;
  const started = process.hrtime.bigint();
  const cpu = process.cpuUsage();
  const result = pressure ? replay(trace, capacity) : replay(trace);
  const spent = process.cpuUsage(cpu);
  const wallMicros = Number(process.hrtime.bigint() - started) / 1e3;
  const faults = process.resourceUsage().minorPageFault - faultsBefore;
  // The process's CPU time (getrusage: the main thread and V8's helper threads, compiling and
  // collecting for it), which a busy machine's waits for a core do not inflate as they do wall time.
  const micros = spent.user + spent.system;
  const events = trace.order.length;
  // Then the same replay again and again in this process: what it costs once its code and memory
  // are warm, the replay's own work (CPU time of each, median of WARM_REPLAYS).
  const warm = [];
  let warmFaults = 0;
  for (let k = 0; k < WARM_REPLAYS; k++) {
    const faulted = process.resourceUsage().minorPageFault;
    const before = process.cpuUsage();
    if (pressure) replay(trace, capacity);
    else replay(trace);
    const used = process.cpuUsage(before);
    warmFaults = process.resourceUsage().minorPageFault - faulted; // the last one's
    warm.push(used.user + used.system);
  }
  warm.sort((a, b) => a - b);
  return { name, events, micros, wallMicros, faults, warmFaults, warmMicros: warm[warm.length >> 1], native: addonLoadMicros !== undefined, ...(addonLoadMicros !== undefined && { addonLoadMicros }), ...(result.fits !== undefined && { fits: result.fits, cudaFrees: result.cudaFrees, allocRetries: result.allocRetries }) };
}

/** CPU seconds of `vramfit batch --model resnet152` run from `checkout`, its native replays' count and the wall seconds inside them, read by a preloaded exit hook. */
function cliCpu(checkout, preload) {
  const env = { PATH: process.env.PATH ?? "", VRAMFIT_CUDA_LIBRARY: "/nonexistent/libcuda.so.1" };
  const child = spawnSync(process.execPath, ["--require", preload, resolve(checkout, "bin/vramfit.js"), "batch", "--model", "resnet152", ...(args.allocator === undefined ? [] : ["--allocator", args.allocator])], { encoding: "utf8", env });
  const line = /^cpu-us (\d+) replays (\d+) replay-wall-us (\d+)$/m.exec(child.stderr);
  if (line === null) throw new Error(`${checkout}: no CPU figure (status ${child.status}): ${child.stderr}`);
  return { cpu: Number(line[1]) / 1e6, replays: Number(line[2]), replayWall: Number(line[3]) / 1e6 };
}

/** The preload: wraps the addon's replays (replayInto, replayExpandableInto; replayStepInto in an older build) in timers as the addon loads, and prints the figures at exit. */
const CLI_PRELOAD = `const Module = require("node:module");
const load = Module._extensions[".node"];
let replays = 0, wall = 0n;
Module._extensions[".node"] = function (module, filename) {
  load.call(this, module, filename);
  for (const name of ["replayInto", "replayExpandableInto", "replayStepInto"]) {
    const replay = module.exports[name];
    if (typeof replay !== "function") continue;
    module.exports[name] = function (...args) {
      const started = process.hrtime.bigint();
      try { return replay.apply(this, args); } finally {
        wall += process.hrtime.bigint() - started;
        replays += 1;
      }
    };
  }
};
process.on("exit", () => { const u = process.cpuUsage(); process.stderr.write(\`\\ncpu-us \${u.user + u.system} replays \${replays} replay-wall-us \${wall / 1000n}\\n\`); });
`;

/** One fresh process's parts of a first replay (--edges): `calls` times the two first calls, `faults` counts page faults. */
async function edgeWorker(kind) {
  const allocator = await import(pathToFileURL(resolve(root, "dist/fit/cachingAllocator.js")).href);
  const binding = await import(pathToFileURL(resolve(root, "dist/native/binding.js")).href);
  const { DEFAULT_ALLOC_CONF } = await import(pathToFileURL(resolve(root, "dist/fit/allocConf.js")).href);
  const native = binding.nativeReplay?.();
  if (native === undefined || binding.nativeExpandableReplay === undefined) return { skipped: "no replayInto in this build" };
  // replay_step.cc's io for the default configuration, no log.
  const io = () => Float64Array.of(Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY, DEFAULT_ALLOC_CONF.maxNonSplitRoundingBytes, 0, DEFAULT_ALLOC_CONF.largeSegmentSizeBytes, 1, 1);
  const tiny = { order: Int32Array.of(0, ~0), bytes: Float64Array.of(1000) };
  const trace = randomTrace();
  const first = io();
  process.hrtime.bigint();
  process.resourceUsage();
  if (kind === "calls") {
    let started = process.hrtime.bigint();
    native(tiny.order, tiny.bytes, first);
    const addonMicros = Number(process.hrtime.bigint() - started) / 1e3;
    started = process.hrtime.bigint();
    allocator.replayAtCapacity(tiny);
    const javascriptMicros = Number(process.hrtime.bigint() - started) / 1e3;
    return { addonMicros, javascriptMicros };
  }
  const before = process.resourceUsage().minorPageFault;
  if (kind === "faults-addon") native(trace.order, trace.bytes, first);
  else allocator.replayAtCapacity(trace);
  return { faults: process.resourceUsage().minorPageFault - before };
}

/** The C++ driver of --loop: reads the step, replays it argv[1] times with no limit, prints the best and median microseconds. */
const LOOP_DRIVER = `#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <vector>
#include "step_replay.h"
template <typename T> std::vector<T> Read(const char* path) {
  std::vector<T> values;
  FILE* file = std::fopen(path, "rb");
  T value;
  while (file != nullptr && std::fread(&value, sizeof value, 1, file) == 1) values.push_back(value);
  if (file != nullptr) std::fclose(file);
  return values;
}
int main(int argc, char** argv) {
  const std::vector<int32_t> order = Read<int32_t>(argv[2]);
  const std::vector<double> bytes = Read<double>(argv[3]);
  std::vector<double> micros;
  double check = 0;
  for (int k = 0, n = std::atoi(argv[1]); k < n; k++) {
    vramfit::ReplayConfig config;
    config.capacity = config.maxSplit = std::numeric_limits<double>::infinity();
    config.maxRounding = 20971520;
    const auto started = std::chrono::steady_clock::now();
    vramfit::StepReplay replay(config);
    replay.Run(order.data(), order.size(), bytes.data(), bytes.size());
    micros.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - started).count());
    check += replay.reservedPeak;
  }
  std::sort(micros.begin(), micros.end());
  if (!micros.empty()) std::printf("%.1f %.1f %.0f\\n", micros[0], micros[micros.size() / 2], check);
}
`;

/** ResNet-152's training step at batch 64 from a checkout's build (the worker's case "resnet152"). */
async function resnetTrace(checkout) {
  const { buildPlan } = await import(pathToFileURL(resolve(checkout, "dist/plan/buildPlan.js")).href);
  const { allocationTrace } = await import(pathToFileURL(resolve(checkout, "dist/step/allocationTrace.js")).href);
  const { presetWorkload } = await import(pathToFileURL(resolve(checkout, "dist/workload/presets.js")).href);
  return allocationTrace(buildPlan(presetWorkload("resnet152"), { mode: "train", precision: "amp", optimizer: "adamw" }), 64);
}

/** --loop: the native loop alone, in a C++ driver (timed, or counted by cachegrind), for this checkout and --against's, on the random step and ResNet-152's. */
async function loopSpeed() {
  const dir = mkdtempSync(resolve(tmpdir(), "replay-loop-"));
  try {
    const steps = { "random 10,000-event step": randomTrace(), "ResNet-152 step, batch 64": await resnetTrace(root) };
    Object.values(steps).forEach((step, k) => {
      writeFileSync(resolve(dir, `order${k}.bin`), Buffer.from(step.order.buffer, step.order.byteOffset, step.order.byteLength));
      writeFileSync(resolve(dir, `bytes${k}.bin`), Buffer.from(step.bytes.buffer, step.bytes.byteOffset, step.bytes.byteLength));
    });
    writeFileSync(resolve(dir, "driver.cc"), LOOP_DRIVER);
    // -O3, as the addon's Release build compiles native/addon.
    const checkouts = args.against === undefined ? [root] : [resolve(args.against), root];
    checkouts.forEach((checkout, i) => {
      const compiled = spawnSync("c++", ["-O3", "-std=c++17", "-I", resolve(checkout, "native/addon"), resolve(dir, "driver.cc"), "-o", resolve(dir, `driver${i}`)], { encoding: "utf8" });
      if (compiled.status !== 0) throw new Error(`c++ (${checkout}): ${compiled.stderr}`);
    });
    const driver = (i, k, replays, prefix = []) => {
      const [command, ...rest] = [...prefix, resolve(dir, `driver${i}`), String(replays), resolve(dir, `order${k}.bin`), resolve(dir, `bytes${k}.bin`)];
      return spawnSync(command, rest, { encoding: "utf8" });
    };
    const load = loadavg()[0];
    const names = Object.keys(steps);
    if (!args.cachegrind) {
      // Rounds alternating the checkouts (each a process of `runs` replays): the best replay, and
      // the median of the rounds' medians.
      const replays = args.runs === "15" ? 200 : Number(args.runs);
      const rounds = 9;
      const times = checkouts.map(() => names.map(() => ({ best: Number.POSITIVE_INFINITY, medians: [] })));
      for (let round = 0; round < rounds; round++) {
        for (let k = 0; k < names.length; k++) {
          checkouts.forEach((_, i) => {
            const [best, median] = driver(i, k, replays).stdout.trim().split(" ").map(Number);
            times[i][k].best = Math.min(times[i][k].best, best);
            times[i][k].medians.push(median);
          });
        }
      }
      console.log(`native loop, no limit, C++ driver (-O3), ${rounds} rounds of ${replays} replays a checkout, alternating; load average ${load.toFixed(2)} → ${loadavg()[0].toFixed(2)}`);
      checkouts.forEach((checkout, i) => names.forEach((name, k) => {
        const medians = [...times[i][k].medians].sort((x, y) => x - y);
        console.log(`${checkout}  ${name}: best ${times[i][k].best.toFixed(1)} µs, median ${medians[medians.length >> 1].toFixed(1)} µs a replay`);
      }));
      return;
    }
    const counts = (i, k, replays) => {
      const run = driver(i, k, replays, ["valgrind", "--tool=cachegrind", "--branch-sim=yes", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]);
      const number = (label) => Number(new RegExp(`${label}:\\s+([\\d,]+)`).exec(run.stderr)?.[1]?.replaceAll(",", "") ?? Number.NaN);
      return { instructions: number("I\\s+refs"), mispredicts: number("Mispredicts") };
    };
    checkouts.forEach((checkout, i) => names.forEach((name, k) => {
      const ten = counts(i, k, 10);
      const none = counts(i, k, 0);
      console.log(`${checkout}  ${name}, cachegrind: ${Math.round((ten.instructions - none.instructions) / 10)} instructions and ${Math.round((ten.mispredicts - none.mispredicts) / 10)} simulated branch mispredictions a replay`);
    }));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (args.loop) {
  await loopSpeed();
} else if (args.edgeWorker !== undefined) {
  process.stdout.write(`${JSON.stringify(await edgeWorker(args.edgeWorker))}\n`);
} else if (args.edges) {
  const loadBefore = loadavg()[0];
  const run = (kind) => {
    const child = spawnSync(process.execPath, [fileURLToPath(import.meta.url), "--edgeWorker", kind, "--root", root], { encoding: "utf8" });
    if (child.status !== 0) throw new Error(`${kind}: ${child.stderr}`);
    return JSON.parse(child.stdout);
  };
  const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  const calls = [];
  const addonFaults = [];
  const faults = [];
  for (let k = 0; k < Number(args.runs); k++) {
    calls.push(run("calls"));
    addonFaults.push(run("faults-addon").faults);
    faults.push(run("faults-javascript").faults);
  }
  if (calls[0].skipped !== undefined) console.log(`skipped: ${calls[0].skipped}`);
  else {
    console.log(`a fresh process's first replay, part by part (${root}, node ${process.version}, ${calls.length} processes each, load average ${loadBefore.toFixed(2)} → ${loadavg()[0].toFixed(2)})`);
    console.log(`the addon's first call, 2-event step: ${median(calls.map((c) => c.addonMicros)).toFixed(0)} µs wall (median)`);
    console.log(`replayAtCapacity's first call after it, 2-event step: ${median(calls.map((c) => c.javascriptMicros)).toFixed(0)} µs wall (median)`);
    console.log(`minor page faults, random 10,000-event step: ${median(addonFaults)} in a first direct call of the addon, ${median(faults)} in a first replayAtCapacity (medians)`);
  }
} else if (args.cli) {
  const dir = mkdtempSync(resolve(tmpdir(), "replay-speed-"));
  const preload = resolve(dir, "cpu.cjs");
  writeFileSync(preload, CLI_PRELOAD);
  const loadBefore = loadavg()[0];
  const checkouts = args.against === undefined ? [root] : [resolve(args.against), root];
  const samples = checkouts.map(() => []);
  try {
    for (let run = 0; run < Number(args.runs); run++) checkouts.forEach((c, i) => samples[i].push(cliCpu(c, preload)));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  const rows = checkouts.map((c, i) => ({
    checkout: c,
    runs: samples[i].length,
    medianCpuSeconds: median(samples[i].map((x) => x.cpu)),
    nativeReplays: median(samples[i].map((x) => x.replays)),
    medianReplayWallSeconds: median(samples[i].map((x) => x.replayWall)),
  }));
  const load = `${loadBefore.toFixed(2)} → ${loadavg()[0].toFixed(2)}`;
  const command = `vramfit batch --model resnet152${args.allocator === undefined ? "" : ` --allocator ${args.allocator}`}`;
  if (args.json) process.stdout.write(`${JSON.stringify({ node: process.version, command, load, rows }, null, 2)}\n`);
  else for (const r of rows) console.log(`${command}  ${r.checkout}  CPU median ${r.medianCpuSeconds.toFixed(3)} s over ${r.runs} runs; ${r.nativeReplays} native replays, ${(r.medianReplayWallSeconds * 1e3).toFixed(2)} ms (wall) inside them; load average ${load}`);
} else if (args.worker !== undefined) {
  process.stdout.write(`${JSON.stringify(await worker(args.worker))}\n`);
} else {
  const runs = Number(args.runs);
  // The 1-minute load average before and after: on a shared machine the figures move with it.
  const loadBefore = loadavg()[0];
  const roots = args.against === undefined ? [root] : [resolve(args.against), root];
  const rows = [];
  for (const name of CASES) {
    const worker = (checkout, extra) => {
      const child = spawnSync(process.execPath, [fileURLToPath(import.meta.url), "--worker", name, "--root", checkout, ...(args.expandable ? ["--expandable"] : []), ...extra], { encoding: "utf8" });
      if (child.status !== 0) throw new Error(`${name}: ${child.stderr}`);
      return JSON.parse(child.stdout);
    };
    // One capacity for every checkout (measured on the first): the same replay in each.
    let capacity = [];
    if (name.endsWith("-pressure")) {
      const measured = worker(roots[0], ["--capacity", "measure"]);
      capacity = measured.capacity === undefined ? [] : ["--capacity", String(measured.capacity)];
    }
    const samples = roots.map(() => ({ cpu: [], walls: [], warms: [], faults: [], loads: [], last: undefined }));
    for (let run = 0; run < runs; run++) {
      roots.forEach((checkout, i) => {
        const s = samples[i];
        if (s.last?.skipped !== undefined) return;
        s.last = worker(checkout, capacity);
        if (s.last.skipped !== undefined) return;
        s.cpu.push(s.last.micros);
        s.walls.push(s.last.wallMicros);
        s.warms.push(s.last.warmMicros);
        s.faults.push(s.last.faults);
        if (s.last.addonLoadMicros !== undefined) s.loads.push(s.last.addonLoadMicros);
      });
    }
    const median = (xs) => [...xs].sort((x, y) => x - y)[xs.length >> 1];
    roots.forEach((checkout, i) => {
      const { cpu, walls, warms, faults, loads, last } = samples[i];
      if (cpu.length === 0) {
        rows.push({ name, root: checkout, skipped: last.skipped });
        return;
      }
      const { micros: _, wallMicros: __, addonLoadMicros: ___, warmMicros: ____, faults: _____, ...shown } = last;
      rows.push({ ...shown, root: checkout, runs: cpu.length, medianFaults: median(faults), medianMs: median(cpu) / 1e3, warmMedianMs: median(warms) / 1e3, maxMs: Math.max(...cpu) / 1e3, medianWallMs: median(walls) / 1e3, minWallMs: Math.min(...walls) / 1e3, ...(loads.length > 0 && { addonLoadMedianMs: median(loads) / 1e3 }) });
    });
  }
  const load = `${loadBefore.toFixed(2)} → ${loadavg()[0].toFixed(2)}`;
  if (args.json) process.stdout.write(`${JSON.stringify({ root, node: process.version, load, rows }, null, 2)}\n`);
  else {
    console.log(`one ${args.expandable ? "expandable-segments " : ""}replay in a fresh process (${roots.join(" against ")}, node ${process.version}, ${runs} processes per case${roots.length > 1 ? " and checkout, alternating" : ""}, load average ${load})`);
    for (const r of rows) {
      const where = roots.length > 1 ? `${r.root}: ` : "";
      if (r.skipped !== undefined) console.log(`${r.name.padEnd(20)} ${where}skipped: ${r.skipped}`);
      else console.log(`${r.name.padEnd(20)} ${where}${String(r.events).padStart(6)} events  CPU median ${r.medianMs.toFixed(3)} ms, max ${r.maxMs.toFixed(3)} ms, warm ${r.warmMedianMs.toFixed(3)} ms (wall median ${r.medianWallMs.toFixed(3)} ms, min ${r.minWallMs.toFixed(3)} ms; minor page faults ${r.medianFaults} fresh, ${r.warmFaults} warm)${r.native ? `, native (addon load ${r.addonLoadMedianMs.toFixed(3)} ms wall, not counted)` : ", TypeScript"}${r.fits !== undefined ? `  fits ${r.fits}, cudaFree ${r.cudaFrees}, retries ${r.allocRetries}` : ""}`);
    }
  }
}

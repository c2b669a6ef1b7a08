#!/usr/bin/env node
// Benchmark of the step tracer (python/vramfit_trace, issue 19): wall time, CPU time and peak host memory of
// `python -m vramfit_trace` for Llama-2-7B and Llama-2-70B training steps at seq 2048 (fp32, AdamW foreach, three
// batches traced and fitted), uncached; the one-time compile of the fake CUDA device (empty extension cache); and
// the 7B trace again from the trace cache. Issue 19's goals: 7B ≤ 20 s, 70B ≤ 60 s, host memory under 1 GiB.
//   node scripts/bench-trace.mjs [--python PATH] [--only 7b|70b|compile|cached] [--json]
// PATH defaults to $VRAMFIT_TORCH_CPU_PYTHON. CPU time comes from the child's own getrusage (its forked processes
// included). On a
// shared machine wall time is the machine's load as much as the tracer's: CPU time is reported beside it, and what
// an idle machine's wall time approaches (the tracer is one thread but for autograd's, which backward waits on).
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const flag = (name) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const python = flag("--python") ?? process.env.VRAMFIT_TORCH_CPU_PYTHON;
if (!python) {
  console.error("bench-trace: --python PATH or VRAMFIT_TORCH_CPU_PYTHON is needed (a Python with torch and transformers)");
  process.exit(2);
}
const only = flag("--only");
const asJson = args.includes("--json");
const results = [];
const GiB = 2 ** 30;
/** Issue 19's goals, by run: seconds, and host memory for every run. */
const GOALS = { "7b": 20, "70b": 60, cached: undefined, compile: undefined };

// Runs the tracer in a child Python that reports its own and its children's rusage on stderr's last line.
// The host memory is sampled as well: the proportional set size (PSS: shared pages split among their sharers) of the
// tracer and the processes it forks (one per batch), summed, every 0.1 s: what the trace takes from the machine.
const harness = `
import os, resource, runpy, sys, json, threading, time
t = time.time()
peak = [0]
def pss(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            return sum(int(line.split()[1]) for line in f if line.startswith("Pss:"))
    except OSError:
        return 0
def children(pid):
    try:
        return [int(c) for task in os.listdir(f"/proc/{pid}/task") for c in open(f"/proc/{pid}/task/{task}/children").read().split()]
    except OSError:
        return []
def sample():
    while True:
        pids = [os.getpid()] + children(os.getpid())
        peak[0] = max(peak[0], sum(pss(p) for p in pids))
        time.sleep(0.1)
threading.Thread(target=sample, daemon=True).start()
try:
    runpy.run_module("vramfit_trace", run_name="__main__")
except SystemExit as e:
    code = e.code
else:
    code = 0
me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print("BENCH " + json.dumps({"status": code, "wallS": time.time() - t, "cpuS": me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime,
      "maxRssMiB": max(me.ru_maxrss, kids.ru_maxrss) / 1024, "pssPeakMiB": peak[0] / 1024}), file=sys.stderr)
`;

/** One run of the tracer; `cache`: the trace cache to use (and to answer from when `cached`), else a fresh one. */
function trace(key, label, argv, env = {}, { cache, cached = false } = {}) {
  const scratch = mkdtempSync(join(tmpdir(), "vramfit-bench-trace-"));
  const run = spawnSync(python, ["-c", harness, ...argv, "--out", join(scratch, "trace.json"), ...(cached ? [] : ["--no-cache"])], {
    cwd: root,
    env: { ...process.env, PYTHONPATH: join(root, "python"), VRAMFIT_TRACE_CACHE: cache ?? scratch, ...env },
    encoding: "utf8",
  });
  rmSync(scratch, { recursive: true, force: true });
  const line = run.stderr.split("\n").find((l) => l.startsWith("BENCH "));
  if (!line) throw new Error(`${label}: ${run.stderr.trim().split("\n").slice(-3).join(" | ")}`);
  const r = JSON.parse(line.slice(6));
  const goalS = GOALS[key];
  const result = {
    run: key, label, status: r.status, wallS: round(r.wallS), cpuS: round(r.cpuS), hostPeakMiB: Math.round(r.pssPeakMiB), largestProcessMiB: Math.round(r.maxRssMiB),
    ...(goalS !== undefined && { goalS, wallMet: r.wallS <= goalS, cpuMet: r.cpuS <= goalS }),
    hostMet: r.pssPeakMiB * 2 ** 20 < GiB,
  };
  results.push(result);
  if (!asJson) console.log(`${label.padEnd(34)} status ${r.status}  wall ${r.wallS.toFixed(1)} s  cpu ${r.cpuS.toFixed(1)} s  host ${r.pssPeakMiB.toFixed(0)} MiB (all processes' PSS; largest RSS ${r.maxRssMiB.toFixed(0)} MiB)${goalS !== undefined ? `  goal ≤ ${goalS} s: wall ${result.wallMet ? "met" : "NOT met"}, cpu ${result.cpuMet ? "met" : "NOT met"}` : ""}`);
}

function round(x) {
  return Math.round(x * 10) / 10;
}

const config = (name) => join(root, "python", "tests", "configs", name);
const { loadavg } = await import("node:os");
const loadAtStart = loadavg()[0];
if (!asJson) console.log(`# ${new Date().toISOString()}  load ${loadAtStart.toFixed(1)}  ${python}`);
if (!only || only === "compile") {
  const extensions = mkdtempSync(join(tmpdir(), "vramfit-bench-ext-"));
  trace("compile", "compile fake CUDA + tiny llama", ["--hf-config", config("tiny-llama.json"), "--seq", "16"], { VRAMFIT_TORCH_EXTENSIONS: extensions });
  rmSync(extensions, { recursive: true, force: true });
}
const llama7b = ["--hf-config", config("llama-2-7b.json"), "--seq", "2048"];
const cache = mkdtempSync(join(tmpdir(), "vramfit-bench-cache-")); // the 7B trace, for the cached run
if (!only || only === "7b" || only === "cached") trace("7b", "Llama-2-7B train seq 2048", llama7b, {}, { cache });
if (only === "cached") results.pop();
if (!only || only === "70b") trace("70b", "Llama-2-70B train seq 2048", ["--hf-config", config("llama-2-70b.json"), "--seq", "2048"]);
if (!only || only === "cached") {
  // The same 7B trace asked again: answered from the trace cache.
  trace("cached", "Llama-2-7B again, from the cache", llama7b, {}, { cache, cached: true });
}
rmSync(cache, { recursive: true, force: true });
if (asJson) console.log(JSON.stringify({ startedLoad: round(loadAtStart), endLoad: round(loadavg()[0]), python, runs: results }, null, 1));

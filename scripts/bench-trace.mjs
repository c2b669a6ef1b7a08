#!/usr/bin/env node
// Benchmark of the step tracer (python/vramfit_trace, issue 19): wall time, CPU time and peak host memory of
// `python -m vramfit_trace` for Llama-2-7B and Llama-2-70B training steps at seq 2048 (fp32, AdamW foreach, three
// batches traced and fitted), uncached; and the one-time compile of the fake CUDA device (empty extension cache).
//   node scripts/bench-trace.mjs [--python PATH] [--only 7b|70b|compile]
// PATH defaults to $VRAMFIT_TORCH_CPU_PYTHON. CPU time and peak memory come from the child's own getrusage.
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

// Runs the tracer in a child Python that reports its own and its children's rusage on stderr's last line.
const harness = `
import resource, runpy, sys, json, time
t = time.time()
try:
    runpy.run_module("vramfit_trace", run_name="__main__")
except SystemExit as e:
    code = e.code
else:
    code = 0
me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print("BENCH " + json.dumps({"status": code, "wallS": time.time() - t, "cpuS": me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime,
      "maxRssMiB": max(me.ru_maxrss, kids.ru_maxrss) / 1024}), file=sys.stderr)
`;

function trace(label, argv, env = {}) {
  const scratch = mkdtempSync(join(tmpdir(), "vramfit-bench-trace-"));
  const run = spawnSync(python, ["-c", harness, ...argv, "--out", join(scratch, "trace.json"), "--no-cache"], {
    cwd: root,
    env: { ...process.env, PYTHONPATH: join(root, "python"), VRAMFIT_TRACE_CACHE: scratch, ...env },
    encoding: "utf8",
  });
  rmSync(scratch, { recursive: true, force: true });
  const line = run.stderr.split("\n").find((l) => l.startsWith("BENCH "));
  if (!line) throw new Error(`${label}: ${run.stderr.trim().split("\n").slice(-3).join(" | ")}`);
  const r = JSON.parse(line.slice(6));
  console.log(`${label.padEnd(34)} status ${r.status}  wall ${r.wallS.toFixed(1)} s  cpu ${r.cpuS.toFixed(1)} s  host peak ${r.maxRssMiB.toFixed(0)} MiB`);
}

const config = (name) => join(root, "python", "tests", "configs", name);
console.log(`# ${new Date().toISOString()}  load ${(await import("node:os")).loadavg()[0].toFixed(1)}  ${python}`);
if (!only || only === "compile") {
  const extensions = mkdtempSync(join(tmpdir(), "vramfit-bench-ext-"));
  trace("compile fake CUDA + tiny llama", ["--hf-config", config("tiny-llama.json"), "--seq", "16"], { VRAMFIT_TORCH_EXTENSIONS: extensions });
  rmSync(extensions, { recursive: true, force: true });
}
if (!only || only === "7b") trace("Llama-2-7B train seq 2048", ["--hf-config", config("llama-2-7b.json"), "--seq", "2048"]);
if (!only || only === "70b") trace("Llama-2-70B train seq 2048", ["--hf-config", config("llama-2-70b.json"), "--seq", "2048"]);

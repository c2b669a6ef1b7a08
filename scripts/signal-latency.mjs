#!/usr/bin/env node
// How long the CLI can go without looking at a signal: the longest event-loop stall of the
// heaviest analytic commands on the largest inputs the limits allow (docs/reliability.md,
// "Signals"). A SIGINT waits at most that long, plus the exit itself.
//
//   npm run build:ts && node scripts/signal-latency.mjs [--json]
//
// Each command runs in its own Node with a preloaded event-loop monitor (perf_hooks'
// monitorEventLoopDelay, 5 ms resolution); the table shows its wall time, its longest stall, the
// 99th percentile and its peak resident memory.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const { LIMITS } = await import(join(root, "dist", "workload", "limits.js"));
const dir = mkdtempSync(join(tmpdir(), "vramfit-latency-"));
const monitor = join(dir, "monitor.cjs");
const report = join(dir, "report.json");
writeFileSync(
  monitor,
  `const { monitorEventLoopDelay } = require("node:perf_hooks");
const h = monitorEventLoopDelay({ resolution: 5 }); h.enable();
process.on("exit", () => { h.disable(); require("node:fs").writeFileSync(${JSON.stringify(report)}, JSON.stringify({ maxMs: h.max / 1e6, p99Ms: h.percentile(99) / 1e6, rssBytes: process.resourceUsage().maxRSS * 1024 })); });
`,
);

// The largest inputs: the deepest transformer and CNN the limits allow.
const transformer = join(dir, "transformer.json");
writeFileSync(transformer, JSON.stringify({ kind: "transformer", hiddenSize: 4096, layers: LIMITS.transformerLayers, heads: 32, vocabSize: 32000, maxPositions: 4096, ffn: "gated", ffnSize: 11008, positions: "rotary" }));
const cnn = join(dir, "cnn.json");
const blocks = Math.floor(LIMITS.cnnLayers / 3);
writeFileSync(cnn, JSON.stringify({ kind: "cnn", channels: 3, imageSize: 32, classes: 10, layers: Array.from({ length: blocks }, () => [{ type: "conv", out: 64, kernel: 3, padding: 1 }, { type: "batchnorm" }, { type: "relu", inplace: true }]).flat() }));

const cases = [
  [`transformer, ${LIMITS.transformerLayers} layers`, ["batch", "--spec", transformer, "--gpu", "T4"]],
  [`transformer, ${LIMITS.transformerLayers} layers`, ["gpus", "--fit", "--spec", transformer, "--min-batch", "4096"]],
  [`CNN, ${blocks * 3} layers`, ["batch", "--spec", cnn, "--gpu", "T4", "--min-batch", "64"]],
  [`CNN, ${blocks * 3} layers`, ["gpus", "--fit", "--spec", cnn, "--min-batch", "4096"]],
];

const rows = [];
for (const [input, args] of cases) {
  const started = performance.now();
  const run = spawnSync(process.execPath, ["-r", monitor, join(root, "bin", "vramfit.js"), ...args], { encoding: "utf8", maxBuffer: 64 * 2 ** 20 });
  const wallMs = performance.now() - started;
  if (run.status !== 0 && run.status !== 1) throw new Error(`vramfit ${args.join(" ")}: exit ${run.status}\n${run.stderr}`);
  const { maxMs, p99Ms, rssBytes } = JSON.parse(readFileSync(report, "utf8"));
  rows.push({ input, command: `vramfit ${args.filter((a) => !a.startsWith(dir)).join(" ").replace("--spec ", "--spec FILE ")}`, wallMs, maxStallMs: maxMs, p99StallMs: p99Ms, rssBytes });
}
rmSync(dir, { recursive: true, force: true });

if (process.argv.includes("--json")) {
  process.stdout.write(JSON.stringify(rows, null, 2) + "\n");
} else {
  console.log("| input | command | wall (s) | longest stall (ms) | p99 (ms) | peak RSS (MiB) |");
  console.log("| --- | --- | --- | --- | --- | --- |");
  for (const r of rows) console.log(`| ${r.input} | \`${r.command}\` | ${(r.wallMs / 1000).toFixed(1)} | ${r.maxStallMs.toFixed(0)} | ${r.p99StallMs.toFixed(0)} | ${(r.rssBytes / 2 ** 20).toFixed(0)} |`);
}

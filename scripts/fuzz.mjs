#!/usr/bin/env node
// A fuzz campaign: the two fuzz suites (test/unit/fuzzParsers.test.ts, test/cli/fuzzCli.test.ts)
// at N times the counts CI runs, and one table of what they tried and what came of it — the
// figures docs/reliability.md quotes. Fixed seeds: the same N gives the same inputs.
//   npm run build:ts && node scripts/fuzz.mjs --scale 4            # prints the table
//   node scripts/fuzz.mjs --scale 4 --write                          # and puts it in docs/reliability.md
// Exits 1 when any input ended in a stack trace, a hang or a wrong exit status (vitest says which).
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const scaleAt = args.indexOf("--scale");
const scale = scaleAt >= 0 ? Number(args[scaleAt + 1]) : 1;
if (!Number.isFinite(scale) || scale < 1) {
  console.error("fuzz: --scale N: expected a number ≥ 1");
  process.exit(2);
}

const report = mkdtempSync(join(tmpdir(), "vramfit-fuzz-report-"));
const loadAtStart = loadavg()[0];
const started = performance.now();
const vitest = spawnSync(process.execPath, [join(root, "node_modules", "vitest", "vitest.mjs"), "run", "test/unit/fuzzParsers.test.ts", "test/cli/fuzzCli.test.ts"], {
  cwd: root,
  env: { ...process.env, VRAMFIT_FUZZ_SCALE: String(scale), VRAMFIT_FUZZ_REPORT: report },
  stdio: ["ignore", "inherit", "inherit"],
});
const seconds = (performance.now() - started) / 1000;

const tallies = readdirSync(report)
  .sort()
  .flatMap((file) => JSON.parse(readFileSync(join(report, file), "utf8")).tallies);
rmSync(report, { recursive: true, force: true });
if (tallies.length === 0) {
  console.error("fuzz: the suites wrote no figures (did they run? `npm run build:ts` first)");
  process.exit(1);
}

// Each input limit breached through the built CLI, three times: the status, the one line, the time.
const scratch = mkdtempSync(join(tmpdir(), "vramfit-breaches-"));
const file = (name, text) => {
  writeFileSync(join(scratch, name), text);
  return join(scratch, name);
};
const TRANSFORMER = { kind: "transformer", hiddenSize: 64, layers: 2, heads: 4, vocabSize: 100, maxPositions: 64 };
const big = join(scratch, "17MiB.json");
execFileSync("truncate", ["-s", "17M", big]);
const breaches = [
  ["a file over 16 MiB", ["plan", "--spec", big]],
  ["/dev/zero as a spec", ["plan", "--spec", "/dev/zero"]],
  ["JSON nested 1,000,000 deep", ["plan", "--spec", file("deep.json", `${"[".repeat(1e6)}${"]".repeat(1e6)}`)]],
  ["10,000,000 transformer layers", ["batch", "--gpu", "H100-80GB", "--spec", file("layers.json", JSON.stringify({ ...TRANSFORMER, layers: 1e7 }))]],
  ["100,000 CNN layers", ["batch", "--gpu", "H100-80GB", "--spec", file("cnn.json", JSON.stringify({ kind: "cnn", layers: Array.from({ length: 1e5 }, () => ({ type: "relu" })) }))]],
  ["hiddenSize 1e15", ["plan", "--spec", file("wide.json", JSON.stringify({ ...TRANSFORMER, hiddenSize: 1e15 }))]],
  ["a 5 MB field", ["plan", "--spec", file("field.json", JSON.stringify({ ...TRANSFORMER, name: "n".repeat(5e6) }))]],
  ["--params 1e15", ["plan", "--params", "1e15", "--per-sample", "1GiB"]],
  ["a plan past 2^53 bytes", ["plan", "--attention", "eager", "--precision", "fp32", "--spec", file("long.json", JSON.stringify({ ...TRANSFORMER, hiddenSize: 8192, heads: 64, positions: "rotary", maxPositions: 2 ** 24 }))]],
];
const breachRows = breaches.map(([what, argv]) => {
  let slowest = 0;
  let line = "";
  let status = null;
  for (let i = 0; i < 3; i++) {
    const t = performance.now();
    const r = spawnSync(process.execPath, [join(root, "bin", "vramfit.js"), ...argv], { encoding: "utf8", env: { PATH: process.env.PATH } });
    slowest = Math.max(slowest, performance.now() - t);
    status = r.status;
    line = r.stderr.trimEnd();
  }
  const oneLine = !line.includes("\n") && line.length < 600;
  return { what, status, oneLine, slowest, line: line.replace(scratch, "…") };
});
rmSync(scratch, { recursive: true, force: true });
const breachTable = [
  "| input past a limit | exit | one line | slowest of 3 (ms, start-up included) | the line (paths shortened) |",
  "|---|---:|---|---:|---|",
  ...breachRows.map((b) => `| ${b.what} | ${b.status} | ${b.oneLine ? "yes" : "**no**"} | ${Math.round(b.slowest)} | \`${b.line.slice(0, 160).replace(/\|/g, "\\|")}${b.line.length > 160 ? "…" : ""}\` |`),
].join("\n");
const breachesFailed = breachRows.some((b) => b.status !== 2 || !b.oneLine);

const sum = (key) => tallies.reduce((total, t) => total + t[key], 0);
const number = (n) => n.toLocaleString("en-US");
const rows = tallies.map((t) => `| ${t.name} | ${number(t.inputs)} | ${number(t.answers)} | ${number(t.rejections)} | ${t.stackTraces} | ${t.hangs} | ${t.wrongStatuses} | ${Math.round(t.slowestMs)} |`);
const table = [
  `Fuzz run: \`node scripts/fuzz.mjs --scale ${scale}\` (fixed seeds; ${cpus().length} CPUs with a load average of ${loadAtStart.toFixed(1)} at the start, Node ${process.versions.node}), ${Math.round(seconds)} s.`,
  "",
  "| what | inputs | answers | one-line refusals | stack traces | hangs | wrong exit statuses | slowest input (ms) |",
  "|---|---:|---:|---:|---:|---:|---:|---:|",
  ...rows,
  `| **all** | **${number(sum("inputs"))}** | ${number(sum("answers"))} | ${number(sum("rejections"))} | **${sum("stackTraces")}** | **${sum("hangs")}** | **${sum("wrongStatuses")}** | ${Math.round(Math.max(...tallies.map((t) => t.slowestMs)))} |`,
  "",
  breachTable,
].join("\n");
console.log(`\n${table}`);

const failed = vitest.status !== 0 || sum("stackTraces") + sum("hangs") + sum("wrongStatuses") > 0 || breachesFailed;
if (args.includes("--write")) {
  if (failed) {
    console.error("fuzz: not written: the run failed");
    process.exit(1);
  }
  const BEGIN = "<!-- fuzz:begin -->";
  const END = "<!-- fuzz:end -->";
  const path = join(root, "docs", "reliability.md");
  const doc = readFileSync(path, "utf8");
  const start = doc.indexOf(BEGIN);
  const stop = doc.indexOf(END);
  if (start < 0 || stop < start) throw new Error(`docs/reliability.md lacks the ${BEGIN} … ${END} markers`);
  writeFileSync(path, `${doc.slice(0, start + BEGIN.length)}\n${table}\n${doc.slice(stop)}`);
  console.log("fuzz: docs/reliability.md updated");
}
process.exit(failed ? 1 : 0);

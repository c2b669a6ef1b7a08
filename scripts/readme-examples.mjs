#!/usr/bin/env node
// Regenerates the example outputs of the README and of docs/*.md by running the built CLI (no hand-edited output).
//   node scripts/readme-examples.mjs            rewrite them
//   node scripts/readme-examples.mjs --check [--readme FILE] [--doc FILE]... [--report FILE]    exit 1 naming each block that
//                                  is stale (timings aside); --report writes {"FILE as given": [its stale blocks]} as JSON
// With --readme or --doc, only the files named; else README.md and every docs/*.md. One run checks many files at the
// cost of their distinct commands: a command, console block or library example that two files share runs once (the
// docs test checks the documents and altered copies of them in one run).
// The README's blocks are the named ones below. Any document may also hold, generated from the commands written in it:
//   <!-- vramfit-output:begin --> a ```console block: its `$ ` lines run in order in one /bin/sh (`vramfit` is this
//                                  checkout's), each followed by what it printed (stdout and stderr) <!-- vramfit-output:end -->
//   <!-- vramfit: ARGS → FIELD -->VALUE<!-- /vramfit -->   a figure in prose: FIELD of `vramfit ARGS --json`, a dotted
//                                  path whose steps are keys, array indexes (`highlights.0`) or filters picking the
//                                  array element whose key has that value (`highlights[part=frozen weights]`); `in GiB`
//                                  or `in MiB` after it shows bytes in that unit; numbers are grouped by thousands
//   <!-- trace-agreement: COUNT [for PRESET,...] -->VALUE<!-- /trace-agreement -->   a count of the trace-agreement
//                                  test's fixture against the built model (scripts/reference/trace-agreement-ratios.mjs),
//                                  of the presets named or all: cases, presets, comparisons, within1, lowest, highest
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { readmeBlock, runLibraryExample } from "./readme-library-example.mjs";
import { agreementCounts } from "./reference/trace-agreement-ratios.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
// No simulated context cost, like test/cli/runCli.ts's machines, until the device path counts it (issue 11).
const simulated = {
  VRAMFIT_CUDA_LIBRARY: "build/Release/libcudasim.so",
  CUDASIM_DEVICES: "NVIDIA H100 80GB HBM3:85520809984:3221225472",
  CUDASIM_CONTEXT_BYTES: "0",
};

// The examples' device locks in a folder of this run's own: in the shared default (/tmp/vramfit-UID)
// another process probing a simulated GPU of the same UUID at the same moment (a test file beside,
// a benchmark) made an example print "another vramfit process ... is probing this device" and read
// as stale (the clean-clone run of 3a251c2, 03:36, beside scripts/bench.mjs's --device all runs).
const lockDir = mkdtempSync(join(tmpdir(), "vramfit-doc-locks-"));
process.on("exit", () => rmSync(lockDir, { recursive: true, force: true }));

/** Runs `vramfit ARGS` and returns what a terminal shows: stdout and stderr, in that order. */
function vramfit(args, env = { VRAMFIT_CUDA_LIBRARY: "libcuda.so.1" }) {
  const run = spawnSync(process.execPath, ["bin/vramfit.js", ...args], { cwd: root, env: { PATH: process.env.PATH, VRAMFIT_LOCK_DIR: lockDir, ...env }, encoding: "utf8" });
  return { text: `${run.stdout}${run.stderr}`.trimEnd(), status: run.status };
}

/** The README's named blocks, as vramfit prints them today: run only when a README is among the documents (each
 * is a vramfit process or more, about 2 s of a --check of docs alone). */
function readmeExamples() {
  const start = JSON.parse(readFileSync(`${root}package.json`, "utf8")).scripts.start.replace(/^node bin\/vramfit\.js /, "");
  const startRun = spawnSync(process.execPath, ["bin/vramfit.js", ...start.split(" ")], { cwd: root, env: { PATH: process.env.PATH }, encoding: "utf8" });
  const lines = startRun.stdout.trimEnd().split("\n");
  const examples = {
    example: ["```console", `$ npm start    # vramfit ${start}`, lines[0], startRun.stderr.trimEnd(), ...lines.slice(1), "```"].join("\n"),
    "device-example": [
      "```console",
      `$ export VRAMFIT_CUDA_LIBRARY=${simulated.VRAMFIT_CUDA_LIBRARY} CUDASIM_DEVICES='${simulated.CUDASIM_DEVICES}' CUDASIM_CONTEXT_BYTES=${simulated.CUDASIM_CONTEXT_BYTES}`,
      "$ vramfit batch --model resnet152 --precision fp32 --optimizer momentum",
      vramfit(["batch", "--model", "resnet152", "--precision", "fp32", "--optimizer", "momentum"], simulated).text,
      "$ vramfit check --need 70GiB; echo \"exit status $?\"",
      `${vramfit(["check", "--need", "70GiB"], simulated).text}\nexit status ${vramfit(["check", "--need", "70GiB"], simulated).status}`,
      "```",
    ].join("\n"),
    "plan-example": [
      "```console",
      "$ vramfit plan --model bert-large --seq 512 --precision amp --optimizer adamw --batch 32",
      vramfit(["plan", "--model", "bert-large", "--seq", "512", "--precision", "amp", "--optimizer", "adamw", "--batch", "32"]).text,
      "```",
    ].join("\n"),
  };

  // A trace vramfit wrote (test/fixtures/trace/SOURCES.md has the command): the README shows the command that made it, then the answer from it.
  const traceFixture = "test/fixtures/trace/llama-3.2-1b.trace.json";
  examples["trace-example"] = [
    "```console",
    "$ vramfit trace --hf-config llama-3.2-1b/config.json --seq 1024 --precision bf16 --gpu H100-80GB --out step.json",
    "$ vramfit batch --trace step.json --gpu H100-80GB",
    vramfit(["batch", "--trace", traceFixture, "--gpu", "H100-80GB"]).text,
    "```",
  ].join("\n");

  const adviceArgs = ["check", "--model", "llama-2-13b", "--mode", "train", "--precision", "amp", "--optimizer", "adamw", "--seq", "2048", "--batch", "4", "--gpu", "A100-80GB", "--host-memory", "256GiB"];
  examples["advice-example"] = ["```console", `$ vramfit ${adviceArgs.join(" ")}`, vramfit(adviceArgs).text, "```"].join("\n");
  return examples;
}

const argValues = (name) => process.argv.flatMap((arg, i) => (arg === name && i + 1 < process.argv.length ? [process.argv[i + 1]] : []));
const named = [...argValues("--readme").map((file) => ({ file, readme: true })), ...argValues("--doc").map((file) => ({ file, readme: false }))];
const documents =
  named.length > 0
    ? named
    : [{ file: `${root}README.md`, readme: true }, ...readdirSync(`${root}docs`).filter((f) => f.endsWith(".md")).sort().map((f) => ({ file: `${root}docs/${f}`, readme: false }))];

// What differs between two honest runs: wall times (a table's `time` column, `in 0.7 s`, and the padding before
// them), a temporary directory's name, a simulated GPU's UUID (it follows CUDASIM_STATE, a fresh file per run),
// and the peak NVML caught of an --exec run that ran out of memory (whether a sample landed before it failed is timing).
const comparable = (text) =>
  text
    .replace(/(out of memory[^\n]*?peak )(unmeasured|\d+(\.\d+)? \w+ \([\w-]+\))/g, "$1P")
    .replace(/\b\d+(\.\d+)? (ms|s)\b/g, "T")
    .replace(/\/tmp\/[\w.-]+/g, "/tmp/X")
    .replace(/\b(GPU|MIG)-[0-9a-f]{8}-[0-9a-f-]{27}\b/g, "$1-X")
    .replace(/ +/g, " ");

/** The first line where a document's text and vramfit's output part (timings aside), for the stale message. */
function firstDifference(written, generated) {
  const a = written.trim().split("\n");
  const b = generated.trim().split("\n");
  const k = a.findIndex((line, i) => comparable(line) !== comparable(b[i] ?? ""));
  const at = k < 0 ? a.length : k;
  return ` (the document has ${JSON.stringify(a[at] ?? "")}, vramfit printed ${JSON.stringify(b[at] ?? "")})`;
}

/** Replaces what lies between `begin` and `end` (each occurrence, in order) by what `generate(inner)` returns. */
async function regenerate(text, begin, end, generate, onStale, label) {
  let out = "";
  let at = 0;
  for (;;) {
    const i = text.indexOf(begin, at);
    if (i < 0) break;
    const close = begin.endsWith("-->") ? i + begin.length : text.indexOf("-->", i) + 3;
    const j = text.indexOf(end, close);
    if (j < 0) throw new Error(`${label}: ${begin} without ${end}`);
    const head = text.slice(i, close);
    const inner = text.slice(close, j);
    const body = await generate(inner, head);
    if (comparable(inner.trim()) !== comparable(body.trim())) onStale(head, inner, body);
    out += text.slice(at, close) + body;
    at = j;
  }
  return out + text.slice(at);
}

/** A console block run again: each `$ ` line in one shell, each followed by its output (once per run for the same lines). */
const consoleBlocks = new Map();
function consoleBlock(inner) {
  const commands = inner.split("\n").filter((line) => line.startsWith("$ ")).map((line) => line.slice(2));
  const key = commands.join("\n");
  if (!consoleBlocks.has(key)) consoleBlocks.set(key, runConsoleBlock(commands));
  return consoleBlocks.get(key);
}
function runConsoleBlock(commands) {
  const shim = mkdtempSync(join(tmpdir(), "vramfit-doc-"));
  writeFileSync(join(shim, "vramfit"), `#!/bin/sh\nexec "${process.execPath}" "${root}bin/vramfit.js" "$@"\n`, { mode: 0o755 });
  const marker = (k) => `@@vramfit-doc-output-${k}@@`;
  const script = commands.map((command, k) => `echo '${marker(k)}'\n{ ${command}\n} 2>&1`).join("\n");
  const run = spawnSync("/bin/sh", ["-c", script], { cwd: root, env: { PATH: `${shim}:${process.env.PATH}`, HOME: process.env.HOME ?? "/", VRAMFIT_LOCK_DIR: lockDir }, encoding: "utf8" });
  rmSync(shim, { recursive: true, force: true });
  const outputs = run.stdout.split(/@@vramfit-doc-output-\d+@@\n/).slice(1);
  const lines = commands.flatMap((command, k) => [`$ ${command}`, ...(outputs[k] ?? "").trimEnd().split("\n").filter((line, n, all) => all.length > 1 || line !== "")]);
  return ["", "```console", ...lines, "```", ""].join("\n");
}

/** One step of a figure's FIELD path: a key, an array index, or `key[k=v]`, the element of that array whose k is v. */
function step(value, part) {
  const filter = /^([^[]*)\[([^=\]]+)=([^\]]*)\]$/.exec(part);
  if (filter === null) return value?.[part];
  const list = filter[1] === "" ? value : value?.[filter[1]];
  const found = Array.isArray(list) ? list.filter((item) => String(item?.[filter[2]]) === filter[3]) : [];
  if (found.length > 1) throw new Error(`${part} picks ${found.length} elements, not one`);
  return found[0];
}

// A table quotes one command's answer many times: each command runs once.
const jsonRuns = new Map();
function jsonRun(args) {
  if (!jsonRuns.has(args))
    jsonRuns.set(args, spawnSync(process.execPath, ["bin/vramfit.js", ...args.split(/\s+/), "--json"], { cwd: root, env: { PATH: process.env.PATH, VRAMFIT_CUDA_LIBRARY: "libcuda.so.1" }, encoding: "utf8" }));
  return jsonRuns.get(args);
}

/** A figure quoted in prose: `ARGS → FIELD [in GiB|in MiB]`, run with --json. */
function figure(head) {
  const spec = /<!-- vramfit: (.+?) → (.+?)( in ([GM])iB)? -->/.exec(head);
  if (spec === null) throw new Error(`a figure needs <!-- vramfit: ARGS → FIELD -->, got ${head}`);
  const run = jsonRun(spec[1]);
  let value = JSON.parse(run.stdout);
  // Split on dots outside a filter's brackets, so a filter's value may hold one.
  for (const part of spec[2].match(/(?:[^.[]|\[[^\]]*\])+/g) ?? []) value = step(value, part);
  if (typeof value !== "number" && typeof value !== "string") throw new Error(`vramfit ${spec[1]} --json has no ${spec[2]} (exit ${run.status}: ${run.stderr.trim()})`);
  if (typeof value === "string") return value;
  if (spec[4] === "G") return (value / 2 ** 30).toFixed(2);
  if (spec[4] === "M") return (value / 2 ** 20).toLocaleString("en-US", { maximumFractionDigits: 2 });
  return value.toLocaleString("en-US");
}

const agreements = new Map();
/** A count of the trace-agreement fixture: `<!-- trace-agreement: COUNT [for PRESET,...] -->`. */
async function agreementFigure(head) {
  const [, count, presets = ""] = /<!-- trace-agreement: (\w+)(?: for ([\w.,-]+))? -->/.exec(head) ?? [];
  if (!agreements.has(presets)) agreements.set(presets, await agreementCounts(presets === "" ? [] : presets.split(",")));
  const counts = agreements.get(presets);
  if (count === undefined || !Object.hasOwn(counts, count)) throw new Error(`a trace-agreement count is one of ${Object.keys(counts).join(", ")}, got ${head}`);
  return String(counts[count]);
}

// The README's library example, run once per distinct source.
const libraryRuns = new Map();
async function libraryExampleOutput(code) {
  if (!libraryRuns.has(code)) libraryRuns.set(code, ["```console", (await runLibraryExample(code, simulated)).stdout.trimEnd(), "```"].join("\n"));
  return libraryRuns.get(code);
}

const check = process.argv.includes("--check");
const reportFile = argValues("--report").at(-1);
const report = {};
const examples = documents.some((d) => d.readme) ? readmeExamples() : {};
for (const { file, readme: isReadme } of documents) {
  const name = file.startsWith(root) ? file.slice(root.length) : file;
  const staleHere = (report[file] ??= []);
  let text = readFileSync(file, "utf8");
  if (isReadme) {
    examples["library-example-output"] = await libraryExampleOutput(readmeBlock(text, "library-example"));
    for (const [example, body] of Object.entries(examples)) {
      const begin = `<!-- ${example}:begin -->`;
      const end = `<!-- ${example}:end -->`;
      const i = text.indexOf(begin);
      const j = text.indexOf(end);
      if (i < 0 || j < i) throw new Error(`${name} lacks ${begin} … ${end}`);
      if (comparable(text.slice(i + begin.length, j).trim()) !== comparable(body.trim())) staleHere.push(example);
      text = `${text.slice(0, i + begin.length)}\n${body}\n${text.slice(j)}`;
    }
  }
  text = await regenerate(text, "<!-- vramfit-output:begin -->", "<!-- vramfit-output:end -->", consoleBlock, (_, inner, body) => staleHere.push(`${name}'s block "${/^\$ (?!export)(.*)$/m.exec(inner)?.[1] ?? ""}"${firstDifference(inner, body)}`), name);
  text = await regenerate(text, "<!-- vramfit: ", "<!-- /vramfit -->", (_, head) => figure(head), (head) => staleHere.push(`${name}'s figure ${head.slice(5, -4)}`), name);
  text = await regenerate(text, "<!-- trace-agreement: ", "<!-- /trace-agreement -->", (_, head) => agreementFigure(head), (head) => staleHere.push(`${name}'s figure ${head.slice(5, -4)}`), name);
  if (!check) writeFileSync(file, text);
}
const stale = Object.values(report).flat();
if (reportFile !== undefined) writeFileSync(reportFile, `${JSON.stringify(report, null, 2)}\n`);
if (check && stale.length > 0) {
  console.error(`stale example output in ${stale.join(", ")} (regenerate: node scripts/readme-examples.mjs)`);
  process.exit(1);
}

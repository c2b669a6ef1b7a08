#!/usr/bin/env node
// Regenerates the README's example outputs by running the built CLI (no hand-edited output).
//   node scripts/readme-examples.mjs            rewrite them
//   node scripts/readme-examples.mjs --check [--readme FILE]    exit 1 naming each block that is stale (timings aside)
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { readmeBlock, runLibraryExample } from "./readme-library-example.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
// No simulated context cost, like test/cli/runCli.ts's machines, until the device path counts it (issue 11).
const simulated = {
  VRAMFIT_CUDA_LIBRARY: "build/Release/libcudasim.so",
  CUDASIM_DEVICES: "NVIDIA H100 80GB HBM3:85520809984:3221225472",
  CUDASIM_CONTEXT_BYTES: "0",
};

/** Runs `vramfit ARGS` and returns what a terminal shows: stdout and stderr, in that order. */
function vramfit(args, env = { VRAMFIT_CUDA_LIBRARY: "libcuda.so.1" }) {
  const run = spawnSync(process.execPath, ["bin/vramfit.js", ...args], { cwd: root, env: { PATH: process.env.PATH, ...env }, encoding: "utf8" });
  return { text: `${run.stdout}${run.stderr}`.trimEnd(), status: run.status };
}

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

const readmeArg = process.argv.indexOf("--readme");
const readmePath = readmeArg > 0 ? process.argv[readmeArg + 1] : `${root}README.md`;
let readme = readFileSync(readmePath, "utf8");
examples["library-example-output"] = ["```console", (await runLibraryExample(readmeBlock(readme, "library-example"), simulated)).stdout.trimEnd(), "```"].join("\n");
// Wall times (a table's `time` column, `in 0.7 s`) are the one thing that differs between two honest runs.
const withoutTimings = (text) => text.replace(/\b\d+(\.\d+)? (ms|s)\b/g, "T");
const check = process.argv.includes("--check");
const stale = [];
for (const [name, body] of Object.entries(examples)) {
  const begin = `<!-- ${name}:begin -->`;
  const end = `<!-- ${name}:end -->`;
  const i = readme.indexOf(begin);
  const j = readme.indexOf(end);
  if (i < 0 || j < i) throw new Error(`README.md lacks ${begin} … ${end}`);
  if (check && withoutTimings(readme.slice(i + begin.length, j).trim()) !== withoutTimings(body.trim())) stale.push(name);
  readme = `${readme.slice(0, i + begin.length)}\n${body}\n${readme.slice(j)}`;
}
if (!check) writeFileSync(readmePath, readme);
else if (stale.length > 0) {
  console.error(`README.md: stale example output in ${stale.join(", ")} (regenerate: node scripts/readme-examples.mjs)`);
  process.exit(1);
}

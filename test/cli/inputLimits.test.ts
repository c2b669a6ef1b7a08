// Inputs have stated limits (issue 13, item 2), seen from the spawned CLI: what hung, ran V8 out of
// heap or crashed in C++ before now ends in one line naming the field and the limit, exit 2.
import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli, type CliRun } from "./runCli.js";
import { ciResource } from "../ciResources.js";

// In CI, after the installs made beside the first tests (.ci/run): a bound is a time (5 s), measured where nothing is installing.
await ciResource("settled");

const dir = mkdtempSync(join(tmpdir(), "vramfit-limits-"));
function file(name: string, content: string | object): string {
  const path = join(dir, name);
  writeFileSync(path, typeof content === "string" ? content : JSON.stringify(content));
  return path;
}
const TRANSFORMER = { kind: "transformer", hiddenSize: 64, layers: 2, heads: 4, vocabSize: 100, maxPositions: 64 };

/** One line, exit 2, nothing on stdout, a short message; and fast (it took 80 to 120 s, or crashed, before). */
async function expectRefused(args: string[], line: RegExp): Promise<CliRun> {
  const started = performance.now();
  const run = await runCli(args);
  const elapsedMs = performance.now() - started;
  expect(run.stdout).toBe("");
  expect(run.stderr.trimEnd().split("\n")).toHaveLength(1);
  expect(run.stderr.trimEnd()).toMatch(line);
  expect(run.stderr.length).toBeLessThan(600);
  expect(run.status).toBe(2);
  // A regression guard with room for a loaded machine; docs/reliability.md has the measured times.
  expect(elapsedMs).toBeLessThan(5000);
  return run;
}

describe("what is read", () => {
  it("--spec /dev/zero (std::bad_alloc after 80 s before)", async () => {
    await expectRefused(["batch", "--spec", "/dev/zero", "--gpu", "H100-80GB"], /^vramfit: --spec: expected a regular file or a pipe, not a character device, got "\/dev\/zero"$/);
  });

  it("a directory, and a file over 16 MiB", async () => {
    await expectRefused(["plan", "--hf-config", dir], /^vramfit: --hf-config: expected a regular file or a pipe, not a directory/);
    const big = join(dir, "big.json");
    execFileSync("truncate", ["-s", "17M", big]);
    await expectRefused(["plan", "--spec", big], /^vramfit: --spec: expected a file of at most 16 MiB \(vramfit's input limit\), got ".*big\.json"$/);
  });

  it("JSON nested a million levels deep (exit 4, internal error, before)", async () => {
    const deep = file("deep.json", `${"[".repeat(1_000_000)}${"]".repeat(1_000_000)}`);
    await expectRefused(["plan", "--spec", deep], /^vramfit: --spec: expected JSON nested at most 64 levels deep \(vramfit's input limit\), got ".*deep\.json"$/);
  });

  it("a pipe is read (process substitution, /dev/stdin fed by a pipe)", async () => {
    const run = await runCli(["plan", "--spec", "/dev/stdin", "--json"].map(String), { PATH: process.env.PATH ?? "" });
    // stdin is not a pipe here (spawned with stdin ignored: /dev/null, a character device): refused.
    expect(run.status).toBe(2);
    const piped = execFileSync("sh", ["-c", `printf '%s' '${JSON.stringify(TRANSFORMER)}' | "${process.execPath}" bin/vramfit.js plan --spec /dev/stdin --json`], { encoding: "utf8" });
    expect(JSON.parse(piped).parameterCount).toBeGreaterThan(0);
  });
});

describe("what is built and computed", () => {
  it("a 10-million-layer spec (3.5 GB of RSS and no answer before)", async () => {
    await expectRefused(["batch", "--spec", file("layers.json", { ...TRANSFORMER, layers: 10_000_000 }), "--gpu", "H100-80GB"], /layers: expected a whole number from 1 to 256 \(vramfit's limit on a transformer's layers\), got 10000000$/);
  });

  it("100,000 CNN layers (batch did not finish in 120 s)", async () => {
    const layers = Array.from({ length: 100_000 }, () => ({ type: "relu" }));
    await expectRefused(["batch", "--spec", file("cnn.json", { kind: "cnn", layers }), "--gpu", "H100-80GB"], /layers: expected a whole number from 1 to 5,000 \(vramfit's limit on a CNN's layers, nested ones included\)/);
  });

  it("hiddenSize 1e15 (2.4e31 parameters and 5329070518242608 PiB before)", async () => {
    await expectRefused(["plan", "--spec", file("wide.json", { ...TRANSFORMER, hiddenSize: 1e15 })], /hiddenSize: expected a whole number from 1 to 16,777,216 \(vramfit's limit on a dimension\), got 1000000000000000$/);
  });

  it("a plan past 2^53 bytes, and a --batch that would take it there", async () => {
    const wide = file("long.json", { ...TRANSFORMER, hiddenSize: 8192, heads: 64, positions: "rotary", maxPositions: 2 ** 24 });
    await expectRefused(["plan", "--spec", wide, "--attention", "eager", "--precision", "fp32"], /^vramfit: workload: expected a plan whose byte counts stay below 8 PiB/);
    await expectRefused(["check", "--params", "1e9", "--per-sample", "1GiB", "--batch", "9e6", "--gpu", "H100-80GB"], /^vramfit: --batch: expected at most 8,388,589 for this workload/); // foreach AdamW's copy of the weights counts too
  });

  it("a 5 MB field is echoed as a short excerpt (a 50 MB field was written to stderr whole)", async () => {
    const run = await expectRefused(["plan", "--spec", file("field.json", { ...TRANSFORMER, name: "n".repeat(5_000_000) })], /name: expected a string of at most 256 characters, got "n+…" \(5000000 characters\)$/);
    expect(run.stderr.length).toBeLessThan(300);
  });
});

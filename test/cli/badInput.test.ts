// Bad input: exit status 2 and one line that names the option, the value and what was expected.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { root, runCli, simulatedGpus } from "./runCli.js";

const ONE_H100 = simulatedGpus("NVIDIA H100 80GB HBM3:85520809984:3221225472");
const WORKLOAD = ["--params", "1e9", "--per-sample", "1GiB"];

function expectOneLineUsageError(run: { status: number | null; stdout: string; stderr: string }, pattern: RegExp) {
  expect(run.status).toBe(2);
  expect(run.stdout).toBe("");
  const lines = run.stderr.trimEnd().split("\n");
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(pattern);
  expect(run.stderr).not.toMatch(/\bat .*\.(js|ts):\d+/); // no stack trace
}

describe("bad input", () => {
  it("--memory 12parsecs", async () => {
    expectOneLineUsageError(await runCli(["batch", ...WORKLOAD, "--memory", "12parsecs"]), /--memory: expected a size .*got "12parsecs"/);
  });

  it("--device 7 on a one-GPU box", async () => {
    expectOneLineUsageError(await runCli(["batch", ...WORKLOAD, "--device", "7"], ONE_H100), /--device: expected a CUDA device ordinal from 0 to 0 .*got 7/);
  });

  it("--params -1", async () => {
    expectOneLineUsageError(await runCli(["batch", "--params", "-1", "--per-sample", "1GiB"]), /--params: expected a whole number from 1 to 1e14 .*, got "-1"/);
  });

  it("--params 1.5 (not a whole count)", async () => {
    expectOneLineUsageError(await runCli(["batch", "--params", "1.5", "--per-sample", "1GiB"]), /--params: expected a whole number/);
  });

  it("--precision fp8", async () => {
    expectOneLineUsageError(await runCli(["batch", ...WORKLOAD, "--precision", "fp8"]), /--precision: expected one of fp32, fp16, bf16, amp, got "fp8"/);
  });

  it("a typo in --gpu suggests the nearest catalog id", async () => {
    expectOneLineUsageError(await runCli(["batch", ...WORKLOAD, "--gpu", "h100-80gv"]), /--gpu: .*"h100-80gv".*did you mean H100-80GB\?/);
  });

  it("a missing workload", async () => {
    expectOneLineUsageError(await runCli(["batch", "--memory", "80GiB"]), /^vramfit: workload: expected exactly one of --model NAME, --hf-config FILE, --spec FILE, or --params N/);
  });

  it("an unknown option", async () => {
    expectOneLineUsageError(await runCli(["batch", "--bogus"]), /unknown option '--bogus'/);
  });

  it("--per-sample 0 (every batch would fit)", async () => {
    expectOneLineUsageError(await runCli(["batch", "--params", "1", "--per-sample", "0", "--memory", "1GiB"]), /--per-sample: expected a size above 0/);
  });

  it("check without --batch or --need", async () => {
    expectOneLineUsageError(await runCli(["check", ...WORKLOAD, "--memory", "80GiB"]), /--batch: expected the batch size to check/);
  });
});

describe("a workload file given to the option it belongs to (issue 25, item 8)", () => {
  const fixture = (path: string) => join(root, "test", "fixtures", path);
  it.each([
    ["--spec", "hf/gpt2.json", /^vramfit: --spec: expected a vramfit spec, not a Hugging Face config\.json \(model_type gpt2\): give this file to --hf-config, got ".*gpt2\.json"$/],
    ["--hf-config", "spec/affine.json", /^vramfit: --hf-config: expected a Hugging Face config\.json, not a vramfit spec: give this file to --spec, got ".*affine\.json"$/],
    ["--spec", "trace/llama-3.2-1b.trace.json", /^vramfit: --spec: expected a vramfit spec, not a step trace \(vramfit trace --out\): give this file to --trace, got/],
    ["--trace", "hf/gpt2.json", /^vramfit: --trace: expected a step trace \(vramfit trace --out\), not a Hugging Face config\.json \(model_type gpt2\): give this file to --hf-config, got/],
  ])("%s %s names the option it belongs to", async (option, file, pattern) => {
    expectOneLineUsageError(await runCli(["batch", option, fixture(file), "--gpu", "A100-80GB"]), pattern);
  });

  it("--spec - reads the spec from standard input, as --spec FILE reads it", () => {
    const spec = readFileSync(fixture("spec/tiny-llama.json"), "utf8");
    const vramfit = (args: string[], input?: string) =>
      spawnSync(process.execPath, [join(root, "bin", "vramfit.js"), ...args], { input, encoding: "utf8", env: { PATH: process.env.PATH ?? "" } });
    const piped = vramfit(["batch", "--spec", "-", "--gpu", "A100-80GB", "--json"], spec);
    expect(piped.status, piped.stderr).toBe(0);
    const byFile = vramfit(["batch", "--spec", fixture("spec/tiny-llama.json"), "--gpu", "A100-80GB", "--json"]);
    const answer = (stdout: string) => (({ elapsedMs: _, ...rest }) => rest)(JSON.parse(stdout) as { elapsedMs: number });
    expect(answer(piped.stdout)).toEqual(answer(byFile.stdout));
    expect((JSON.parse(piped.stdout) as { batchSize: number }).batchSize).toBeGreaterThan(1);
  });

  it("--spec - with nothing on standard input (a device) says how to give it", async () => {
    expectOneLineUsageError(await runCli(["batch", "--spec", "-", "--gpu", "A100-80GB"]), /^vramfit: --spec: expected JSON piped or redirected to standard input \(`vramfit … --spec - < file\.json`\), not a terminal or a device, got "-"$/);
  });
});


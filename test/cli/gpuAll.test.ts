// scripts/gpu-all.sh: every prepared GPU check in one command, for a session lent a GPU for
// minutes. Its dry run (the simulated driver, PyTorch on the CPU at tiny shapes) proves the
// plumbing under the torch 2.13 CPU venv; its argument checks run everywhere.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { ONE_THREAD, skipsWithoutTorchCpu, torchCpuPython } from "../torchCpuPython.js";
import { root } from "./runCli.js";
import { ciResource } from "../ciResources.js";

// In CI, made beside the tests (.ci/run): wait for it here, before anything reads its variables.
await ciResource("cpu");

// The dry run's PyTorch: the torch 2.13 CPU venv (on a GPU box, gpu-all.sh uses $PYTHON, else python3).
const PYTHON = torchCpuPython ?? "";
const skips = skipsWithoutTorchCpu("test/cli/gpuAll.test.ts");
const script = resolve(root, "scripts", "gpu-all.sh");
// Python with torch starts in seconds, in a minute on a loaded 2-core machine: wait on the process.
const LOADED_MACHINE_MS = 480_000;

describe("scripts/gpu-all.sh", () => {
  it.each([
    [["--part", "3"], 'gpu-all: --part: expected 1, 2 or all, got "3"'],
    [["--device", "GPU-1"], 'gpu-all: --device: expected a CUDA ordinal (0, 1, …), got "GPU-1"'],
    [["--bogus"], "gpu-all: unknown argument --bogus (see --help)"],
  ])("refuses %j with one line, exit 2", (args, line) => {
    const run = spawnSync("bash", [script, ...args], { encoding: "utf8" });
    expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 2, stderr: `${line}\n` });
  });

  it.skipIf(skips)(
    "--dry-run runs every check on the simulator and records each one's status in summary.json",
    () => {
      const out = join(mkdtempSync(join(tmpdir(), "vramfit-gpu-all-")), "gpu");
      const run = spawnSync("bash", [script, "--dry-run", "--out", out], { encoding: "utf8", env: { PATH: process.env.PATH ?? "", PYTHON, ...ONE_THREAD }, timeout: LOADED_MACHINE_MS - 10_000 });
      expect(run.status, run.stderr).toBe(0);
      const summary = JSON.parse(readFileSync(join(out, "summary.json"), "utf8")) as { check: string; status: number; timedOut: boolean }[];
      expect(summary.map((s) => [s.check, s.status, s.timedOut])).toEqual(
        ["validate", "sim-vs-gpu", "step-peaks", "gpu-compare", "gpu-exec"].map((check) => [check, 0, false]),
      );
      // Each check's report is there and says what it checked.
      expect(JSON.parse(readFileSync(join(out, "validate.json"), "utf8")).checks.noLeakAfter100Probes.pass).toBe(true);
      expect(JSON.parse(readFileSync(join(out, "sim-vs-gpu.json"), "utf8")).gpu.name).toBe("NVIDIA H200");
      expect(JSON.parse(readFileSync(join(out, "step-peaks.json"), "utf8")).cases).toHaveLength(1);
      const compared = JSON.parse(readFileSync(join(out, "gpu-compare", "summary.json"), "utf8")) as { models: { model: string }[] };
      expect(compared.models.map((m) => m.model)).toEqual(["resnet152", "bert-large"]);
      const exec = JSON.parse(readFileSync(join(out, "gpu-exec", "summary.json"), "utf8")) as { model: string; sameAnswer: boolean }[];
      expect(exec.map((m) => [m.model, m.sameAnswer])).toEqual([["resnet152", true], ["bert-large", true]]);
    },
    LOADED_MACHINE_MS,
  );
});

// scripts/torch-reference.py --dry-run and scripts/gpu-compare.sh --dry-run, under the torch 2.13 CPU venv
// (VRAMFIT_TORCH_CPU_PYTHON, with torchvision and transformers); where it is unset, they skip.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { ONE_THREAD, skipsWithoutTorchCpu, torchCpuPython } from "../torchCpuPython.js";
import { root, simulator } from "./runCli.js";
import { ciResource } from "../ciResources.js";

// In CI, made beside the tests (.ci/run): wait for it here, before anything reads its variables.
await ciResource("cpu");

const PYTHON = torchCpuPython ?? "";
const skips = skipsWithoutTorchCpu("test/cli/torchReference.test.ts");

// The dry run raises a simulated out-of-memory above batch 5; Lightning's binsearch from 2 then
// tries 2 (fits), 4 (fits), 8 (OOM), 6 (OOM), 5 (fits): 5 trials, 3 of them ran a step.
const EXPECTED_TRIALS = [
  [2, true],
  [4, true],
  [8, false],
  [6, false],
  [5, true],
];

// Python with torch takes seconds to start, and a minute or more on a loaded 2-core machine (CI
// failed at the 30 s default): these tests wait on the process, not on a clock of their own.
const LOADED_MACHINE_MS = 240_000;

describe.skipIf(skips)("PyTorch reference (dry run on the CPU)", () => {
  it("torch-reference.py --dry-run searches like Lightning and reports each model", () => {
    const out = join(mkdtempSync(join(tmpdir(), "vramfit-torch-")), "torch.json");
    const run = spawnSync(PYTHON, [resolve(root, "scripts", "torch-reference.py"), "--dry-run", "--out", out], { encoding: "utf8", env: { ...process.env, ...ONE_THREAD }, timeout: LOADED_MACHINE_MS - 10_000 });
    expect(run.status, run.stderr).toBe(0);
    const report = JSON.parse(readFileSync(out, "utf8"));
    expect(JSON.parse(run.stdout)).toEqual(report);
    expect(report).toMatchObject({ dryRun: true, device: "cpu", simulateOomAbove: 5 });
    expect(report.models.map((m: { model: string }) => m.model)).toEqual(["resnet152", "bert-large", "gpt2-medium"]);
    for (const m of report.models) {
      expect(m.batchSize, m.model).toBe(5);
      expect(m.trials.map((t: { batch: number; fits: boolean }) => [t.batch, t.fits])).toEqual(EXPECTED_TRIALS);
      expect(m).toMatchObject({ trialCount: 5, stepsRun: 3, stepsPerTrial: 1, initVal: 2, maxTrials: 25, search: "lightning binsearch" });
      expect(m.atBatch).toMatchObject({ batch: 5, fits: true, steps: 1 });
      expect(m.parameterCount).toBeGreaterThan(0);
      expect(m.searchSeconds).toBeGreaterThan(0);
      expect(m.seconds).toBeGreaterThanOrEqual(m.searchSeconds);
    }
  }, LOADED_MACHINE_MS);

  it("gpu-compare.sh --dry-run writes one report per model with both answers and both times", () => {
    const out = mkdtempSync(join(tmpdir(), "vramfit-compare-"));
    const run = spawnSync("bash", [resolve(root, "scripts", "gpu-compare.sh"), "--dry-run", "--models", "bert-large", "--out", out], {
      env: {
        PATH: process.env.PATH ?? "",
        PYTHON,
        ...ONE_THREAD,
        VRAMFIT_CUDA_LIBRARY: simulator,
        CUDASIM_DEVICES: "NVIDIA H200:150109945856:536870912",
      },
      encoding: "utf8",
      timeout: LOADED_MACHINE_MS - 10_000,
    });
    expect(run.status, run.stderr).toBe(0);
    const r = JSON.parse(readFileSync(join(out, "bert-large.json"), "utf8"));
    expect(r).toMatchObject({ model: "bert-large", dryRun: true });
    // torch 1.13 has no fused attention, so the hand-written BERT is eager, and vramfit is told so.
    expect(r.vramfitArgs).toContain("--seq 512 --precision amp --optimizer adamw");
    expect(r.vramfitArgs).toContain(`--attention ${r.torch.attention === "eager" ? "eager" : "flash"}`);
    expect(r.vramfit.source).toBe("device");
    expect(r.vramfit.probes).toBeGreaterThanOrEqual(1);
    expect(r.vramfit.batchSize).toBeGreaterThan(0);
    expect(r.vramfitAnalytic.batchSize).toBeGreaterThan(0);
    expect(r.torch).toMatchObject({ batchSize: 5, trials: 5, stepsRun: 3 });
    expect(r.batchRatio).toBeCloseTo(r.vramfit.batchSize / 5, 3);
    expect(r.wallSecondsRatio).toBeCloseTo(r.torch.wallSeconds / r.vramfit.wallSeconds, 2);
    expect(r.atTorchBatch.batch).toBe(5);
    expect(r.atTorchBatch.modelBytes).toBeGreaterThan(0);
    const summary = JSON.parse(readFileSync(join(out, "summary.json"), "utf8"));
    expect(summary.models).toEqual([r]);
    expect(run.stdout).toMatch(/^model\s+vramfit batch/);
  }, LOADED_MACHINE_MS);

  it("torch-reference.py --one-step is a job vramfit --exec runs: PyTorch's out-of-memory (simulated above 5) does not fit", () => {
    const job = `${PYTHON} ${resolve(root, "scripts", "torch-reference.py")} --one-step --dry-run --models resnet152 --batch {batch}`;
    const run = spawnSync(process.execPath, [resolve(root, "bin", "vramfit.js"), "check", "--exec", job, "--batch", "6", "--json"], {
      env: { PATH: process.env.PATH ?? "", ...ONE_THREAD, VRAMFIT_CUDA_LIBRARY: simulator, CUDASIM_DEVICES: "NVIDIA H200:150109945856:536870912" },
      encoding: "utf8",
      timeout: LOADED_MACHINE_MS - 10_000,
    });
    expect(run.status, run.stderr).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({ fits: false, batch: 6, run: { exitCode: 1, outOfMemory: "PyTorch" } });
  }, LOADED_MACHINE_MS);
});

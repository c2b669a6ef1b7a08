// On the simulated driver the device answer is the analytic one at the same budget, where PyTorch's out-of-memory path decides it (issue 23: "the same holds for the device answer on the simulator").
import { describe, expect, it } from "vitest";
import { plannedBytes } from "../../src/fit/allocator.js";
import { searchMaxBatch } from "../../src/fit/search.js";
import { buildPlan } from "../../src/plan/buildPlan.js";
import { presetWorkload } from "../../src/workload/presets.js";
import { runJson, simulatedGpus } from "./runCli.js";

interface BatchJson {
  batchSize: number;
  source: string;
  predictedBatchSize: number;
  probes: number;
  budgetBytes: number;
  jobContextBytes: number;
  bytesAtBatch: number;
}

// An A100-40GB with 512 MiB taken by another process: the budget is what is free less the 5% reserve.
const A100 = `NVIDIA A100-SXM4-40GB:${40 * 2 ** 30}:${512 * 2 ** 20}`;

describe("the device search on the simulator, replayed at capacity", () => {
  it.each(["resnet50", "vgg16", "gpt2"])("%s: the probes confirm the analytic answer, which the unconstrained peak would have put lower", async (name) => {
    const run = await runJson<BatchJson>(["batch", "--model", name], simulatedGpus(A100));
    expect(run.status, run.stderr).toBe(0);
    expect(run.json.source).toBe("device");
    expect(run.json.batchSize).toBe(run.json.predictedBatchSize);
    expect(run.json.probes).toBe(2);
    expect(run.json.bytesAtBatch).toBeLessThanOrEqual(run.json.budgetBytes);
    // The same plan judged by its unconstrained reserved peak (vramfit before issue 23) fits fewer samples.
    const plan = buildPlan(presetWorkload(name)!, { mode: "train", precision: "amp", optimizer: "adamw" });
    const model = { kind: "pytorch" as const, contextBytes: run.json.jobContextBytes };
    const unconstrained = await searchMaxBatch((b) => plannedBytes(plan, b, model) <= run.json.budgetBytes, { seed: run.json.batchSize });
    expect(unconstrained.batchSize).toBeLessThan(run.json.batchSize);
  });
});

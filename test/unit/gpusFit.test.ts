// gpus --fit: each catalog GPU's largest batch, and the fewest GPUs that reach a global batch.
import { describe, expect, test } from "vitest";
import { gpusFit } from "../../src/advice/gpusFit.js";
import { GPU_CATALOG, findGpu } from "../../src/devices/catalog.js";
import { budgetBytes } from "../../src/fit/budget.js";
import { jobModel } from "../../src/fit/charges.js";
import { analyticMaxBatch } from "../../src/fit/analytic.js";
import { buildPlan } from "../../src/plan/buildPlan.js";
import type { RunSetup } from "../../src/plan/setup.js";
import { presetWorkload } from "../../src/workload/presets.js";
import type { Workload } from "../../src/workload/workload.js";

/** `batch --gpu ID`'s answer: the total less the default reserve, PyTorch's segments and the job context. */
const maxBatchOn = async (workload: Workload, setup: RunSetup, id: string) => {
  const { totalBytes } = findGpu(id);
  return (await analyticMaxBatch(buildPlan(workload, setup), budgetBytes({ freeBytes: totalBytes, totalBytes }), jobModel({}))).batchSize;
};

describe("llama-2-70b inference at seq 4096, a global batch of 8 (the issue's example)", () => {
  const llama = presetWorkload("llama-2-70b")!;
  const setup: RunSetup = { mode: "infer", precision: "amp", optimizer: "adamw", seq: 4096 };
  const answer = gpusFit(llama, setup, { minBatch: 8 });

  test("every catalog GPU, sorted by memory", async () => {
    const rows = await answer;
    expect(rows.map((r) => r.id).sort()).toEqual(GPU_CATALOG.map((g) => g.id).sort());
    const totals = rows.map((r) => r.totalBytes);
    expect(totals).toEqual([...totals].sort((a, b) => a - b));
  });

  test("one A100-80GB cannot hold 138 GB of fp16 weights; two with tensor parallelism run batch 8", async () => {
    const rows = await answer;
    const a100 = rows.find((r) => r.id === "A100-80GB")!;
    expect(a100.batchSize).toBe(0);
    expect(a100.gpusNeeded).toBe(2);
    expect(a100.layout).toMatchObject({ tp: 2, dataParallel: 1, zeroStage: 0, batchPerGpu: 8 });
    expect(await maxBatchOn(llama, { ...setup, tp: 2 }, "A100-80GB")).toBeGreaterThanOrEqual(8);
  });

  test("a B200 alone reaches it; an H200 needs two replicas", async () => {
    const rows = await answer;
    const b200 = rows.find((r) => r.id === "B200")!;
    expect(b200.batchSize).toBeGreaterThanOrEqual(8);
    expect(b200.gpusNeeded).toBe(1);
    const h200 = rows.find((r) => r.id === "H200")!;
    const perGpu = await maxBatchOn(llama, setup, "H200");
    expect(h200.batchSize).toBe(perGpu);
    expect(perGpu).toBeGreaterThan(0);
    expect(perGpu).toBeLessThan(8);
    expect(h200.gpusNeeded).toBe(2); // 2 replicas × ≥ 4 each: as few as tp 2 × 1
  });

  test("a 16 GB GPU cannot get there within one node of tensor parallelism; a Jetson does not scale out", async () => {
    const rows = await answer;
    expect(rows.find((r) => r.id === "V100-16GB")).toMatchObject({ gpusNeeded: null, layout: null });
    expect(rows.find((r) => r.id === "JETSON-AGX-ORIN-64GB")).toMatchObject({ gpusNeeded: null });
  });
});

describe("training: data parallelism with the setup's ZeRO stage", () => {
  test("ZeRO-3: the fewest ranks N with N × (largest batch per rank with states split N ways) ≥ the global batch", async () => {
    const llama = presetWorkload("llama-2-7b")!;
    const setup: RunSetup = { mode: "train", precision: "amp", optimizer: "adamw", seq: 2048, zeroStage: 3, tp: 1 };
    const [row] = await gpusFit(llama, setup, { minBatch: 64, catalog: [findGpu("A100-40GB")] });
    const n = row!.gpusNeeded!;
    expect(row!.layout).toMatchObject({ tp: 1, dataParallel: n, zeroStage: 3 });
    const perRank = (gpus: number) => maxBatchOn(llama, { ...setup, gpus }, "A100-40GB");
    expect(n * (await perRank(n))).toBeGreaterThanOrEqual(64);
    expect((n - 1) * (await perRank(n - 1))).toBeLessThan(64);
  });

  test("plain data parallelism: ceil(global batch / one GPU's batch)", async () => {
    const resnet = presetWorkload("resnet50")!;
    const setup: RunSetup = { mode: "train", precision: "amp", optimizer: "momentum" };
    const [row] = await gpusFit(resnet, setup, { minBatch: 1000, catalog: [findGpu("T4")] });
    const one = await maxBatchOn(resnet, setup, "T4");
    expect(row!.batchSize).toBe(one);
    expect(row!.gpusNeeded).toBe(Math.ceil(1000 / one));
  });

  test("without --min-batch only the largest batch per GPU", async () => {
    const [row] = await gpusFit(presetWorkload("gpt2")!, { mode: "train", precision: "amp", optimizer: "adamw" }, { catalog: [findGpu("L4")] });
    expect(row!.gpusNeeded).toBeUndefined();
    expect(row!.batchSize).toBeGreaterThan(0);
  });
});

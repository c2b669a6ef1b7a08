// The analytic evaluator and the affine plan: sizes checked by hand against the allocator rules.
import { describe, expect, it } from "vitest";
import { bytesWithin, fitsBudget, plannedBytes } from "../../src/fit/allocator.js";
import { DEFAULT_JOB_CONTEXT_BYTES } from "../../src/fit/context.js";
import { analyticMaxBatch } from "../../src/fit/analytic.js";
import { budgetBytes, parseReserve } from "../../src/fit/budget.js";
import { analyticBatch } from "../../src/fit/findMaxBatch.js";
import { buildPlan } from "../../src/plan/buildPlan.js";
import { bytesByCategory } from "../../src/plan/memoryPlan.js";
import { presetWorkload } from "../../src/workload/presets.js";

const GiB = 2 ** 30;
const MiB = 2 ** 20;
const plan7b = buildPlan(
  { kind: "affine", parameterCount: 7e9, perSampleBytes: GiB, fixedBytes: 0 },
  { mode: "train", precision: "fp32", optimizer: "sgd" },
);

describe("affine plan", () => {
  it("fp32 + SGD holds 4 B/param of weights and 4 B/param of gradients, no optimizer state", () => {
    const byCategory = bytesByCategory(plan7b, 3);
    expect(byCategory.parameters).toBe(28e9);
    expect(byCategory.gradients).toBe(28e9);
    expect(byCategory.optimizerStates).toBe(0);
    expect(byCategory.activations).toBe(3 * GiB);
  });

  it("inference drops gradients and optimizer states", () => {
    const infer = buildPlan(
      { kind: "affine", parameterCount: 1e9, perSampleBytes: MiB, fixedBytes: 5 },
      { mode: "infer", precision: "fp16", optimizer: "adamw" },
    );
    const byCategory = bytesByCategory(infer, 1);
    expect(byCategory).toMatchObject({ parameters: 2e9, gradients: 0, optimizerStates: 0, activations: MiB, workspace: 5 });
  });
});

describe("analytic evaluator", () => {
  const noContext = { kind: "pytorch", contextBytes: 0 } as const;

  it("charges each large tensor its own segment, rounded up to 2 MiB", () => {
    // 28e9 B = 13351.44 × 2 MiB → a 13,352-page segment = 28,001,173,504 B, twice; 1 GiB per sample is whole.
    expect(plannedBytes(plan7b, 1, noContext)).toBe(2 * 13352 * 2 * MiB + GiB);
    expect(plannedBytes(plan7b, 1, { kind: "pytorch", contextBytes: 512 * MiB })).toBe(2 * 13352 * 2 * MiB + GiB + 512 * MiB);
  });

  it("finds the batch the done-when case expects on a 3 GiB-used H100 (by hand: 24)", async () => {
    // free = 85,520,809,984 − 3,221,225,472 = 82,299,584,512 B; minus 56,002,347,008 B of weights and
    // gradients leaves 26,297,237,504 B = 24.49 GiB → 24 samples of 1 GiB.
    const free = 85520809984 - 3221225472;
    const result = await analyticMaxBatch(plan7b, free, noContext);
    expect(result.batchSize).toBe(24);
  });

  it("charges the job's context the same on a catalog GPU and a raw budget, and honours reserve and max-mem", async () => {
    const budget = budgetBytes({ freeBytes: 80 * GiB, totalBytes: 80 * GiB }, { reserveBytes: 4 * GiB, maxMemBytes: 70 * GiB });
    expect(budget).toBe(70 * GiB);
    // Weights and gradients take 56,002,347,008 B = 52.16 GiB, the context 0.5 GiB: within 70.5 GiB
    // 17.84 GiB are left → 17, on an 80 GiB GPU of the catalog and an 80 GiB --memory alike.
    const cap = { maxMemBytes: 70.5 * GiB };
    const raw = await analyticBatch(plan7b, { kind: "memory", bytes: 80 * GiB }, cap);
    const onGpu = await analyticBatch(plan7b, { kind: "gpu", gpu: { name: "x", totalBytes: 80 * GiB } }, cap);
    expect([raw.batchSize, onGpu.batchSize]).toEqual([17, 17]);
    const model = { kind: "pytorch", contextBytes: DEFAULT_JOB_CONTEXT_BYTES } as const;
    expect(onGpu.bytesAtBatch).toBe(plannedBytes(plan7b, 17, model));
    expect(onGpu.bytesAtBatch).toBeLessThanOrEqual(70.5 * GiB);
    expect(plannedBytes(plan7b, 18, model)).toBeGreaterThan(70.5 * GiB);
  });

  it("leaves 5% of the total free by default; --reserve 0 leaves nothing", async () => {
    const gpu = { kind: "gpu", gpu: { name: "x", totalBytes: 80 * GiB } } as const;
    const defaults = await analyticBatch(plan7b, gpu);
    expect(defaults.reserveBytes).toBe(4 * GiB);
    expect(defaults.budgetBytes).toBe(76 * GiB);
    expect(defaults.batchSize).toBe(23); // 76 − 52.16 − 0.5 = 23.34 GiB
    expect((await analyticBatch(plan7b, gpu, { reserveBytes: 0 })).batchSize).toBe(27); // 80 − 52.16 − 0.5 = 27.34
    expect((await analyticBatch(plan7b, gpu, { reservePercent: 10 })).batchSize).toBe(19); // 72 − 52.66 = 19.34
  });

  it("answers 0 when even batch 1 does not fit", async () => {
    const result = await analyticBatch(plan7b, { kind: "memory", bytes: 40 * GiB });
    expect(result.batchSize).toBe(0);
  });

  it("a reserve above the free memory leaves a budget of 0 (a busy GPU: nothing fits), not bad input", () => {
    expect(budgetBytes({ freeBytes: GiB, totalBytes: 80 * GiB }, { reserveBytes: 2 * GiB })).toBe(0);
    expect(budgetBytes({ freeBytes: GiB, totalBytes: 80 * GiB })).toBe(0); // 5% of 80 GiB is 4 GiB
  });

  it("parses --reserve as a size or a percentage of the total", () => {
    expect(parseReserve("2GiB")).toEqual({ reserveBytes: 2 * GiB });
    expect(parseReserve("7.5%")).toEqual({ reservePercent: 7.5 });
    expect(parseReserve("0")).toEqual({ reserveBytes: 0 });
    expect(() => parseReserve("100%")).toThrow(/^--reserve: expected a percentage of the total below 100%/);
    expect(() => parseReserve("-1%")).toThrow(/^--reserve: expected a size/);
  });
});

describe("the analytic search's seed", () => {
  // The affine totals leave out what the allocator's segments add per sample; one replay at the
  // first estimate corrects the slope, so the search verifies rather than gallops.
  const allocator = { kind: "pytorch" as const, contextBytes: DEFAULT_JOB_CONTEXT_BYTES };

  it.each([
    ["resnet152", { image: 224, precision: "fp32", optimizer: "momentum" }, 80e9],
    ["bert-large", { seq: 512, precision: "amp", optimizer: "adamw" }, 40e9],
    ["gpt2", { seq: 1024, precision: "fp32", optimizer: "adam" }, 24e9],
  ] as const)("%s: the answer is the exact boundary, in at most 4 replays", async (model, setup, budget) => {
    const plan = buildPlan(presetWorkload(model)!, { mode: "train", ...setup });
    const result = await analyticMaxBatch(plan, budget, allocator);
    expect(result.batchSize).toBeGreaterThan(0);
    // The boundary of the step's replay at capacity (budget less the context): the answer's step
    // completes, the next batch's runs out of memory even after the cache is freed.
    expect(fitsBudget(plan, result.batchSize, allocator, budget)).toBe(true);
    expect(bytesWithin(plan, result.batchSize, allocator, budget)).toBeLessThanOrEqual(budget);
    expect(fitsBudget(plan, result.batchSize + 1, allocator, budget)).toBe(false);
    expect(bytesWithin(plan, result.batchSize + 1, allocator, budget)).toBeGreaterThan(budget);
    expect(result.evaluations).toBeLessThanOrEqual(4);
  });
});

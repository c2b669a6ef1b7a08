// The analytic evaluator and the affine plan: sizes checked by hand against the allocator rules.
import { describe, expect, it } from "vitest";
import { CATALOG_DEVICE, GRANULARITY_BYTES, MEASURED_DEVICE, plannedBytes } from "../../src/fit/allocator.js";
import { analyticMaxBatch } from "../../src/fit/analytic.js";
import { budgetBytes } from "../../src/fit/budget.js";
import { analyticBatch } from "../../src/fit/findMaxBatch.js";
import { buildPlan } from "../../src/plan/buildPlan.js";
import { bytesByCategory } from "../../src/plan/memoryPlan.js";

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
  it("rounds every allocation up to 2 MiB", () => {
    // 28e9 B = 13351.44 granules → 13352 × 2 MiB = 28,001,173,504 B, twice; 1 GiB per sample is whole.
    expect(plannedBytes(plan7b, 1, MEASURED_DEVICE)).toBe(2 * 13352 * GRANULARITY_BYTES + GiB);
  });

  it("finds the batch the done-when case expects on a 3 GiB-used H100 (by hand: 24)", async () => {
    // free = 85,520,809,984 − 3,221,225,472 = 82,299,584,512 B; minus 56,002,347,008 B of weights and
    // gradients leaves 26,297,237,504 B = 24.49 GiB → 24 samples of 1 GiB.
    const free = 85520809984 - 3221225472;
    const result = await analyticMaxBatch(plan7b, free, MEASURED_DEVICE);
    expect(result.batchSize).toBe(24);
  });

  it("charges the assumed context on catalog GPUs and honours reserve and max-mem", async () => {
    const budget = budgetBytes(80 * GiB, { reserveBytes: 4 * GiB, maxMemBytes: 70 * GiB });
    expect(budget).toBe(70 * GiB);
    // Weights and gradients take 56,002,347,008 B = 52.16 GiB. A raw budget of 70.5 GiB leaves
    // 18.34 GiB → 18; a catalog GPU also pays the 0.5 GiB context: 17.84 GiB → 17.
    const cap = { maxMemBytes: 70.5 * GiB };
    const raw = await analyticBatch(plan7b, { kind: "memory", bytes: 80 * GiB }, cap);
    expect(raw.batchSize).toBe(18);
    const onGpu = await analyticBatch(plan7b, { kind: "gpu", gpu: { name: "x", totalBytes: 80 * GiB } }, cap);
    expect(onGpu.batchSize).toBe(17);
    expect(onGpu.bytesAtBatch).toBe(plannedBytes(plan7b, 17, CATALOG_DEVICE));
    expect(onGpu.bytesAtBatch).toBeLessThanOrEqual(70.5 * GiB);
    expect(plannedBytes(plan7b, 18, CATALOG_DEVICE)).toBeGreaterThan(70.5 * GiB);
  });

  it("answers 0 when even batch 1 does not fit", async () => {
    const result = await analyticBatch(plan7b, { kind: "memory", bytes: 40 * GiB });
    expect(result.batchSize).toBe(0);
  });

  it("leaves a budget of 0 when the reserve is larger than the free memory", () => {
    // A reserve larger than the free memory is a busy GPU: nothing fits (issue 13, item 5).
    expect(budgetBytes(GiB, { reserveBytes: 2 * GiB })).toBe(0);
  });
});

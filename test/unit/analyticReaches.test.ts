// Advice's "does this setup reach the batch?" and "what does it need there?": the whole search's answer and bytesWithin's, also where one replay settles them.
import { describe, expect, it } from "vitest";
import { analyticMaxBatchOn, analyticReaches, measureAnalytic, type Budget } from "../../src/advice/scaleOut.js";
import { parseAllocConf } from "../../src/fit/allocConf.js";
import { bytesWithin, fitsBudget, replayStep, type AllocatorModel } from "../../src/fit/allocator.js";
import { analyticMaxBatch } from "../../src/fit/analytic.js";
import type { MemoryPlan } from "../../src/plan/memoryPlan.js";
import { buildPlan } from "../../src/plan/buildPlan.js";
import type { RunSetup } from "../../src/plan/setup.js";
import { presetWorkload } from "../../src/workload/presets.js";

const MiB = 2 ** 20;
const CONTEXT = 512 * MiB;

/** The least budget (in 2 MiB steps) at which the step fits at batch 1: where the shortcut's answer turns. */
function leastBudgetAtOne(plan: MemoryPlan, allocator: AllocatorModel): number {
  const unlimited = replayStep(plan, 1, allocator);
  let low = Math.floor(unlimited.allocatedPeakBytes / (2 * MiB)) - 1; // below the blocks' peak: never enough
  let high = Math.ceil((unlimited.reservedPeakBytes + allocator.contextBytes) / (2 * MiB)); // the unconstrained peak: enough
  while (high - low > 1) {
    const middle = (low + high) >> 1;
    if (fitsBudget(plan, 1, allocator, middle * 2 * MiB)) high = middle;
    else low = middle;
  }
  return high * 2 * MiB;
}

describe("analyticReaches", () => {
  it("answers as the whole search and bytesWithin do around the budget where batch 1 starts to fit, for every allocator", async () => {
    const cases: [string, RunSetup][] = [
      ["gpt2", { mode: "train", precision: "amp", optimizer: "adamw", seq: 1024 }],
      ["bert-base", { mode: "train", precision: "amp", optimizer: "adamw" }],
      ["llama-3.2-1b", { mode: "train", precision: "amp", optimizer: "adamw", seq: 2048, zeroStage: 3, gpus: 8 }],
      ["resnet50", { mode: "train", precision: "fp32", optimizer: "momentum" }],
    ];
    const allocators: AllocatorModel[] = [
      { kind: "pytorch", contextBytes: CONTEXT },
      { kind: "pytorch", contextBytes: CONTEXT, conf: parseAllocConf("max_split_size_mb:64,roundup_power2_divisions:4") },
      { kind: "expandable", contextBytes: CONTEXT },
      { kind: "raw", contextBytes: CONTEXT },
    ];
    let yes = 0;
    let no = 0;
    for (const [name, setup] of cases) {
      for (const allocator of allocators) {
        const plan = buildPlan(presetWorkload(name)!, setup);
        const least = leastBudgetAtOne(plan, allocator);
        // Budgets from just below that one to well above it (where the search goes on past batch 1), and a cap.
        for (const budgetBytes of [least - 4 * MiB, least - 2 * MiB, least, least + 2 * MiB, least + 64 * MiB, 4 * least]) {
          for (const maxBatch of [undefined, 1]) {
            const budget: Budget = { budgetBytes, allocator, ...(maxBatch !== undefined && { maxBatch }) };
            const whole = (await analyticMaxBatch(plan, budgetBytes, allocator, maxBatch)).batchSize;
            // Batch 1 first on a plan no cache has seen (no answer known: the shortcut's case), then
            // larger batches, which the search answers.
            const fresh = structuredClone(plan);
            for (const batch of [1, 2, 5]) {
              const label = `${name} ${allocator.kind}${allocator.conf ? " conf" : ""}, budget ${budgetBytes}, cap ${maxBatch}, batch ${batch}`;
              expect(await analyticReaches(fresh, budget, batch), label).toBe(whole >= batch);
              if (whole >= batch) yes += 1;
              else no += 1;
              // And the bytes advice shows at that batch: bytesWithin's, also where only the replay without a limit is made.
              expect((await measureAnalytic(fresh, budget, batch)).bytesAtBatch, label).toBe(bytesWithin(plan, batch, allocator, budgetBytes));
            }
          }
        }
      }
    }
    expect(yes).toBeGreaterThan(50);
    expect(no).toBeGreaterThan(50);
  }, 30_000);

  it("makes no search where batch 1 fits: its answer is not measured", async () => {
    const plan = buildPlan(presetWorkload("gpt2")!, { mode: "train", precision: "amp", optimizer: "adamw", seq: 1024 });
    const allocator: AllocatorModel = { kind: "pytorch", contextBytes: CONTEXT };
    const budget: Budget = { budgetBytes: 80 * 1024 * MiB, allocator };
    expect(await analyticReaches(plan, budget, 1)).toBe(true);
    // The answer afterwards is the search's own (far above 1), so nothing was taken from the shortcut for it.
    expect(await analyticMaxBatchOn(plan, budget)).toBe((await analyticMaxBatch(structuredClone(plan), budget.budgetBytes, allocator)).batchSize);
    expect(await analyticMaxBatchOn(plan, budget)).toBeGreaterThan(10);
  });
});

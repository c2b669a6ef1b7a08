// Memory that is not monotone in the batch: what "the largest batch that fits" means, and the search and `check` agreeing on it (issue 23, item 3).
//
// The definition (docs/memory-model.md, "The largest batch that fits"): fits(b) is the step's
// replay at capacity completing; the answer is a b with fits(b) and not fits(b + 1), found by
// galloping from the model's seed and bisecting. Both facts are claimed and true; nothing is
// claimed about larger batches, where another such b may exist.
import { describe, expect, it } from "vitest";
import { fitsBudget, replayStep } from "../../src/fit/allocator.js";
import { analyticFits } from "../../src/fit/analytic.js";
import { checkAnalytic } from "../../src/fit/checkFits.js";
import { analyticBatch } from "../../src/fit/findMaxBatch.js";
import { searchMaxBatch } from "../../src/fit/search.js";
import { buildPlan } from "../../src/plan/buildPlan.js";
import { presetWorkload } from "../../src/workload/presets.js";

const MiB = 2 ** 20;
// bert-base, train, amp, AdamW, seq 512: its step needs less at batch 516 than at 515. Found by
// scanning batches 1-700 for the least capacity each completes at (2 MiB steps): it drops at 53
// batches, 515 → 516 by 300 MiB (83,426 → 83,126 MiB), as the unconstrained peak does.
const plan = buildPlan(presetWorkload("bert-base")!, { mode: "train", precision: "amp", optimizer: "adamw" });
const allocator = { kind: "pytorch" as const, contextBytes: 0 };
const budget = 83_200 * MiB;

describe("bert-base at a budget inside one of its dips", () => {
  it("fits at 514, not at 515, again at 516, and not at 517", () => {
    expect([513, 514, 515, 516, 517].map((b) => fitsBudget(plan, b, allocator, budget))).toEqual([true, true, false, true, false]);
    // The least capacity of each (the replay completes at it, not 2 MiB below): the dip is the step's own.
    for (const [batch, capacityMiB] of [[515, 83_426], [516, 83_126]] as const) {
      expect(replayStep(plan, batch, allocator, capacityMiB * MiB).fits).toBe(true);
      expect(replayStep(plan, batch, allocator, (capacityMiB - 2) * MiB).fits).toBe(false);
    }
  });

  it("the search's answer fits and the next batch does not, from a seed on either side", async () => {
    const fits = analyticFits(plan, budget, allocator);
    for (const seed of [300, 505, 513, 516, 530, 800]) {
      const { batchSize } = await searchMaxBatch(fits, { seed });
      expect([514, 516], `seed ${seed}`).toContain(batchSize);
      expect(await fits(batchSize)).toBe(true);
      expect(await fits(batchSize + 1)).toBe(false);
    }
    // From a seed at a boundary, two evaluations confirm it.
    expect(await searchMaxBatch(fits, { seed: 516 })).toMatchObject({ batchSize: 516, evaluations: 2 });
  });

  it("`check` agrees with `batch`: yes at the answer, no at the batch above", async () => {
    const target = { kind: "memory" as const, bytes: budget };
    const options = { reserveBytes: 0, jobContextBytes: 0 };
    const answer = await analyticBatch(plan, target, options);
    expect(answer.budgetBytes).toBe(budget);
    const at = checkAnalytic(plan, answer.batchSize, target, options);
    const above = checkAnalytic(plan, answer.batchSize + 1, target, options);
    expect(at.fits).toBe(true);
    expect(at.needBytes).toBe(answer.bytesAtBatch);
    expect(at.needBytes).toBeLessThanOrEqual(budget);
    expect(above.fits).toBe(false);
    expect(above.needBytes).toBeGreaterThan(budget);
  });
});

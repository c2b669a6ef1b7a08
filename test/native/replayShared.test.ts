// One replay answers a range of capacities (ReplayResult.refusedBytes): the replay at every capacity in [reservedPeakBytes, refusedBytes) is that replay, natively and in TypeScript, and budgets that share replays get the answers they get alone.
import { describe, expect, it } from "vitest";
import { parseAllocConf } from "../../src/fit/allocConf.js";
import { replayStep } from "../../src/fit/allocator.js";
import { analyticBatch } from "../../src/fit/findMaxBatch.js";
import { replayAtCapacity, type ReplayResult } from "../../src/fit/cachingAllocator.js";
import { nativeReplay } from "../../src/native/binding.js";
import { buildPlan } from "../../src/plan/buildPlan.js";
import type { MemoryPlan } from "../../src/plan/memoryPlan.js";
import { allocationTrace } from "../../src/step/allocationTrace.js";
import { presetWorkload } from "../../src/workload/presets.js";
import { randomStep } from "./randomStep.js";

const MiB = 2 ** 20;
const CONFS = ["backend:native", "max_split_size_mb:64", "roundup_power2_divisions:4", "large_segment_size_mb:64"];

/** The replay of `step` at `capacity` (its driver calls logged), in TypeScript or natively. */
function replay(step: { order: Int32Array; bytes: Float64Array }, capacity: number, confText: string, typescript: boolean): ReplayResult {
  return replayAtCapacity(step, capacity, parseAllocConf(confText), { segments: true, typescript });
}

describe("one replay, a range of capacities", () => {
  it("the addon is there (else these cases would compare the TypeScript replay with itself)", () => {
    expect(typeof nativeReplay()).toBe("function");
  });

  // Random steps of mixed sizes and plan steps, each at capacities from no pressure to not fitting.
  const steps = [
    ...[1, 2, 3].map((seed) => ({ name: `random ${seed}`, step: randomStep(1500, seed) })),
    { name: "bert-base at 24", step: allocationTrace(buildPlan(presetWorkload("bert-base")!, { mode: "train", precision: "amp", optimizer: "adamw" }), 24) },
  ];
  it.each(steps)("$name: the same replay, driver calls and all, at both ends of its range, and another one just outside it", ({ step }) => {
    let ranges = 0;
    for (const confText of CONFS) {
      const { reservedPeakBytes: high, allocatedPeakBytes: low } = replay(step, Number.POSITIVE_INFINITY, confText, true);
      for (const capacity of [high, (low + high) / 2, low + (high - low) / 8, low, low * 0.8]) {
        const typescript = replay(step, capacity, confText, true);
        const native = replay(step, capacity, confText, false);
        const where = `${confText} at ${capacity}`;
        expect(native, where).toEqual(typescript);
        const { reservedPeakBytes: from, refusedBytes: to } = typescript;
        expect(to, where).toBeGreaterThan(from);
        if (to! === Number.POSITIVE_INFINITY) {
          expect(typescript.allocRetries + typescript.cudaFrees, where).toBe(0); // nothing refused, nothing freed
          continue;
        }
        ranges += 1;
        // Inside: the lowest capacity of the range and the highest (a byte below the refusal).
        for (const inside of [from, to! - 1]) {
          expect(replay(step, inside, confText, true), `${where}, asked at ${inside}`).toEqual(typescript);
          expect(replay(step, inside, confText, false), `${where}, natively at ${inside}`).toEqual(typescript);
        }
        // Outside, the bounds are tight: at the refusal the refused segment is had, and a byte
        // below the peak the segment that made it is refused (so the peak is not reached).
        expect(replay(step, to!, confText, false), `${where}, at ${to}`).not.toEqual(typescript);
        if (from > 0) expect(replay(step, from - 1, confText, false), `${where}, at ${from - 1}`).not.toEqual(typescript);
      }
    }
    expect(ranges).toBeGreaterThan(CONFS.length * 2); // the case is made under pressure, not only without
  });
});

describe("budgets that share replays", () => {
  /** The same plan as a new object: no replay of the shared one reaches it. */
  const fresh = (plan: MemoryPlan): MemoryPlan => structuredClone(plan);
  const none = { reserveBytes: 0, jobContextBytes: 0 };

  it("bert-base (its memory is not monotone in the batch): 48 budgets 7 MiB apart, searched at once on one plan, answer as each does alone", async () => {
    const plan = buildPlan(presetWorkload("bert-base")!, { mode: "train", precision: "amp", optimizer: "adamw" });
    // Around batch 515, where the step can need less at a batch than at the one before (nonMonotone.test.ts).
    const base = replayStep(fresh(plan), 515, { kind: "pytorch" }).allocatedPeakBytes;
    const budgets = Array.from({ length: 48 }, (_, k) => base - 128 * MiB + k * 7 * MiB);
    const together = await Promise.all(budgets.map((bytes) => analyticBatch(plan, { kind: "memory", bytes }, none)));
    for (const [k, bytes] of budgets.entries()) {
      const alone = await analyticBatch(fresh(plan), { kind: "memory", bytes }, none);
      expect({ ...together[k]!, elapsedMs: 0 }, `budget ${bytes}`).toEqual({ ...alone, elapsedMs: 0 });
    }
    // They did share: a budget 1 MiB above another at the same batch got that replay, not its own.
    const shared = budgets.filter((bytes, k) => k > 0 && replayStep(plan, together[k]!.batchSize, { kind: "pytorch" }, bytes) === replayStep(plan, together[k]!.batchSize, { kind: "pytorch" }, budgets[k - 1]!));
    expect(shared.length).toBeGreaterThan(0);
  }, 60_000);
});

// The seeded search against random monotone thresholds: always exact, and cheap when the seed is.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { searchMaxBatch } from "../../src/fit/search.js";

/** fits(b) ⇔ b ≤ answer, counting calls. */
function threshold(answer: number) {
  const calls: number[] = [];
  return { calls, fits: (b: number) => (calls.push(b), b <= answer) };
}

describe("searchMaxBatch", () => {
  it("finds the exact answer for any threshold and any seed", async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 1e12 }), fc.integer({ min: 0, max: 1e12 }), async (answer, seed) => {
        const t = threshold(answer);
        const result = await searchMaxBatch(t.fits, { seed });
        expect(result.batchSize).toBe(answer);
        expect(result.evaluations).toBe(t.calls.length);
        expect(new Set(t.calls).size).toBe(t.calls.length); // never evaluates a batch twice
      }),
      { numRuns: 2000 },
    );
  });

  it("makes exactly two evaluations (seed, seed + 1) when the seed is right", async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 2 ** 40 }), async (answer) => {
        const t = threshold(answer);
        const result = await searchMaxBatch(t.fits, { seed: answer });
        expect(t.calls).toEqual([answer, answer + 1]);
        expect(result.evaluations).toBe(2);
      }),
    );
  });

  it("makes O(log |answer − seed|) evaluations on a miss", async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 1e9 }), fc.integer({ min: 1, max: 1e9 }), async (answer, seed) => {
        const result = await searchMaxBatch(threshold(answer).fits, { seed });
        const distance = Math.abs(answer - seed) + 1;
        // gallop ≤ log2(d) + 2 steps, bisection ≤ log2(d) + 1 more
        expect(result.evaluations).toBeLessThanOrEqual(2 * Math.ceil(Math.log2(distance)) + 3);
      }),
      { numRuns: 2000 },
    );
  });

  it("answers 0 after one evaluation when even batch 1 does not fit", async () => {
    const t = threshold(0);
    const result = await searchMaxBatch(t.fits, { seed: 0 });
    expect(result.batchSize).toBe(0);
    expect(t.calls).toEqual([1]);
  });

  it("has no hidden cap: answers far above 1024 are found", async () => {
    const result = await searchMaxBatch(threshold(123_456_789).fits, { seed: 1 });
    expect(result.batchSize).toBe(123_456_789);
  });

  it("respects maxBatch without evaluating past it", async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 1e6 }), fc.integer({ min: 1, max: 1e6 }), fc.integer({ min: 0, max: 1e6 }), async (answer, cap, seed) => {
        const t = threshold(answer);
        const result = await searchMaxBatch(t.fits, { seed, maxBatch: cap });
        expect(result.batchSize).toBe(Math.min(answer, cap));
        expect(Math.max(...t.calls)).toBeLessThanOrEqual(cap);
      }),
    );
  });

  it("stops between evaluations when its signal is aborted", async () => {
    const controller = new AbortController();
    let calls = 0;
    const fits = (b: number) => {
      calls += 1;
      if (calls === 3) controller.abort(new Error("stop"));
      return b <= 1000;
    };
    await expect(searchMaxBatch(fits, { seed: 1, signal: controller.signal })).rejects.toThrow("stop");
    expect(calls).toBe(3);
  });
});

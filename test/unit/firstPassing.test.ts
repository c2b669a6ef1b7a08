// The monotone search advice runs over GPU counts and sequence lengths: the same answer either way, and fewer tests when nothing passes.
import { describe, expect, it } from "vitest";
import { firstPassing } from "../../src/advice/scaleOut.js";

const values = Array.from({ length: 63 }, (_, i) => i + 1);

/** The search with a threshold (values ≥ it pass; above every value: none does), and how many tests it made. */
async function search(threshold: number, lastFirst: boolean) {
  let tests = 0;
  const found = await firstPassing(values, (v) => (tests += 1) > 0 && v >= threshold, { lastFirst });
  return { found, tests };
}

describe("firstPassing", () => {
  it("finds the first passing value, or none, whichever value is tried first", async () => {
    for (let threshold = 1; threshold <= 64; threshold++) {
      const expected = threshold <= 63 ? threshold : undefined;
      expect((await search(threshold, false)).found).toBe(expected);
      expect((await search(threshold, true)).found).toBe(expected);
    }
  });

  it("tries the last value first when asked: one test when nothing passes, at most one more otherwise", async () => {
    expect(await search(64, true)).toEqual({ found: undefined, tests: 1 });
    expect((await search(64, false)).tests).toBe(6);
    for (let threshold = 1; threshold <= 63; threshold++) {
      expect((await search(threshold, true)).tests).toBeLessThanOrEqual((await search(threshold, false)).tests + 1);
    }
  });
});

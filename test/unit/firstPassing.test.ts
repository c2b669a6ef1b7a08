// The monotone search advice runs over GPU counts and sequence lengths: the same answer either way, fewer tests when nothing passes, and with a bound the whole search's answer wherever it is below the bound.
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

  it("with `below`, answers as the whole search does wherever its answer lies below the index, even for tests that are not monotone", async () => {
    // Every pass/fail pattern over 6 values (64), every bound 0…6, with and without lastFirst: the
    // whole search's answer filtered to indexes below the bound, never an answer the whole search
    // would not give (a skipped test that fails sends it past the bound).
    const six = [1, 2, 3, 4, 5, 6];
    let fewer = 0;
    for (let pattern = 0; pattern < 64; pattern++) {
      const passes = (v: number) => ((pattern >> (v - 1)) & 1) === 1;
      for (const lastFirst of [false, true]) {
        let wholeTests = 0;
        const whole = await firstPassing(six, (v) => (wholeTests += 1) > 0 && passes(v), { lastFirst });
        for (let below = 0; below <= six.length; below++) {
          let tests = 0;
          const bounded = await firstPassing(six, (v) => (tests += 1) > 0 && passes(v), { lastFirst, below });
          const expected = whole !== undefined && six.indexOf(whole) < below ? whole : undefined;
          expect(bounded, `pattern ${pattern.toString(2)}, below ${below}, lastFirst ${lastFirst}`).toBe(expected);
          // Monotone (what advice's searches are built for): never more tests than the whole search.
          // Otherwise a skipped test that fails can leave the search testing below the bound for nothing.
          const monotone = six.every((v) => !passes(v) || v === 6 || passes(v + 1));
          if (monotone) expect(tests).toBeLessThanOrEqual(wholeTests);
          if (monotone && tests < wholeTests) fewer += 1;
        }
      }
    }
    expect(fewer).toBeGreaterThan(20); // it saves tests, and not only where the bound is 0
  });

  it("with `below`, leaves untested what cannot matter: nothing at all for a bound of 0, and no value at or past the bound when nothing below it passes", async () => {
    const tested: number[] = [];
    expect(await firstPassing(values, (v) => tested.push(v) > 0 && v >= 40, { below: 0 })).toBeUndefined();
    expect(tested).toEqual([]);
    expect(await firstPassing(values, (v) => tested.push(v) > 0 && v >= 40, { below: 8 })).toBeUndefined();
    expect(tested.every((v) => v <= 8)).toBe(true);
    tested.length = 0;
    // Found below the bound: the values past it that the whole search tests are tested too.
    expect(await firstPassing(values, (v) => tested.push(v) > 0 && v >= 5, { below: 8 })).toBe(5);
    expect(tested).toContain(32);
  });
});

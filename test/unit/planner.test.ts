// The planner behind advice and `gpus --fit`: each variant of a workload built once, kept while
// the searches come back to it (every catalog GPU asks for the same variants).
import { describe, expect, it } from "vitest";
import { planner } from "../../src/plan/planCache.js";
import { presetWorkload } from "../../src/workload/presets.js";

describe("planner", () => {
  it("keeps GPT-3's variants across a gpus --fit sweep: tp 1, 2, 4, 8 × ranks 1 … 2^14 (60 plans)", () => {
    const plan = planner(presetWorkload("gpt3-175b")!);
    const setups = [1, 2, 4, 8].flatMap((tp) => Array.from({ length: 15 }, (_, i) => ({ mode: "train" as const, precision: "amp" as const, optimizer: "adamw" as const, tp, gpus: 2 ** i })));
    const first = setups.map((s) => plan(s));
    expect(first.every((p) => p !== undefined)).toBe(true);
    // The second GPU's sweep finds every plan already built: the same objects, none rebuilt.
    expect(setups.map((s) => plan(s)).every((p, i) => p === first[i])).toBe(true);
  });
});

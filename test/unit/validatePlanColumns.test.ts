// validatePlan reads a step's fields in the walk that makes its columns: the same verdicts and messages, and a mended plan read afresh.
import { describe, expect, it } from "vitest";
import { phaseTotals, type MemoryPlan } from "../../src/plan/memoryPlan.js";
import { checkPlanBytes } from "../../src/plan/planLimits.js";
import { validatePlan } from "../../src/plan/validatePlan.js";

const GiB = 2 ** 30;

function plan(tensors: unknown[]): MemoryPlan {
  return { description: "hand-made", parameterCount: 1, phases: ["forward", "backward"], tensors } as MemoryPlan;
}

function message(fn: () => void): string {
  try {
    fn();
  } catch (error) {
    return (error as Error).message;
  }
  return "no error";
}

describe("validatePlan from the step's columns", () => {
  it("names the first bad field as the tensor-by-tensor check did", () => {
    const good = { name: "w", category: "parameters", fixedBytes: GiB, perSampleBytes: 0 };
    expect(message(() => validatePlan(plan([good, { ...good, name: 5 }])))).toBe("plan.tensors[1].name: expected a string, got 5");
    expect(message(() => validatePlan(plan([good, { ...good, category: "weights" }])))).toMatch(/^plan\.tensors\[1\]\.category: expected one of parameters, /);
    expect(message(() => validatePlan(plan([good, { ...good, lastPhase: 2 }])))).toBe("plan.tensors[1].lastPhase: expected a whole number from 0 to 1, got 2");
    expect(message(() => validatePlan(plan([good, { ...good, firstPhase: 1, lastPhase: 0 }])))).toBe("plan.tensors[1].lastPhase: expected a whole number from 1 to 1, got 0");
    expect(message(() => validatePlan(plan([good, null])))).toBe("plan.tensors[1]: expected an object, got null");
  });

  it("reads a plan mended in place after its check failed afresh, not from the columns of the failed check", () => {
    const tensor = { name: "a", category: "activations", fixedBytes: "4096", perSampleBytes: 1024, firstPhase: 0, lastPhase: 1 };
    const mended = plan([{ name: "w", category: "parameters", fixedBytes: GiB, perSampleBytes: 0 }, tensor]);
    expect(message(() => validatePlan(mended))).toBe('plan.tensors[1].fixedBytes: expected a whole number of bytes ≥ 0, at most 2^53, got "4096"');
    tensor.fixedBytes = 8192 as unknown as string;
    validatePlan(mended);
    // Both phases hold the weights and the activation: 1 GiB + 8192 fixed, 1024 per sample.
    expect(phaseTotals(mended)).toEqual([
      { fixedBytes: GiB + 8192, perSampleBytes: 1024 },
      { fixedBytes: GiB + 8192, perSampleBytes: 1024 },
    ]);
  });

  it("refuses a byte count of exactly 2^53, and totals above it, as before", () => {
    const top = plan([{ name: "huge", category: "activations", fixedBytes: 0, perSampleBytes: 2 ** 53 }]);
    expect(message(() => checkPlanBytes(top))).toMatch(/^workload: expected a plan whose byte counts stay below .*got "9\.01e\+15 bytes per sample in huge"$/);
    const sum = plan([
      { name: "a", category: "activations", fixedBytes: 2 ** 52, perSampleBytes: 0 },
      { name: "b", category: "activations", fixedBytes: 2 ** 52 + 2, perSampleBytes: 0 },
    ]);
    expect(message(() => checkPlanBytes(sum))).toMatch(/got "9\.01e\+15 fixed bytes in all, the most in b"$/);
    const below = plan([
      { name: "a", category: "activations", fixedBytes: 2 ** 52, perSampleBytes: 0 },
      { name: "b", category: "activations", fixedBytes: 2 ** 52 - 1, perSampleBytes: 0 },
    ]);
    expect(message(() => checkPlanBytes(below))).toBe("no error");
  });
});

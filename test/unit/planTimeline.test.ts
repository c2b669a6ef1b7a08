// The plan's timeline: liveness by phase, the peak phase, and the replayed allocations.
import { describe, expect, it } from "vitest";
import { bytesByCategory, peakPhase, phaseTotals, planTotals, type MemoryPlan } from "../../src/plan/memoryPlan.js";
import { allocationEvents, allocationSizes } from "../../src/step/allocationTrace.js";

// forward (0), backward (1), optimizer (2): weights live throughout, an activation freed after
// backward, a gradient from backward on, an optimizer temporary only in the step.
const plan: MemoryPlan = {
  description: "three phases",
  parameterCount: 0,
  phases: ["forward", "backward", "optimizer"],
  tensors: [
    { name: "weights", category: "parameters", fixedBytes: 100, perSampleBytes: 0 },
    { name: "activation", category: "activations", fixedBytes: 0, perSampleBytes: 10, lastPhase: 1 },
    { name: "grads", category: "gradients", fixedBytes: 100, perSampleBytes: 0, firstPhase: 1 },
    { name: "temporary", category: "workspace", fixedBytes: 150, perSampleBytes: 0, firstPhase: 2, lastPhase: 2 },
  ],
};

describe("the plan's timeline", () => {
  it("sums each phase's live tensors as fixed + perSample × batch", () => {
    expect(phaseTotals(plan)).toEqual([
      { fixedBytes: 100, perSampleBytes: 10 },
      { fixedBytes: 200, perSampleBytes: 10 },
      { fixedBytes: 350, perSampleBytes: 0 },
    ]);
  });

  it("finds the peak in the optimizer step at small batches and in backward at large ones", () => {
    expect(peakPhase(plan, 1)).toBe(2); // 350 > 210
    expect(peakPhase(plan, 20)).toBe(1); // 400 > 350
    expect(allocationSizes(plan, 20)).toEqual([100, 200, 100]);
    expect(planTotals(plan, 1)).toEqual({ fixedBytes: 350, perSampleBytes: 0 });
    expect(planTotals(plan)).toEqual({ fixedBytes: 200, perSampleBytes: 10 });
    expect(bytesByCategory(plan, 1)).toMatchObject({ parameters: 100, gradients: 100, activations: 0, workspace: 150 });
  });

  it("replays the step as allocations and frees in phase order", () => {
    expect(allocationEvents(plan, 2)).toEqual([
      { kind: "alloc", tensor: 0, bytes: 100 },
      { kind: "alloc", tensor: 1, bytes: 20 },
      { kind: "alloc", tensor: 2, bytes: 100 },
      { kind: "free", tensor: 1 },
      { kind: "alloc", tensor: 3, bytes: 150 },
    ]);
  });

  it("treats a plan without phases as one phase in which everything is live", () => {
    const flat: MemoryPlan = { ...plan, phases: undefined, tensors: plan.tensors.map(({ firstPhase, lastPhase, ...t }) => t) };
    expect(phaseTotals(flat)).toEqual([{ fixedBytes: 350, perSampleBytes: 10 }]);
    expect(allocationEvents(flat, 1).every((e) => e.kind === "alloc")).toBe(true);
  });
});

// The optimizer step's temporaries by implementation (torch 2.x's torch/optim/adam.py and sgd.py), on the timeline.
import { describe, expect, it } from "vitest";
import { buildPlan } from "../../src/plan/buildPlan.js";
import { bytesByCategory, peakPhase, phasesOf } from "../../src/plan/memoryPlan.js";
import { optimizerTemporaries } from "../../src/plan/optimizerStep.js";
import { presetWorkload } from "../../src/workload/presets.js";
import { resolveWorkload } from "../../src/workload/resolveWorkload.js";

describe("optimizerTemporaries", () => {
  it("foreach Adam: one state-sized copy of every parameter (exp_avg_sq_sqrt); single-tensor: two of the largest tensor", () => {
    expect(optimizerTemporaries("adam", "foreach", 4)).toEqual([{ name: "optimizer.exp_avg_sq_sqrt", bytesPerParameter: 4, bytesPerLargestElement: 0 }]);
    expect(optimizerTemporaries("adamw", "single", 2)).toEqual([{ name: "optimizer.denom", bytesPerParameter: 0, bytesPerLargestElement: 4 }]);
  });
  it("SGD with or without momentum, fused Adam and bitsandbytes' 8-bit Adam update in place", () => {
    for (const impl of ["foreach", "single", "fused"] as const) {
      expect(optimizerTemporaries("sgd", impl, 4)).toEqual([]);
      expect(optimizerTemporaries("momentum", impl, 4)).toEqual([]);
    }
    expect(optimizerTemporaries("adam", "fused", 4)).toEqual([]);
    expect(optimizerTemporaries("adam8bit", "foreach", 4)).toEqual([]);
  });
});

describe("on the step's timeline", () => {
  const raw = resolveWorkload({ params: "1e9", perSample: "1MiB" });
  const at = (optimizer: "adam" | "sgd", optimizerImpl: "foreach" | "single" | "fused") => buildPlan(raw, { mode: "train", precision: "fp32", optimizer, optimizerImpl });

  it("live only in optimizer.step, with the weights, gradients and states, and no activations", () => {
    const plan = at("adam", "foreach");
    expect(phasesOf(plan)[peakPhase(plan, 1)]).toBe("optimizer.step");
    expect(bytesByCategory(plan, 1)).toMatchObject({ parameters: 4e9, gradients: 4e9, optimizerStates: 8e9, workspace: 4e9, activations: 0 });
  });

  it("a raw workload has no layers: a single-tensor optimizer's largest tensor is taken to be the whole model", () => {
    expect(bytesByCategory(at("adam", "single"), 1).workspace).toBe(8e9);
    expect(bytesByCategory(at("adam", "fused"), 1).workspace).toBe(0);
    // Without temporaries the peak is backward, where the per-sample bytes and the gradients meet.
    expect(phasesOf(at("sgd", "foreach"))[peakPhase(at("sgd", "foreach"), 1)]).toBe("backward model");
  });

  it("single-tensor Adam on VGG-16: the square root and the quotient of its largest weight, classifier.0's 25088 × 4096", () => {
    const plan = buildPlan(presetWorkload("vgg16")!, { mode: "train", precision: "fp32", optimizer: "adam", optimizerImpl: "single" });
    const temporaries = plan.tensors.filter((t) => t.name.startsWith("optimizer.denom"));
    expect(temporaries.map((t) => t.fixedBytes)).toEqual([25088 * 4096 * 4, 25088 * 4096 * 4]);
    expect(temporaries.every((t) => phasesOf(plan)[t.firstPhase!] === "optimizer.step" && t.lastPhase === t.firstPhase)).toBe(true);
  });

  it("foreach Adam on a CNN: one temporary per parameter tensor, as _foreach_sqrt makes them", () => {
    const plan = buildPlan(presetWorkload("vgg16")!, { mode: "train", precision: "fp32", optimizer: "adam" });
    const temporaries = plan.tensors.filter((t) => t.name.startsWith("optimizer.exp_avg_sq_sqrt"));
    expect(temporaries).toHaveLength(32); // 16 layers' weights and biases
    expect(temporaries.reduce((sum, t) => sum + t.fixedBytes, 0)).toBe(138_357_544 * 4);
  });
});

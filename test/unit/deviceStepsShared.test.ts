// Identical devices share the driver calls of one replay: deviceSteps answers the same question with the same steps, and another question with its own.
import { describe, expect, it } from "vitest";
import { deviceSteps } from "../../src/fit/allocator.js";
import { buildPlan } from "../../src/plan/buildPlan.js";
import { presetWorkload } from "../../src/workload/presets.js";

const GiB = 2 ** 30;

describe("deviceSteps", () => {
  it("replays a plan at a batch and capacity once for every device that asks, and each other capacity or batch on its own", () => {
    const plan = buildPlan(presetWorkload("resnet50")!, { mode: "train", precision: "fp32", optimizer: "momentum" });
    const first = deviceSteps(plan, 200, "pytorch", undefined, 30 * GiB);
    expect(deviceSteps(plan, 200, "pytorch", undefined, 30 * GiB)).toBe(first); // a second device of the same room
    const tighter = deviceSteps(plan, 200, "pytorch", undefined, 20 * GiB);
    expect(tighter).not.toBe(first);
    expect(deviceSteps(plan, 201, "pytorch", undefined, 30 * GiB)).not.toBe(first);
    // What is shared is what a fresh replay gives (a new plan object has no steps kept).
    const fresh = buildPlan(presetWorkload("resnet50")!, { mode: "train", precision: "fp32", optimizer: "momentum" });
    expect(deviceSteps(fresh, 200, "pytorch", undefined, 30 * GiB)).toEqual(first);
    expect(deviceSteps(fresh, 200, "pytorch", undefined, 20 * GiB)).toEqual(tighter);
  });
});

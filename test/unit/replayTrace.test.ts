// replayTrace (src/step/allocationTrace.ts) writes again only the tensors that scale with the batch: its bytes against allocationTrace's, made afresh at every batch.
import { describe, expect, it } from "vitest";
import { planMemory, resolveWorkload } from "../../src/index.js";
import type { MemoryPlan } from "../../src/plan/memoryPlan.js";
import { allocationTrace, replayTrace } from "../../src/step/allocationTrace.js";

/** Bytes as Object.is sees them (-0 and NaN kept apart), so the comparison tells -0 from 0. */
const exact = (bytes: Float64Array) => Array.from(bytes, (b) => (Object.is(b, -0) ? "-0" : String(b)));

/** replayTrace at each batch in turn, each against allocationTrace's bytes made from nothing. */
function checkSequence(plan: MemoryPlan, batches: readonly number[]): void {
  for (const batch of batches) {
    const replayed = replayTrace(plan, batch);
    const fresh = allocationTrace(plan, batch);
    expect(exact(replayed.bytes), `batch ${batch}`).toEqual(exact(fresh.bytes));
    expect(replayed.order).toEqual(fresh.order);
  }
}

describe("replayTrace", () => {
  it("gives a CNN's and a transformer's bytes at every batch a search tries, in any order", () => {
    for (const [model, setup] of [
      ["resnet18", { mode: "train", precision: "amp", optimizer: "adamw" }],
      ["gpt2", { mode: "train", precision: "amp", optimizer: "adamw", seq: 256 }],
    ] as const) {
      const plan = planMemory(resolveWorkload({ model }), setup);
      // Tensors that do not scale with the batch are most of a CNN's, and some of each.
      const scaling = plan.tensors.filter((t) => t.perSampleBytes !== 0).length;
      expect(scaling).toBeGreaterThan(0);
      expect(scaling).toBeLessThan(plan.tensors.length);
      checkSequence(plan, [1, 512, 256, 384, 385, 0, 7, 7, 2 ** 20, 3]);
    }
  });

  it("gives the same bytes across batches that are not finite, negative or fractional, and for -0 and NaN sizes", () => {
    const plan: MemoryPlan = {
      tensors: [
        { name: "a", category: "parameters", fixedBytes: 1024, perSampleBytes: 0 },
        { name: "b", category: "activations", fixedBytes: 0, perSampleBytes: 512 },
        { name: "c", category: "activations", fixedBytes: -0, perSampleBytes: 0 },
        { name: "d", category: "workspace", fixedBytes: 7, perSampleBytes: Number.NaN },
        { name: "e", category: "parameters", fixedBytes: 3, perSampleBytes: -0 },
      ],
    } as unknown as MemoryPlan;
    checkSequence(plan, [2, -1, 0.5, Number.POSITIVE_INFINITY, 4, Number.NaN, 5, -0, 6, Number.NEGATIVE_INFINITY, 1]);
  });
});

/**
 * The step's order as allocationTrace's doc states it, phase by phase, from the plan's fields
 * directly: first the frees of what the previous phase was the last to use (latest tensor first),
 * then the allocations of what the phase starts to use (in the order of `tensors`); a tensor live
 * to the step's end is never freed.
 */
function orderByPhase(plan: MemoryPlan): number[] {
  const phases = plan.phases !== undefined && plan.phases.length > 0 ? plan.phases.length : 1;
  const first = (t: MemoryPlan["tensors"][number]) => t.firstPhase ?? 0;
  const last = (t: MemoryPlan["tensors"][number]) => t.lastPhase ?? phases - 1;
  const order: number[] = [];
  for (let phase = 0; phase < phases; phase++) {
    if (phase > 0) for (let i = plan.tensors.length - 1; i >= 0; i--) if (last(plan.tensors[i]!) === phase - 1) order.push(~i);
    plan.tensors.forEach((t, i) => {
      if (first(t) === phase) order.push(i);
    });
  }
  return order;
}

describe("allocationTrace's order", () => {
  it("frees and allocates phase by phase as documented, for a CNN, a transformer and an inference plan", () => {
    for (const [model, setup] of [
      ["resnet18", { mode: "train", precision: "amp", optimizer: "adamw" }],
      ["gpt2", { mode: "train", precision: "amp", optimizer: "adamw", seq: 128 }],
      ["resnet50", { mode: "infer", precision: "fp16", optimizer: "sgd" }],
    ] as const) {
      const plan = planMemory(resolveWorkload({ model }), setup);
      const order = Array.from(allocationTrace(plan, 2).order);
      if (setup.mode === "train") expect(order.filter((k) => k < 0).length, model).toBeGreaterThan(0); // frees to order
      expect(order, model).toEqual(orderByPhase(plan));
    }
  });
});

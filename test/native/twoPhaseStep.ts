// The two-phase step the probe tests replay: forward holds a 50 MiB activation, backward a 60 MiB gradient.
// With no limit the caching allocator keeps the activation's segment cached and reserves 110 MiB; at 100 MiB
// or less its out-of-memory path gives that segment back before the gradient's, so the step needs 60 MiB live.
import type { MemoryPlan } from "../../src/plan/memoryPlan.js";
import { MiB } from "./simulator.js";

export const twoPhaseStep: MemoryPlan = {
  description: "two phases",
  parameterCount: 0,
  phases: ["forward", "backward"],
  tensors: [
    { name: "activation", category: "activations", fixedBytes: 50 * MiB, perSampleBytes: 0, lastPhase: 0 },
    { name: "gradient", category: "gradients", fixedBytes: 60 * MiB, perSampleBytes: 0, firstPhase: 1 },
  ],
};

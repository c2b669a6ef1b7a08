// Turns a workload and a run setup into the MemoryPlan that both evaluators use.
import { bytesPerParameter } from "./bytesPerParameter.js";
import type { MemoryPlan, PlannedTensor } from "./memoryPlan.js";
import type { RunSetup } from "./setup.js";
import type { AffineWorkload, Workload } from "../workload/workload.js";

export function buildPlan(workload: Workload, setup: RunSetup): MemoryPlan {
  switch (workload.kind) {
    case "affine":
      return affinePlan(workload, setup);
  }
}

/** Weights (and, when training, gradients and optimizer states) plus the user's affine bytes. */
function affinePlan(workload: AffineWorkload, setup: RunSetup): MemoryPlan {
  const perParameter = bytesPerParameter(setup.precision, setup.optimizer);
  const n = workload.parameterCount;
  const fixed = (name: string, category: PlannedTensor["category"], bytes: number): PlannedTensor => ({
    name,
    category,
    fixedBytes: bytes,
    perSampleBytes: 0,
  });
  const tensors: PlannedTensor[] = [fixed("parameters", "parameters", n * perParameter.parameters)];
  if (setup.mode === "train") {
    tensors.push(fixed("gradients", "gradients", n * perParameter.gradients));
    tensors.push(fixed("optimizer states", "optimizerStates", n * perParameter.optimizerStates));
  }
  tensors.push({ name: "per-sample", category: "activations", fixedBytes: 0, perSampleBytes: workload.perSampleBytes });
  tensors.push(fixed("fixed", "workspace", workload.fixedBytes));
  const training = setup.mode === "train" ? `, ${setup.optimizer}` : ", inference";
  return {
    description: `${n} parameters, ${setup.precision}${training}`,
    parameterCount: n,
    tensors: tensors.filter((t) => t.fixedBytes > 0 || t.perSampleBytes > 0),
  };
}

// Turns a workload and a run setup into the MemoryPlan that both evaluators use.
import { blasWorkspaceTensors } from "./blasWorkspace.js";
import { computeCapabilityOf } from "./computeCapability.js";
import { bytesPerParameter, shardBytes, zeroShards } from "./bytesPerParameter.js";
import { cnnPlan } from "./cnnPlan.js";
import { withCommunication } from "./dataParallel.js";
import { invalidArgument } from "../errors.js";
import type { MemoryPlan, PlannedTensor } from "./memoryPlan.js";
import { concatTensors } from "./tensorColumns.js";
import { hostStateTensors } from "./modelStates.js";
import { optimizerTemporaries } from "./optimizerStep.js";
import { TrainingPhases } from "./stepPhases.js";
import { offloads } from "./offload.js";
import { gradientsLiveAllStep } from "./stepSetup.js";
import { checkOffload, resolveSetup, type ResolvedSetup, type RunSetup } from "./setup.js";
import { transformerPlan } from "./transformerPlan.js";
import { unetPlan } from "./unetPlan.js";
import type { AffineWorkload, Workload } from "../workload/workload.js";

/**
 * The single entry point of the memory model. Throws `ERR_INVALID_ARGUMENT` when the setup does
 * not apply to the workload (`--seq` for a CNN, `--tp` not dividing the heads, …).
 */
export function buildPlan(workload: Workload, setup: RunSetup): MemoryPlan {
  checkOffload(setup);
  const resolved = resolveSetup(setup);
  return withCommunication(withBlasWorkspaces(modelPlan(workload, resolved), workload, resolved), resolved);
}

/**
 * A layered model's matmuls run on cuBLAS, whose workspaces PyTorch takes from its caching
 * allocator (src/plan/blasWorkspace.ts). A raw `--params` workload has no ops to say so: its
 * fixed bytes are the user's.
 */
function withBlasWorkspaces(plan: MemoryPlan, workload: Workload, setup: ResolvedSetup): MemoryPlan {
  if (workload.kind === "affine") return plan;
  // Listed first: taken at the first matmul, before the step's activations (and kept from the previous step).
  // concat, not a spread: a spread walks the list element by element through the iterator, slow in a
  // fresh process's cold code; concatTensors: the columns of the plan's tensors are copied, not read again.
  return { ...plan, tensors: concatTensors(blasWorkspaceTensors(computeCapabilityOf(setup), setup.mode === "train"), plan.tensors) };
}

function modelPlan(workload: Workload, resolved: ResolvedSetup): MemoryPlan {
  switch (workload.kind) {
    case "affine":
      return affinePlan(workload, resolved);
    case "transformer":
      return transformerPlan(workload, resolved);
    case "cnn":
      return cnnPlan(workload, resolved);
    case "unet":
      return unetPlan(workload, resolved);
  }
}

/**
 * Weights (and, when training, gradients and optimizer states, partitioned by ZeRO) plus the
 * user's affine bytes. A raw workload has no layers, so tensor parallelism does not apply, and
 * offloading moves whole states (no layer is gathered or bucketed: DeepSpeed's estimators' figures).
 * Training runs on the phases of one stage, `model`: the per-sample bytes live from its forward
 * to the end of its backward, the gradients from its backward to the optimizer step, whose
 * temporaries (src/plan/optimizerStep.ts) come last; with no layers known, a single-tensor
 * optimizer's largest tensor is taken to be the whole model.
 */
function affinePlan(workload: AffineWorkload, setup: ResolvedSetup): MemoryPlan {
  const n = workload.parameterCount;
  if (offloads(setup.offload).params) {
    throw invalidArgument("--offload", setup.offload, "optimizer (or none) for a raw workload: parameter offload streams layers, and --params has none");
  }
  const perParameter = bytesPerParameter(setup.precision, setup.optimizer);
  const shards = zeroShards(setup.mode === "train" ? setup.zeroStage : 0, setup.gpus);
  const fixed = (name: string, category: PlannedTensor["category"], bytes: number): PlannedTensor => ({
    name,
    category,
    fixedBytes: bytes,
    perSampleBytes: 0,
  });
  const training = setup.mode === "train";
  const step = training ? new TrainingPhases(["model"]) : undefined;
  const tensors: PlannedTensor[] = [fixed("parameters", "parameters", shardBytes(n * perParameter.parameters, shards.parameters))];
  const offloaded = training && offloads(setup.offload).optimizer;
  if (step !== undefined && !offloaded) {
    // Accumulated or zeroed-not-freed gradients are live the whole step (src/plan/stepSetup.ts).
    tensors.push({ ...fixed("gradients", "gradients", shardBytes(n * perParameter.gradients, shards.gradients)), ...(gradientsLiveAllStep(setup) ? {} : step.gradient(0)) });
    tensors.push(fixed("optimizer states", "optimizerStates", shardBytes(n * perParameter.optimizerStates, shards.optimizerStates)));
    const stateBytes = setup.precision === "fp16" || setup.precision === "bf16" ? 2 : 4;
    for (const t of optimizerTemporaries(setup.optimizer, setup.optimizerImpl, stateBytes)) {
      const bytes = shardBytes(n * t.bytesPerParameter, shards.optimizerStates) + n * t.bytesPerLargestElement;
      tensors.push({ ...fixed(t.name, "workspace", bytes), ...step.optimizerTemporary() });
    }
  }
  tensors.push({ name: "per-sample", category: "activations", fixedBytes: 0, perSampleBytes: workload.perSampleBytes, ...(step && step.saved(0)) });
  tensors.push(fixed("fixed", "workspace", workload.fixedBytes));
  const host = hostStateTensors([{ name: "model", count: n, tensorParallelCount: 0 }], setup);
  const run = setup.mode === "train" ? `, ${setup.optimizer}` : ", inference";
  const zero = setup.mode === "train" && setup.zeroStage > 0 ? `, ZeRO-${setup.zeroStage} over ${setup.gpus} GPUs` : "";
  const offload = setup.offload !== "none" ? `, offload ${setup.offload}` : "";
  return {
    description: `${n} parameters, ${setup.precision}${run}${zero}${offload}`,
    parameterCount: n,
    ...(step !== undefined && { phases: step.names }),
    tensors: tensors.filter((t) => t.fixedBytes > 0 || t.perSampleBytes > 0),
    ...(host !== undefined && { host }),
  };
}

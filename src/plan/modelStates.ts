// Weights, gradients and optimizer states as planned tensors, after tensor parallelism and ZeRO.
import { optimizerStates, shardBytes, weightBytes, zeroShards } from "./bytesPerParameter.js";
import type { PlannedTensor } from "./memoryPlan.js";
import type { ResolvedSetup } from "./setup.js";

/** A group of parameters allocated together (a layer, a block, the embeddings). */
export interface StateGroup {
  name: string;
  count: number;
  /** Of `count`, those tensor parallelism splits across `tp` ranks; the rest are replicated. */
  tensorParallelCount: number;
}

/** Parameters of a group held by one tensor-parallel rank. */
export function parametersPerRank(group: StateGroup, tp: number): number {
  return group.count - group.tensorParallelCount + Math.ceil(group.tensorParallelCount / tp);
}

/**
 * One tensor per group and kind: `<group>.weights`, and when training `<group>.grads` and
 * `<group>.optimizer.<state>` (torch.optim allocates each state per parameter tensor). ZeRO
 * partitions each over `gpus` ranks by stage; stage 3 also needs the largest group's weights
 * gathered while it runs (`zero3.gathered_weights`).
 */
export function modelStateTensors(groups: StateGroup[], setup: ResolvedSetup): PlannedTensor[] {
  const fixed = (name: string, category: PlannedTensor["category"], bytes: number): PlannedTensor => ({ name, category, fixedBytes: bytes, perSampleBytes: 0 });
  const weight = weightBytes(setup.precision);
  const training = setup.mode === "train";
  const shards = training ? zeroShards(setup.zeroStage, setup.gpus) : { parameters: 1, gradients: 1, optimizerStates: 1 };
  const states = training ? optimizerStates(setup.precision, setup.optimizer) : [];
  const tensors: PlannedTensor[] = [];
  let largestGroupBytes = 0;
  for (const group of groups) {
    const n = parametersPerRank(group, setup.tp);
    largestGroupBytes = Math.max(largestGroupBytes, n * weight);
    tensors.push(fixed(`${group.name}.weights`, "parameters", shardBytes(n * weight, shards.parameters)));
    if (!training) continue;
    tensors.push(fixed(`${group.name}.grads`, "gradients", shardBytes(n * weight, shards.gradients)));
    for (const state of states) {
      tensors.push(fixed(`${group.name}.optimizer.${state.name}`, "optimizerStates", shardBytes(n * state.bytesPerParameter, shards.optimizerStates)));
    }
  }
  if (training && shards.parameters > 1 && groups.length > 1) {
    tensors.push(fixed("zero3.gathered_weights", "workspace", largestGroupBytes));
  }
  return tensors;
}

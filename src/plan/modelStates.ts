// Weights, gradients and optimizer states as planned tensors, after tensor parallelism, ZeRO and offloading.
import { optimizerStates, shardBytes, weightBytes, zeroShards } from "./bytesPerParameter.js";
import type { HostPlan, PlannedTensor } from "./memoryPlan.js";
import { hostOptimizerStates, offloads } from "./offload.js";
import { ranksPerHost, type ResolvedSetup } from "./setup.js";

/** A group of parameters allocated together (a layer, a block, the embeddings). */
export interface StateGroup {
  name: string;
  count: number;
  /** Of `count`, those tensor parallelism splits across `tp` ranks; the rest are replicated. */
  tensorParallelCount: number;
  /** The stage of the step that runs it, when not `name` itself (`layers.3.lora` runs in `layers.3`). */
  stage?: string;
  /** A mixture of experts' FFNs (what expert parallelism shards). */
  experts?: boolean;
  /** Data-parallel ranks ZeRO partitions this group over, when not `--gpus` (experts under `--ep`: gpus / ep). */
  dataParallelRanks?: number;
  /** Frozen (a LoRA base model): weights only, no gradients or optimizer states. */
  frozen?: boolean;
  /** The whole group's weight bytes when not `count` × the precision's (quantized weights, src/plan/quantization.ts). */
  weightBytes?: number;
}

/** Bytes of a group's weights on one tensor-parallel rank: quantized groups keep their bytes per parameter. */
function weightBytesPerRank(group: StateGroup, perRank: number, weight: number): number {
  if (group.weightBytes === undefined || group.count === 0) return perRank * weight;
  return Math.ceil((group.weightBytes * perRank) / group.count);
}

/** Parameters of a group held by one tensor-parallel rank. */
export function parametersPerRank(group: StateGroup, tp: number): number {
  return group.count - group.tensorParallelCount + Math.ceil(group.tensorParallelCount / tp);
}

function fixed(name: string, category: PlannedTensor["category"], bytes: number): PlannedTensor {
  return { name, category, fixedBytes: bytes, perSampleBytes: 0 };
}

function shardsOf(setup: ResolvedSetup, group?: StateGroup): ReturnType<typeof zeroShards> {
  return setup.mode === "train" ? zeroShards(setup.zeroStage, group?.dataParallelRanks ?? setup.gpus) : { parameters: 1, gradients: 1, optimizerStates: 1 };
}

/**
 * One tensor per group and kind: `<group>.weights`, and when training `<group>.grads` and
 * `<group>.optimizer.<state>` (torch.optim allocates each state per parameter tensor). ZeRO
 * partitions each over `gpus` ranks by stage. What `--offload` moves to the host is left out
 * here (hostStateTensors has it). Working buffers of a layered model:
 * - `zero3.gathered_weights` (stage 3) / `offload.gathered_weights` (inference with offloaded
 *   parameters): the largest group's weights, gathered while it runs;
 * - `gradient_bucket`: when gradients are partitioned (stage ≥ 2) or offloaded, the largest
 *   group's full gradients exist on the GPU before they are reduce-scattered or copied out.
 * With both, ZeRO-3 holds DeepSpeed's `largest_layer_memory = 4 × largest_layer_params`.
 */
export function modelStateTensors(groups: StateGroup[], setup: ResolvedSetup): PlannedTensor[] {
  const weight = weightBytes(setup.precision);
  const training = setup.mode === "train";
  const offload = offloads(setup.offload);
  const shards = shardsOf(setup);
  const states = training ? optimizerStates(setup.precision, setup.optimizer) : [];
  const tensors: PlannedTensor[] = [];
  let largestGroup = 0;
  let largestTrainable = 0;
  for (const group of groups) {
    const n = parametersPerRank(group, setup.tp);
    largestGroup = Math.max(largestGroup, n);
    const groupShards = shardsOf(setup, group);
    if (!offload.params) tensors.push(fixed(`${group.name}.weights`, "parameters", shardBytes(weightBytesPerRank(group, n, weight), groupShards.parameters)));
    if (!group.frozen) largestTrainable = Math.max(largestTrainable, n);
    if (!training || offload.optimizer || group.frozen) continue;
    tensors.push(fixed(`${group.name}.grads`, "gradients", shardBytes(n * weight, groupShards.gradients)));
    for (const state of states) {
      tensors.push(fixed(`${group.name}.optimizer.${state.name}`, "optimizerStates", shardBytes(n * state.bytesPerParameter, groupShards.optimizerStates)));
    }
  }
  if (groups.length > 1) {
    if (shards.parameters > 1 || offload.params) {
      tensors.push(fixed(training ? "zero3.gathered_weights" : "offload.gathered_weights", "workspace", largestGroup * weight));
    }
    if (training && (shards.gradients > 1 || offload.optimizer) && largestTrainable > 0) {
      tensors.push(fixed("gradient_bucket", "gradients", largestTrainable * weight));
    }
  }
  return tensors;
}

/**
 * The host side of `--offload`, one rank's share (src/plan/offload.ts): under optimizer offload
 * each group's gradients, optimizer states and master weights (`hostOptimizerStates`), partitioned
 * by ZeRO like the optimizer states; under parameter offload each group's weights, partitioned as
 * on the GPU (stage 3; whole for inference). Undefined when nothing is offloaded.
 */
export function hostStateTensors(groups: StateGroup[], setup: ResolvedSetup): HostPlan | undefined {
  const offload = offloads(setup.offload);
  const training = setup.mode === "train";
  if (!offload.params && !(offload.optimizer && training)) return undefined;
  const weight = weightBytes(setup.precision);
  const states = offload.optimizer && training ? hostOptimizerStates(setup.precision, setup.optimizer) : [];
  const tensors: PlannedTensor[] = [];
  for (const group of groups) {
    const n = parametersPerRank(group, setup.tp);
    const groupShards = shardsOf(setup, group);
    if (offload.params) tensors.push(fixed(`${group.name}.weights`, "parameters", shardBytes(weightBytesPerRank(group, n, weight), groupShards.parameters)));
    if (group.frozen) continue;
    for (const state of states) {
      tensors.push(fixed(`${group.name}.${state.category === "gradients" ? "" : "optimizer."}${state.name}`, state.category, shardBytes(n * state.bytesPerParameter, groupShards.optimizerStates)));
    }
  }
  return { tensors: tensors.filter((t) => t.fixedBytes > 0), ranks: ranksPerHost(setup) };
}

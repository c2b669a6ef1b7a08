// Weights, gradients and optimizer states as planned tensors, after tensor parallelism, ZeRO and offloading.
import { autocastLayout } from "./autocast.js";
import { NameTable, NumberedNames } from "./nameTable.js";
import { optimizerStates, shardBytes, weightBytes, zeroShards } from "./bytesPerParameter.js";
import type { HostPlan, PlannedTensor } from "./memoryPlan.js";
import { hostOptimizerStates, offloads } from "./offload.js";
import { optimizerTemporaries } from "./optimizerStep.js";
import { ranksPerHost, type ResolvedSetup } from "./setup.js";
import { gradientsLiveAllStep } from "./stepSetup.js";
import type { TrainingPhases } from "./stepPhases.js";

/** Where the model states sit on a training step's timeline. */
export interface StateTimeline {
  phases: TrainingPhases;
  /** The phase in which each group's gradients are first produced (the backward of its last op). */
  gradientStarts: Map<string, number>;
  /**
   * Per group, when known: each op's parameters (elements, in the group's tensor order) and the
   * backward that makes their gradients. A group listing its tensors then starts each tensor's
   * gradient there instead of at the group's first backward.
   */
  parameterGradientStarts?: Map<string, { phase: number; parameters: number }[]>;
  /** Elements of the largest parameter tensor on one rank (single-tensor optimizers' temporaries). */
  largestTensorElements: number;
}

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
  /** Kept in fp32 whatever the precision (PEFT's adapters on a 16-bit model): fp32 weights, gradients and states. */
  fp32?: boolean;
  /** The whole group's weight bytes when not `count` × the precision's (quantized weights, src/plan/quantization.ts). */
  weightBytes?: number;
  /**
   * Elements of each parameter tensor (summing to `count`), when known: torch.optim allocates
   * gradients, states and temporaries per tensor, each rounded by the allocator on its own, so a
   * training step without ZeRO, tensor parallelism or quantization plans the group's states per tensor.
   */
  tensors?: number[];
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

/**
 * A group's state of one kind (`weights`, `grads`, `optimizer.exp_avg`, …) as planned tensors:
 * one per parameter tensor when the group lists them and nothing splits them (named `<group>.<kind>`
 * then `<group>.<kind>.1`, …), else one for the group.
 */
function stateTensors(group: StateGroup, kind: string, category: PlannedTensor["category"], bytesPerParameter: number, total: number, whole: boolean): PlannedTensor[] {
  const name = DOTTED.get(group.name, kind);
  if (!whole || group.tensors === undefined || group.tensors.length <= 1) return [fixed(name, category, total)];
  const names = NUMBERED.get(name, group.tensors.length);
  return group.tensors.map((elements, i) => fixed(names[i]!, category, elements * bytesPerParameter));
}

/**
 * `a.b`: the states' names (`layers.3.attn.optimizer.exp_avg.2`), shared by every plan of the model
 * (src/plan/nameTable.ts): a training plan names a state per parameter tensor, GPT-3's thousands.
 */
const DOTTED = new NameTable<string, string | number>((a, b) => `${a}.${b}`);
/** `<state>`, `<state>.1`, …: the per-tensor names of one state (stateTensors). */
const NUMBERED = new NumberedNames();

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
 *
 * Under torch.cuda.amp's layout (src/plan/autocast.ts) the weights, gradients and states are fp32's.
 *
 * On a training step's timeline (`step`): weights and optimizer states live throughout; a group's
 * gradients from the backward that first produces them to `optimizer.step` (zero_grad sets them
 * to None); the optimizer's temporaries (src/plan/optimizerStep.ts) in `optimizer.step` only.
 * Without `step` every tensor is live throughout.
 */
export function modelStateTensors(groups: readonly StateGroup[], setup: ResolvedSetup, step?: StateTimeline): PlannedTensor[] {
  // torch.cuda.amp (src/plan/autocast.ts) keeps fp32's model states; its 16-bit copies are on the step's tape.
  const stored = autocastLayout(setup) ? "fp32" : setup.precision;
  const storedWeight = weightBytes(stored);
  const training = setup.mode === "train";
  const offload = offloads(setup.offload);
  const shards = shardsOf(setup);
  const modelStates = training ? optimizerStates(stored, setup.optimizer) : [];
  const tensors: PlannedTensor[] = [];
  let largestGroup = 0;
  let largestTrainable = 0;
  // Gradients summed over micro-batches (--grad-accum N) or zeroed rather than freed
  // (`zero_grad(set_to_none=False)`, --zero-grad zeros) are live the whole step: the micro-batches
  // after the first run their forward and backward beside them.
  const kept = gradientsLiveAllStep(setup);
  // Index loops: a fresh process runs these cold, where each for-of step allocates (GPT-3: 98 groups × 4 kinds per plan).
  for (let g = 0; g < groups.length; g++) {
    const group = groups[g]!;
    const n = parametersPerRank(group, setup.tp);
    largestGroup = Math.max(largestGroup, n);
    const weight = group.fp32 ? 4 : storedWeight;
    const states = !training ? [] : group.fp32 ? optimizerStates("fp32", setup.optimizer) : modelStates;
    const groupShards = shardsOf(setup, group);
    // Expert parallelism shards a group by experts, not by its tensors: it stays one allocation.
    const perTensor = step !== undefined && setup.tp === 1 && group.weightBytes === undefined && !group.experts;
    if (!offload.params) tensors.push(...stateTensors(group, "weights", "parameters", weight, shardBytes(weightBytesPerRank(group, n, weight), groupShards.parameters), perTensor && groupShards.parameters === 1));
    if (!group.frozen) largestTrainable = Math.max(largestTrainable, n);
    if (!training || offload.optimizer || group.frozen) continue;
    const gradientTensors = stateTensors(group, "grads", "gradients", weight, shardBytes(n * weight, groupShards.gradients), perTensor && groupShards.gradients === 1);
    const tensorStarts = step !== undefined && gradientTensors.length > 1 ? tensorGradientStarts(group, step.parameterGradientStarts?.get(group.stage ?? group.name)) : undefined;
    for (let k = 0; k < gradientTensors.length; k++) {
      const grads = gradientTensors[k]!;
      if (step !== undefined) {
        const produced = tensorStarts?.[k] ?? step.gradientStarts.get(group.stage ?? group.name) ?? step.phases.backward(0);
        if (kept) {
          // Already there when backward makes this micro-batch's gradient: autograd's AccumulateGrad
          // adds the new one in place (`variable_grad += new_grad`, torch/csrc/autograd/functions/
          // accumulate_grad.h), so both exist while that parameter's backward runs.
          tensors.push({ ...grads, name: `${grads.name}.incoming`, category: "workspace", firstPhase: produced, lastPhase: produced });
        } else {
          // Made whole, not given its range afterwards: one shape for every tensor of the kind.
          tensors.push({ name: grads.name, category: grads.category, fixedBytes: grads.fixedBytes, perSampleBytes: grads.perSampleBytes, firstPhase: produced, lastPhase: step.phases.optimizerStep });
          continue;
        }
      }
      tensors.push(grads);
    }
    for (let k = 0; k < states.length; k++) {
      const state = states[k]!;
      tensors.push(...stateTensors(group, DOTTED.get("optimizer", state.name), "optimizerStates", state.bytesPerParameter, shardBytes(n * state.bytesPerParameter, groupShards.optimizerStates), perTensor && groupShards.optimizerStates === 1));
    }
  }
  if (training && !offload.optimizer && step !== undefined) {
    // Over what the optimizer steps: trainable parameters only (a LoRA model's adapters, fp32 ones on a 16-bit model).
    const trainable = groups.filter((g) => !g.frozen);
    const fp32 = trainable.length > 0 && trainable.every((g) => g.fp32);
    const stateBytes = (fp32 ? optimizerStates("fp32", setup.optimizer) : modelStates).find((x) => x.name !== "master")?.bytesPerParameter ?? (fp32 ? 4 : storedWeight);
    const perTensor = setup.tp === 1 && shards.optimizerStates === 1 && trainable.every((g) => g.tensors !== undefined && !g.experts);
    const during = { firstPhase: step.phases.optimizerStep, lastPhase: step.phases.optimizerStep };
    const phase = step.phases.optimizerStep;
    for (const t of optimizerTemporaries(setup.optimizer, setup.optimizerImpl, stateBytes)) {
      if (perTensor && t.bytesPerParameter > 0) {
        // foreach: one new tensor per parameter tensor (thousands for a deep model: a literal, not spreads).
        for (const g of trainable) {
          const name = DOTTED.get(t.name, g.name);
          g.tensors!.forEach((elements, i) =>
            tensors.push({ name: DOTTED.get(name, i), category: "workspace", fixedBytes: elements * t.bytesPerParameter, perSampleBytes: 0, firstPhase: phase, lastPhase: phase }),
          );
        }
      } else if (t.bytesPerParameter > 0) {
        // One per group (a layer's tensors together): the sizes the caching allocator sees, at the cost of
        // a layer's rounding; a deep model's plan stays small enough to replay quickly.
        for (const g of trainable) {
          const bytes = shardBytes(parametersPerRank(g, setup.tp), shardsOf(setup, g).optimizerStates) * t.bytesPerParameter;
          tensors.push({ ...fixed(`${t.name}.${g.name}`, "workspace", bytes), ...during });
        }
      }
      if (t.bytesPerLargestElement > 0) {
        // single-tensor: the square root and the quotient of the largest tensor, two allocations.
        const largest = Math.min(step.largestTensorElements, largestTrainable);
        for (const part of ["sqrt", "quotient"]) tensors.push({ ...fixed(`${t.name}.${part}`, "workspace", (largest * t.bytesPerLargestElement) / 2), ...during });
      }
    }
  }
  if (groups.length > 1) {
    if (shards.parameters > 1 || offload.params) {
      tensors.push(fixed(training ? "zero3.gathered_weights" : "offload.gathered_weights", "workspace", largestGroup * storedWeight));
    }
    if (training && (shards.gradients > 1 || offload.optimizer) && largestTrainable > 0) {
      tensors.push(fixed("gradient_bucket", "gradients", largestTrainable * storedWeight));
    }
  }
  return tensors;
}

/**
 * Each of a group's tensors' gradient start: the backward of the op whose parameters it is among
 * (ops in forward order, their parameters in the group's tensor order); undefined when the ops do
 * not account for the group's tensors exactly.
 */
function tensorGradientStarts(group: StateGroup, ops: { phase: number; parameters: number }[] | undefined): number[] | undefined {
  if (ops === undefined || group.tensors === undefined) return undefined;
  const starts: number[] = [];
  let t = 0;
  for (const op of ops) {
    let left = op.parameters;
    while (left > 0 && t < group.tensors.length) {
      left -= group.tensors[t]!;
      starts.push(op.phase);
      t++;
    }
    if (left !== 0) return undefined;
  }
  return t === group.tensors.length ? starts : undefined;
}

/**
 * The host side of `--offload`, one rank's share (src/plan/offload.ts): under optimizer offload
 * each group's gradients, optimizer states and master weights (`hostOptimizerStates`), partitioned
 * by ZeRO like the optimizer states; under parameter offload each group's weights, partitioned as
 * on the GPU (stage 3; whole for inference). Undefined when nothing is offloaded.
 */
export function hostStateTensors(groups: readonly StateGroup[], setup: ResolvedSetup): HostPlan | undefined {
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
